/**
 * What was opened is what was checked.
 *
 * A path names what it names when it is checked: tool code can swap a directory or a link on it
 * before Node opens it (an asynchronous open waits for libuv's pool, which tool code can keep
 * busy). So the broker opens the file itself and checks the descriptor once more: the CLI reads
 * what it really is (`/proc/<host>/fd/<n>`) and decides on that path; one out of the grants is
 * closed and refused. Truncation waits for that answer (the file is opened without `O_TRUNC`), so
 * a refused open has read, written and truncated nothing — at most it made an empty file where a
 * swapped link pointed. `open` (every kind), `readFile`, `writeFile`, `appendFile` and the streams
 * (which open through `fs.open`) take this way; the other path calls, fs-stat.ts, fs-copy.ts and
 * fs-via-cli.ts.
 */
import fs from "node:fs";
import { type PermissionAction, PermissionDeniedError } from "../../permissions.ts";
import { type AnyFunction, allows, type Broker, replace, type Target } from "./context.ts";
import type { FileArgs } from "./fs-args.ts";
import {
  closeSyncOriginal,
  FS_CONSTANTS,
  fstatSyncOriginal,
  ftruncateSyncOriginal,
  openOriginal,
  openSyncOriginal,
  promisesOpenOriginal,
} from "./originals.ts";

/**
 * Whether a stat's `mode` is a regular file's — read from the number, not `Stats#isFile`, which
 * tool code can redefine (it would decide whether a confirmed open is truncated).
 */
const isRegularFile = (mode: number): boolean => (mode & FS_CONSTANTS.S_IFMT) === FS_CONSTANTS.S_IFREG;

/** How a call opens its file: the flag and mode, and whether it reads and whether it writes. */
export interface Opening {
  flag: unknown;
  mode: unknown;
  read: boolean;
  write: boolean;
}

/** Opening a file and having the CLI confirm what the descriptor really is. */
export interface ConfirmedOpens {
  /** The refusal of what `fd` really is, if it is out of the grants (nothing to ask when unrestricted). */
  refusalOf: (fd: number, opening: Opening) => PermissionDeniedError | undefined;
  openConfirmedSync: (path: string, opening: Opening) => number;
  openConfirmed: (path: string, opening: Opening, done: (error: unknown, fd?: number) => void) => void;
  openConfirmedHandle: (path: string, opening: Opening) => Promise<fs.promises.FileHandle>;
}

/** The confirmed opens of one install (they patch nothing). */
export function createConfirmedOpens(broker: Broker, files: FileArgs): ConfirmedOpens {
  const { ask, options } = broker;
  const { learnFileHandle } = files;
  const refusalOf = (fd: number, opening: Opening): PermissionDeniedError | undefined => {
    if (!options.noWorkers) return undefined;
    const actions: PermissionAction[] = [];
    if (opening.read) actions.push("Read");
    if (opening.write) actions.push("Write");
    for (const action of actions) {
      const answer = ask("FileSystem", action, `fd:${fd}`, { fd, peek: true });
      if (!allows(answer)) return new PermissionDeniedError("FileSystem", action, answer.r);
    }
    return undefined;
  };
  /** `flags` without `O_TRUNC`, and whether it was there (Node's `w` family names it). */
  const deferTruncation = (flags: unknown): [unknown, boolean] => {
    const c = FS_CONSTANTS;
    if (typeof flags === "number") return [flags & ~c.O_TRUNC, (flags & c.O_TRUNC) !== 0];
    const w = typeof flags === "string" ? /^(?:w|(wx|xw))(\+?)$/.exec(flags) : null;
    if (!w) return [flags, false];
    return [c.O_CREAT | (w[1] ? c.O_EXCL : 0) | (w[2] ? c.O_RDWR : c.O_WRONLY), true];
  };
  /**
   * Confirms a descriptor just opened (truncating it if asked: as `O_TRUNC` would, only a regular
   * file — a FIFO or a device ignores it), or closes it and throws.
   */
  const confirmed = (fd: number, opening: Opening, truncate: boolean): number => {
    try {
      const refusal = refusalOf(fd, opening);
      if (refusal) throw refusal;
      if (truncate && isRegularFile(fstatSyncOriginal(fd).mode)) ftruncateSyncOriginal(fd, 0);
      return fd;
    } catch (error) {
      closeSyncOriginal(fd);
      throw error;
    }
  };
  const openConfirmedSync = (path: string, opening: Opening): number => {
    const [flags, truncate] = deferTruncation(opening.flag);
    return confirmed(
      openSyncOriginal(path, flags as fs.OpenMode, opening.mode as fs.Mode),
      opening,
      truncate,
    );
  };
  const openConfirmed = (path: string, opening: Opening, done: (error: unknown, fd?: number) => void) => {
    const [flags, truncate] = deferTruncation(opening.flag);
    openOriginal(path, flags as fs.OpenMode, opening.mode as fs.Mode, (error, fd) => {
      if (error) return done(error);
      let checked: number;
      try {
        checked = confirmed(fd, opening, truncate);
      } catch (refusal) {
        return done(refusal);
      }
      done(null, checked);
    });
  };
  type Handle = fs.promises.FileHandle;
  const openConfirmedHandle = async (path: string, opening: Opening): Promise<Handle> => {
    const [flags, truncate] = deferTruncation(opening.flag);
    const handle = await promisesOpenOriginal(path, flags as fs.OpenMode, opening.mode as fs.Mode);
    learnFileHandle(handle);
    try {
      const refusal = refusalOf(handle.fd, opening);
      if (refusal) throw refusal;
      if (truncate && isRegularFile((await handle.stat()).mode)) await handle.truncate(0);
      return handle;
    } catch (error) {
      await handle.close();
      throw error;
    }
  };
  return { refusalOf, openConfirmedSync, openConfirmed, openConfirmedHandle };
}

