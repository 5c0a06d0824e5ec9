/**
 * Looking at a file without opening it — `stat`, `lstat`, `exists`, `access` for existence — on a
 * descriptor the CLI confirmed (`O_PATH`), so a path swapped after its check shows nothing out of
 * the grants.
 */
import fs from "node:fs";
import { PermissionDeniedError } from "../../permissions.ts";
import { type AnyFunction, type Broker, replace, type Target } from "./context.ts";
import type { FileArgs } from "./fs-args.ts";
import type { ConfirmedOpens, Opening } from "./fs-confirmed.ts";
import {
  closeSyncOriginal,
  FS_CONSTANTS,
  fstatOriginal,
  fstatSyncOriginal,
  nextTick,
  O_PATH,
  openOriginal,
  openSyncOriginal,
  promisesOpenOriginal,
} from "./originals.ts";

/** Installs the confirmed looks, under a file restriction on Linux. */
export function hookConfirmedStats(broker: Broker, files: FileArgs, opens: ConfirmedOpens): void {
  const { hold, options } = broker;
  const { checkArg, checkExists, learnFileHandle } = files;
  const { refusalOf } = opens;
  const fsTarget = fs as unknown as Target;
  const promisesTarget = fs.promises as unknown as Target;
  // `stat`, `lstat`, `exists` and `access` for existence (sync, callback, promise) look at what a
  // descriptor the broker opened and the CLI confirmed names, as the opens (fs-confirmed.ts):
  // `O_PATH` (Linux; no access to the file itself needed, as for stat(2)), with `O_NOFOLLOW` for
  // `lstat` (the descriptor is then the link's own), then `fstat`. A directory swapped on the path
  // after the check shows nothing out of the grants (`exists` answers false). Errors read as the
  // call's (`stat '…'`, not `open '…'`). Under a file restriction on Linux only: elsewhere every
  // file may be looked at. `access` for a mode, `readdir`, `opendir` and the rest: made by the CLI
  // (fs-via-cli.ts).
  if (options.fsRestricted && process.platform === "linux") {
    const looking: Opening = { flag: undefined, mode: undefined, read: true, write: false };
    /** An `open` error made the `syscall`'s: its name and message. */
    const asCall = (error: unknown, syscall: string): unknown => {
      const e = error as NodeJS.ErrnoException;
      if (e?.syscall !== "open") return error;
      e.syscall = syscall;
      e.message = e.message.replace(", open '", `, ${syscall} '`);
      return error;
    };
    for (const [name, flags] of [
      ["stat", O_PATH],
      ["lstat", O_PATH | FS_CONSTANTS.O_NOFOLLOW],
    ] as const) {
      replace(
        fsTarget,
        `${name}Sync`,
        (original) =>
          function (this: unknown, ...a: unknown[]) {
            checkArg(a, 0, "Read");
            if (typeof a[0] !== "string") return Reflect.apply(original, this, a);
            const o = a[1] as { bigint?: boolean; throwIfNoEntry?: boolean } | undefined;
            let fd: number;
            try {
              fd = openSyncOriginal(a[0], flags);
            } catch (error) {
              if (o?.throwIfNoEntry === false && (error as NodeJS.ErrnoException).code === "ENOENT")
                return undefined;
              throw asCall(error, name);
            }
            try {
              const refusal = refusalOf(fd, looking);
              if (refusal) throw refusal;
              return fstatSyncOriginal(fd, { bigint: o?.bigint === true });
            } finally {
              closeSyncOriginal(fd);
            }
          },
      );
      replace(
        fsTarget,
        name,
        (original) =>
          function (this: unknown, ...a: unknown[]) {
            checkArg(a, 0, "Read");
            const callback = a[a.length - 1];
            if (typeof a[0] !== "string" || typeof callback !== "function")
              return Reflect.apply(original, this, a);
            const o = a.length > 2 ? (a[1] as { bigint?: boolean } | undefined) : undefined;
            openOriginal(a[0], flags, (error, fd) => {
              if (error) return (callback as AnyFunction)(asCall(error, name));
              const refusal = refusalOf(fd, looking);
              if (refusal) {
                closeSyncOriginal(fd);
                return (callback as AnyFunction)(refusal);
              }
              const release = hold(fd);
              fstatOriginal(fd, { bigint: o?.bigint === true }, (statError, stats) => {
                closeSyncOriginal(fd);
                release();
                (callback as AnyFunction)(statError, stats);
              });
            });
          },
      );
      replace(
        promisesTarget,
        name,
        (original) =>
          async function (this: unknown, ...a: unknown[]) {
            checkArg(a, 0, "Read");
            if (typeof a[0] !== "string") return Reflect.apply(original, this, a);
            const o = a[1] as { bigint?: boolean } | undefined;
            const handle = await promisesOpenOriginal(a[0], flags).catch((error: unknown) => {
              throw asCall(error, name);
            });
            learnFileHandle(handle);
            try {
              const refusal = refusalOf(handle.fd, looking);
              if (refusal) throw refusal;
              return await handle.stat({ bigint: o?.bigint === true });
            } finally {
              await handle.close();
            }
          },
      );
    }
    // `access` for existence (`F_OK`, the default) the same way; a mode that asks for more is made
    // by the CLI (fs-via-cli.ts).
    const existenceOnly = (mode: unknown) => mode === undefined || mode === FS_CONSTANTS.F_OK;
    /** Opens `path` with `O_PATH` and has the CLI confirm it (an error reads as `access`'s). */
    const confirmPath = (path: string): void => {
      let fd: number;
      try {
        fd = openSyncOriginal(path, O_PATH);
      } catch (error) {
        throw asCall(error, "access");
      }
      try {
        const refusal = refusalOf(fd, looking);
        if (refusal) throw refusal;
      } finally {
        closeSyncOriginal(fd);
      }
    };
    replace(
      fsTarget,
      "accessSync",
      (original) =>
        function accessSync(this: unknown, ...a: unknown[]) {
          if (!existenceOnly(a[1])) return Reflect.apply(original, this, a);
          checkArg(a, 0, "Read");
          if (typeof a[0] !== "string") return Reflect.apply(original, this, a);
          confirmPath(a[0]);
        },
    );
    replace(
      fsTarget,
      "access",
      (original) =>
        function access(this: unknown, ...a: unknown[]) {
          const callback = a[a.length - 1];
          if (typeof callback !== "function" || !existenceOnly(a.length > 2 ? a[1] : undefined))
            return Reflect.apply(original, this, a);
          checkArg(a, 0, "Read");
          const path = a[0];
          if (typeof path !== "string") return Reflect.apply(original, this, a);
          openOriginal(path, O_PATH, (error, fd) => {
            if (error) return (callback as AnyFunction)(asCall(error, "access"));
            const refusal = refusalOf(fd, looking);
            closeSyncOriginal(fd);
            (callback as AnyFunction)(refusal ?? null);
          });
        },
    );
    replace(
      promisesTarget,
      "access",
      (original) =>
        async function access(this: unknown, ...a: unknown[]) {
          if (!existenceOnly(a[1])) return Reflect.apply(original, this, a);
          checkArg(a, 0, "Read");
          if (typeof a[0] !== "string") return Reflect.apply(original, this, a);
          const handle = await promisesOpenOriginal(a[0], O_PATH).catch((error: unknown) => {
            throw asCall(error, "access");
          });
          learnFileHandle(handle);
          try {
            const refusal = refusalOf(handle.fd, looking);
            if (refusal) throw refusal;
          } finally {
            await handle.close();
          }
        },
    );
    // `exists` the same way: what a confirmed descriptor names (false for what is out of the grants).
    const existsConfirmed = (fd: number): boolean => {
      try {
        return refusalOf(fd, looking) === undefined;
      } finally {
        closeSyncOriginal(fd);
      }
    };
    replace(
      fsTarget,
      "existsSync",
      () =>
        function existsSync(...a: unknown[]) {
          try {
            checkExists(a);
          } catch (error) {
            if (error instanceof PermissionDeniedError) return false;
            throw error;
          }
          if (typeof a[0] !== "string") return false;
          let fd: number;
          try {
            fd = openSyncOriginal(a[0], O_PATH);
          } catch {
            return false;
          }
          return existsConfirmed(fd);
        },
    );
    replace(
      fsTarget,
      "exists",
      (original) =>
        function exists(this: unknown, ...a: unknown[]) {
          const callback = a.at(-1);
          if (typeof callback !== "function") return Reflect.apply(original, this, a);
          const answer = (value: boolean) => nextTick(callback as AnyFunction, value);
          try {
            checkExists(a);
          } catch (error) {
            if (error instanceof PermissionDeniedError) return answer(false);
            throw error;
          }
          if (typeof a[0] !== "string") return answer(false);
          openOriginal(a[0], O_PATH, (error, fd) => answer(!error && existsConfirmed(fd)));
        },
    );
  }
}