/** Installs the confirmed `open` (every kind) and `readFile`, `writeFile`, `appendFile`. */
export function hookConfirmedOpens(broker: Broker, files: FileArgs, opens: ConfirmedOpens): void {
  const { hold } = broker;
  const { checkArg, isWriteFlag, checkReadFile, checkWrite, learnFileHandle } = files;
  const { openConfirmedSync, openConfirmed, openConfirmedHandle } = opens;
  const fsTarget = fs as unknown as Target;
  /** An `open`'s checks: `fs.open(path, callback)` has no flags (the callback's text is not one). */
  const openFlags = (a: unknown[]) => (typeof a[1] === "function" ? undefined : a[1]);
  const checkOpen = (a: unknown[]) => {
    checkArg(a, 0, "Read");
    if (isWriteFlag(openFlags(a))) checkArg(a, 0, "Write");
  };
  const openingOf = (a: unknown[]): Opening => {
    const flag = openFlags(a);
    const mode = typeof a[2] === "function" ? undefined : a[2];
    return { flag, mode, read: true, write: isWriteFlag(flag) };
  };
  const promisesTarget = fs.promises as unknown as Target;
  replace(
    fsTarget,
    "openSync",
    (original) =>
      function openSync(this: unknown, ...a: unknown[]) {
        checkOpen(a);
        return typeof a[0] === "string"
          ? openConfirmedSync(a[0], openingOf(a))
          : Reflect.apply(original, this, a);
      },
  );
  replace(
    fsTarget,
    "open",
    (original) =>
      function open(this: unknown, ...a: unknown[]) {
        checkOpen(a);
        const callback = a[a.length - 1];
        if (typeof a[0] !== "string" || typeof callback !== "function")
          return Reflect.apply(original, this, a);
        openConfirmed(a[0], openingOf(a), callback as AnyFunction);
      },
  );
  replace(
    promisesTarget,
    "open",
    (original) =>
      function open(this: unknown, ...a: unknown[]) {
        checkOpen(a);
        return typeof a[0] === "string"
          ? openConfirmedHandle(a[0], openingOf(a))
          : (Reflect.apply(original, this, a) as Promise<object>).then(learnFileHandle);
      },
  );
  /**
   * The flag and mode of a file call's options (read once: the call gets the rest) and what it
   * does: `readFile` reads (and writes with a flag that does), `writeFile`/`appendFile` write.
   */
  const openingFrom = (a: unknown[], at: number, defaultFlag: string, reads: boolean): Opening => {
    let flag: unknown = defaultFlag;
    let mode: unknown;
    const o = a[at];
    if (typeof o === "object" && o !== null) {
      const { flag: given, mode: givenMode, ...rest } = o as Record<string, unknown>;
      a[at] = rest;
      flag = given ?? defaultFlag;
      mode = givenMode;
    }
    return { flag, mode, read: reads, write: !reads || isWriteFlag(flag) };
  };
  const CONTENT_CALLS: [string, (a: unknown[]) => void, number, string, boolean][] = [
    ["readFile", checkReadFile, 1, "r", true],
    ["writeFile", checkWrite, 2, "w", false],
    ["appendFile", checkWrite, 2, "a", false],
  ];
  // Each checks the path as before, then runs on the descriptor the broker opened and confirmed (a
  // descriptor or FileHandle the tool gives goes on as it is, guarded by the check).
  for (const [name, check, at, defaultFlag, reads] of CONTENT_CALLS) {
    replace(
      fsTarget,
      `${name}Sync`,
      (original) =>
        function (this: unknown, ...a: unknown[]) {
          check(a);
          if (typeof a[0] !== "string") return Reflect.apply(original, this, a);
          const fd = openConfirmedSync(a[0], openingFrom(a, at, defaultFlag, reads));
          a[0] = fd;
          try {
            return Reflect.apply(original, this, a);
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
          check(a);
          const callback = a[a.length - 1];
          if (typeof a[0] !== "string" || typeof callback !== "function")
            return Reflect.apply(original, this, a);
          openConfirmed(a[0], openingFrom(a, at, defaultFlag, reads), (error, fd) => {
            if (error || fd === undefined) return (callback as AnyFunction)(error);
            a[0] = fd;
            const release = hold(fd);
            a[a.length - 1] = (...results: unknown[]) => {
              closeSyncOriginal(fd);
              release();
              Reflect.apply(callback as AnyFunction, undefined, results);
            };
            try {
              Reflect.apply(original, this, a);
            } catch (thrown) {
              closeSyncOriginal(fd);
              release();
              (callback as AnyFunction)(thrown);
            }
          });
        },
    );
    replace(
      promisesTarget,
      name,
      (original) =>
        function (this: unknown, ...a: unknown[]) {
          check(a);
          if (typeof a[0] !== "string") return Reflect.apply(original, this, a);
          return openConfirmedHandle(a[0], openingFrom(a, at, defaultFlag, reads)).then(async (handle) => {
            a[0] = handle;
            try {
              return await Reflect.apply(original, this, a);
            } finally {
              await handle.close();
            }
          });
        },
    );
  }
}
