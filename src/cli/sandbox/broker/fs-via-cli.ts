/**
 * Path calls the CLI makes on a descriptor it confirmed.
 *
 * The other calls that name a path — `readdir`, `opendir`, `readlink`, `realpath`, `access` for
 * a mode, `chmod`, `chown`, `lchown`, `utimes`, `lutimes`, `statfs`, and the entry calls `unlink`,
 * `rm`, `rmdir`, `mkdir`, `mkdtemp`, `rename`, `link` — have no form on a descriptor that Node
 * allows the host under its permission model (nor does it let the host name `/proc/self/fd`). So
 * the broker opens what the call acts on — the file (`O_PATH`, following links, as the call
 * would), or for an entry call the entry's directory (`O_PATH | O_DIRECTORY`), the entry then
 * named in it — and the CLI decides on what that descriptor really is and, if it allows, makes
 * the call itself through `/proc/<host>/fd/<n>` (file-ops.ts): a directory or link swapped on
 * the tool's path after the open changes nothing. `realpath` is the path the kernel keeps for
 * the descriptor, as the CLI read it. `cp` is made of these calls (and the confirmed copies of
 * fs-copy.ts); `openAsBlob` reads a confirmed descriptor at once (Node would read the path again
 * whenever the blob is read); `chdir` is confirmed after the fact (the new working directory's
 * real path, else back to the old one). The callback and promise forms answer on a later tick:
 * the CLI is asked synchronously, as for every check. Under a file restriction on Linux only.
 */
import fs from "node:fs";
import {
  basename,
  dirname,
  join as joinPath,
  relative as relativePath,
  resolve as resolvePath,
} from "node:path";
import { PermissionDeniedError } from "../../permissions.ts";
import { DIRENT, type FileOp, type OpError, opAction, type PinnedEntry } from "../protocol.ts";
import { type AnyFunction, allows, type Broker, replace, type Target } from "./context.ts";
import type { FileArgs } from "./fs-args.ts";
import type { ConfirmedOpens } from "./fs-confirmed.ts";
import { COPY_CHUNK } from "./fs-copy.ts";
import {
  allocBuffer,
  BlobClass,
  bufferFrom,
  chdirOriginal,
  closeSyncOriginal,
  cwdOriginal,
  DirentClass,
  dateGetTime,
  FS_CONSTANTS,
  fstatSyncOriginal,
  isDate,
  nextTick,
  O_PATH,
  openSyncOriginal,
  readSyncOriginal,
} from "./originals.ts";

/** Installs the calls the CLI makes, under a file restriction on Linux. */
export function hookFsViaCli(broker: Broker, files: FileArgs, opens: ConfirmedOpens): void {
  const { ask, options } = broker;
  const { checkArg } = files;
  const { refusalOf, openConfirmedSync } = opens;
  const fsTarget = fs as unknown as Target;
  const promisesTarget = fs.promises as unknown as Target;
  if (options.fsRestricted && process.platform === "linux") {
    /** An error of opening `path` for `syscall`, worded as the call's on the tool's path. */
    const openError = (error: unknown, syscall: string, path: string): unknown => {
      const e = error as NodeJS.ErrnoException;
      if (e?.syscall !== "open" || typeof e.message !== "string") return error;
      const at = e.message.indexOf(", open '");
      if (at !== -1) e.message = `${e.message.slice(0, at)}, ${syscall} '${path}'`;
      e.syscall = syscall;
      e.path = path;
      return error;
    };
    /** Node's error for `syscall` on the tool's `path` (and `dest`), from the CLI's fields. */
    const callError = (e: OpError, syscall: string, path: string, dest?: string): Error => {
      const call = e.syscall ?? syscall;
      const named = dest === undefined ? `'${path}'` : `'${path}' -> '${dest}'`;
      const message = e.code.startsWith("ERR_")
        ? `${e.text} ${path}`
        : `${e.code}: ${e.text}, ${call} ${named}`;
      const error = new Error(message) as NodeJS.ErrnoException & { dest?: string };
      error.errno = e.errno;
      error.code = e.code;
      error.syscall = call;
      error.path = path;
      if (dest !== undefined) error.dest = dest;
      return error;
    };
    /** Has the CLI decide on `entry` and do `op` there: its value, or the refusal or error thrown. */
    const viaCli = (
      entry: PinnedEntry,
      op: FileOp,
      syscall: string,
      path: string,
      dest?: string,
    ): unknown => {
      const action = opAction(op.o);
      const { fd, name } = entry;
      const resource = name === undefined ? `fd:${fd}` : `fd:${fd}/${name}`;
      const answer = ask("FileSystem", action, resource, { fd, name, op, peek: true });
      if (!allows(answer)) throw new PermissionDeniedError("FileSystem", answer.a ?? action, answer.r);
      if (answer.e) throw callError(answer.e, syscall, path, dest);
      return answer.v;
    };
    /** Opens `path` (`O_PATH`, plus `flags`) for `syscall`. */
    const openPath = (path: string, flags: number, syscall: string, named = path): number => {
      try {
        return openSyncOriginal(path, O_PATH | flags);
      } catch (error) {
        throw openError(error, syscall, named);
      }
    };
    /** `op` on the file `path` names (links followed). */
    const onFile = (path: string, op: FileOp, syscall: string): unknown => {
      const fd = openPath(path, 0, syscall);
      try {
        return viaCli({ fd }, op, syscall, path);
      } finally {
        closeSyncOriginal(fd);
      }
    };
    /**
     * The entry `path` names: its directory opened, with its name; or, where Node refuses the host
     * that directory (it is above every grant, so out of the tool's reach too), the entry itself.
     */
    const pin = (path: string, syscall: string): PinnedEntry => {
      const absolute = resolvePath(cwdOriginal(), path);
      const name = basename(absolute);
      if (name !== "") {
        try {
          return { fd: openSyncOriginal(dirname(absolute), O_PATH | FS_CONSTANTS.O_DIRECTORY), name };
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== "ERR_ACCESS_DENIED")
            throw openError(error, syscall, path);
        }
      }
      return { fd: openPath(absolute, FS_CONSTANTS.O_NOFOLLOW, syscall, path) };
    };
    /** `op` on the entry `path` names (not followed). */
    const onEntry = (path: string, op: FileOp, syscall: string): unknown => {
      const entry = pin(path, syscall);
      try {
        return viaCli(entry, op, syscall, path);
      } finally {
        closeSyncOriginal(entry.fd);
      }
    };
    /**
     * Replaces `base` (sync, callback, promise) with `run` on the checked arguments (the callback
     * left out), when `ours` takes them: anything else — a descriptor, a handle, an argument Node
     * refuses — goes to Node's own, which refuses or guards it.
     */
    const perform = (
      base: string,
      guard: (a: unknown[]) => void,
      run: (a: unknown[]) => unknown,
      ours: (a: unknown[]) => boolean = () => true,
    ) => {
      const taken = (a: unknown[]) => typeof a[0] === "string" && ours(a);
      replace(
        fsTarget,
        `${base}Sync`,
        (original) =>
          function (this: unknown, ...a: unknown[]) {
            guard(a);
            return taken(a) ? run(a) : Reflect.apply(original, this, a);
          },
      );
      replace(
        fsTarget,
        base,
        (original) =>
          function (this: unknown, ...a: unknown[]) {
            const callback = a[a.length - 1];
            if (typeof callback !== "function") return Reflect.apply(original, this, a);
            const args = a.slice(0, -1);
            guard(args);
            if (!taken(args)) return Reflect.apply(original, this, [...args, callback]);
            let value: unknown;
            try {
              value = run(args);
            } catch (error) {
              nextTick(callback as AnyFunction, error);
              return;
            }
            nextTick(callback as AnyFunction, null, value);
          },
      );
      replace(
        promisesTarget,
        base,
        (original) =>
          function (this: unknown, ...a: unknown[]) {
            try {
              guard(a);
              return taken(a) ? Promise.resolve(run(a)) : Reflect.apply(original, this, a);
            } catch (error) {
              return Promise.reject(error);
            }
          },
      );
    };
    const readGuard = (a: unknown[]) => checkArg(a, 0, "Read");
    const writeGuard = (a: unknown[]) => checkArg(a, 0, "Write");
    /** Options given as an object or, for the encoding alone, a string. */
    const optionsOf = (o: unknown): Record<string, unknown> =>
      typeof o === "string" ? { encoding: o } : typeof o === "object" && o !== null ? { ...o } : {};
    /** A name as the call's `encoding` asks (`buffer`: bytes). */
    const encoded = (text: string, encoding: unknown): unknown => {
      if (encoding === undefined || encoding === null || encoding === "utf8" || encoding === "utf-8")
        return text;
      const bytes = bufferFrom(text, "utf8");
      return encoding === "buffer" ? bytes : bytes.toString(encoding as BufferEncoding);
    };

    // Listing: one directory at a time, each confirmed; recursion goes into real directories only.
    const list = (path: string, syscall: string) =>
      onFile(path, { o: "readdir", types: true }, syscall) as [string, number][];
    const listing = (path: string, recursive: boolean, syscall: string) => {
      const found: { name: string; relative: string; type: number; parent: string }[] = [];
      const queue = [path];
      for (let i = 0; i < queue.length; i++) {
        const dir = queue[i] as string;
        for (const [name, type] of list(dir, syscall)) {
          const full = joinPath(dir, name);
          found.push({ name, relative: i === 0 ? name : relativePath(path, full), type, parent: dir });
          if (recursive && type === DIRENT.DIR) queue.push(full);
        }
      }
      return found;
    };
    const dirents = (path: string, o: Record<string, unknown>, syscall: string) =>
      listing(path, o.recursive === true, syscall).map(
        (entry) => new DirentClass(encoded(entry.name, o.encoding) as string, entry.type, entry.parent),
      );
    perform("readdir", readGuard, (a) => {
      const o = optionsOf(a[1]);
      if (o.withFileTypes === true) return dirents(a[0] as string, o, "scandir");
      return listing(a[0] as string, o.recursive === true, "scandir").map((entry) =>
        encoded(entry.relative, o.encoding),
      );
    });
    /** What `opendir` gives: the listing taken when it was opened, read one entry at a time. */
    class ListedDir {
      readonly path: string;
      #entries: fs.Dirent[];
      #closed = false;
      constructor(path: string, entries: fs.Dirent[]) {
        this.path = path;
        this.#entries = entries;
      }
      #open() {
        if (this.#closed)
          throw Object.assign(new Error("Directory handle was closed"), { code: "ERR_DIR_CLOSED" });
      }
      readSync(): fs.Dirent | null {
        this.#open();
        return this.#entries.shift() ?? null;
      }
      read(callback?: AnyFunction): Promise<fs.Dirent | null> | undefined {
        return later(() => this.readSync(), callback);
      }
      closeSync(): void {
        this.#open();
        this.#closed = true;
      }
      close(callback?: AnyFunction): Promise<void> | undefined {
        return later(() => this.closeSync(), callback);
      }
      async *entries(): AsyncGenerator<fs.Dirent> {
        try {
          for (let entry = this.readSync(); entry !== null; entry = this.readSync()) yield entry;
        } finally {
          if (!this.#closed) this.closeSync();
        }
      }
      [Symbol.asyncIterator]() {
        return this.entries();
      }
    }
    Object.freeze(ListedDir.prototype);
    /** `run`'s value to `callback` on a later tick, or as a promise without one. */
    const later = <T>(run: () => T, callback?: AnyFunction): Promise<T> | undefined => {
      let value: T;
      try {
        value = run();
      } catch (error) {
        if (typeof callback !== "function") return Promise.reject(error);
        nextTick(callback, error);
        return undefined;
      }
      if (typeof callback !== "function") return Promise.resolve(value);
      nextTick(callback, null, value);
      return undefined;
    };
    perform("opendir", readGuard, (a) => {
      const o = optionsOf(a[1]);
      return new ListedDir(a[0] as string, dirents(a[0] as string, o, "opendir"));
    });
    perform("readlink", readGuard, (a) => {
      const bytes = bufferFrom(onEntry(a[0] as string, { o: "readlink" }, "readlink") as string, "base64");
      const { encoding } = optionsOf(a[1]);
      return encoding === "buffer" ? bytes : bytes.toString((encoding ?? "utf8") as BufferEncoding);
    });
    // The real path is the name the kernel keeps for the opened file, as the CLI confirmed it.
    const realpathOf = (syscall: string) => (a: unknown[]) => {
      const path = a[0] as string;
      const fd = openPath(path, 0, syscall);
      try {
        const answer = ask("FileSystem", "Read", `fd:${fd}`, { fd, peek: true });
        if (!allows(answer)) throw new PermissionDeniedError("FileSystem", "Read", answer.r);
        return encoded(answer.r, optionsOf(a[1]).encoding);
      } finally {
        closeSyncOriginal(fd);
      }
    };
    perform("realpath", readGuard, realpathOf("lstat"));
    // Which form each is, decided here: `fs.realpath` and `fs.realpathSync` are the tool's to rebind.
    for (const [target, sync] of [
      [fs.realpath, false],
      [fs.realpathSync, true],
    ] as const) {
      replace(
        target as unknown as Target,
        "native",
        (original) =>
          function (this: unknown, ...a: unknown[]) {
            const callback = sync ? undefined : a[a.length - 1];
            const args = typeof callback === "function" ? a.slice(0, -1) : a;
            readGuard(args);
            if (typeof args[0] !== "string" || (!sync && typeof callback !== "function"))
              return Reflect.apply(original, this, a);
            if (sync) return realpathOf("realpath")(args);
            later(() => realpathOf("realpath")(args), callback as AnyFunction);
          },
      );
    }
    // `access` for a mode (for existence alone, the confirmed open of fs-stat.ts).
    const accessMode = (mode: unknown) =>
      typeof mode === "number" &&
      mode !== FS_CONSTANTS.F_OK &&
      Number.isInteger(mode) &&
      mode >= 0 &&
      mode <= 7;
    perform(
      "access",
      readGuard,
      (a) => {
        onFile(a[0] as string, { o: "access", mode: a[1] as number }, "access");
      },
      (a) => accessMode(a[1]),
    );
    perform("statfs", readGuard, (a) => {
      const numbers = onFile(a[0] as string, { o: "statfs" }, "statfs") as string[];
      const big = optionsOf(a[1]).bigint === true;
      const [type, bsize, blocks, bfree, bavail, files, ffree] = numbers.map((n) =>
        big ? BigInt(n) : Number(n),
      );
      return { type, bsize, blocks, bfree, bavail, files, ffree };
    });
    /** A mode as Node takes it (a number, or octal digits), or undefined for what Node refuses. */
    const modeOf = (mode: unknown): number | undefined => {
      if (typeof mode === "number") return Number.isInteger(mode) && mode >= 0 ? mode : undefined;
      return typeof mode === "string" && /^[0-7]+$/.test(mode) ? Number.parseInt(mode, 8) : undefined;
    };
    perform(
      "chmod",
      writeGuard,
      (a) => {
        onFile(a[0] as string, { o: "chmod", mode: modeOf(a[1]) as number }, "chmod");
      },
      (a) => modeOf(a[1]) !== undefined,
    );
    const ids = (a: unknown[]) => Number.isInteger(a[1]) && Number.isInteger(a[2]);
    perform(
      "chown",
      writeGuard,
      (a) => {
        onFile(a[0] as string, { o: "chown", uid: a[1] as number, gid: a[2] as number }, "chown");
      },
      ids,
    );
    perform(
      "lchown",
      writeGuard,
      (a) => {
        onEntry(a[0] as string, { o: "lchown", uid: a[1] as number, gid: a[2] as number }, "lchown");
      },
      ids,
    );
    /** A time as Node takes it, in seconds (a negative number is now), or undefined for what Node refuses. */
    const secondsOf = (time: unknown): number | undefined => {
      let seconds: number | undefined;
      if (typeof time === "string") seconds = Number(time);
      else if (typeof time === "number") seconds = time < 0 ? Date.now() / 1000 : time;
      else if (isDate(time)) seconds = dateGetTime(time) / 1000;
      else return undefined;
      // What Node would take but JSON cannot carry (NaN, ±Infinity) is refused here instead.
      if (!Number.isFinite(seconds)) throw new TypeError(`invalid time: ${String(time)}`);
      return seconds;
    };
    const times = (a: unknown[]) => secondsOf(a[1]) !== undefined && secondsOf(a[2]) !== undefined;
    for (const [base, follow] of [
      ["utimes", true],
      ["lutimes", false],
    ] as const) {
      perform(
        base,
        writeGuard,
        (a) => {
          const op = { o: base, atime: secondsOf(a[1]) as number, mtime: secondsOf(a[2]) as number };
          if (follow) onFile(a[0] as string, op, base);
          else onEntry(a[0] as string, op, base);
        },
        times,
      );
    }
    // Entry calls.
    perform("unlink", writeGuard, (a) => {
      onEntry(a[0] as string, { o: "unlink" }, "unlink");
    });
    const removeEntry = (path: string, o: Record<string, unknown>) => {
      try {
        onEntry(path, { o: "rm", recursive: o.recursive === true }, "rm");
      } catch (error) {
        if (!(o.force === true && (error as NodeJS.ErrnoException).code === "ENOENT")) throw error;
      }
    };
    perform("rm", writeGuard, (a) => removeEntry(a[0] as string, optionsOf(a[1])));
    perform("rmdir", writeGuard, (a) => {
      const o = optionsOf(a[1]);
      if (o.recursive === true) removeEntry(a[0] as string, o);
      else onEntry(a[0] as string, { o: "rmdir" }, "rmdir");
    });
    /** Whether `path` is a directory, as a confirmed descriptor says. */
    const isConfirmedDirectory = (path: string): boolean => {
      const fd = openPath(path, 0, "mkdir");
      try {
        const refusal = refusalOf(fd, { flag: undefined, mode: undefined, read: true, write: false });
        if (refusal) throw refusal;
        return (fstatSyncOriginal(fd).mode & FS_CONSTANTS.S_IFMT) === FS_CONSTANTS.S_IFDIR;
      } finally {
        closeSyncOriginal(fd);
      }
    };
    /** `mkdir -p`: each missing directory made in its confirmed parent; the first one made, as Node answers. */
    const makeAll = (path: string, mode: number): string | undefined => {
      const absolute = resolvePath(cwdOriginal(), path);
      const make = () => onEntry(absolute, { o: "mkdir", mode }, "mkdir");
      let first: string | undefined = absolute;
      try {
        make();
        return first;
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === "EEXIST" && isConfirmedDirectory(absolute)) return undefined;
        if (code !== "ENOENT" || dirname(absolute) === absolute) throw error;
      }
      first = makeAll(dirname(absolute), mode);
      try {
        make();
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST" || !isConfirmedDirectory(absolute))
          throw error;
      }
      return first ?? absolute;
    };
    perform(
      "mkdir",
      writeGuard,
      (a) => {
        const o: { mode?: unknown; recursive?: unknown } =
          typeof a[1] === "object" && a[1] !== null ? { ...a[1] } : { mode: a[1] };
        const mode = o.mode === undefined ? 0o777 : (modeOf(o.mode) as number);
        if (o.recursive === true) return makeAll(a[0] as string, mode);
        onEntry(a[0] as string, { o: "mkdir", mode }, "mkdir");
      },
      (a) => {
        const mode = typeof a[1] === "object" && a[1] !== null ? (a[1] as { mode?: unknown }).mode : a[1];
        return mode === undefined || modeOf(mode) !== undefined;
      },
    );
    perform("mkdtemp", writeGuard, (a) => {
      const prefix = a[0] as string;
      const slash = prefix.lastIndexOf("/");
      const name = prefix.slice(slash + 1);
      const dir = slash === -1 ? "." : prefix.slice(0, slash + 1);
      const fd = openPath(
        resolvePath(cwdOriginal(), dir),
        FS_CONSTANTS.O_DIRECTORY,
        "mkdtemp",
        `${prefix}XXXXXX`,
      );
      try {
        const made = viaCli(
          { fd, name: name === "" ? undefined : name },
          { o: "mkdtemp" },
          "mkdtemp",
          `${prefix}XXXXXX`,
        );
        return encoded(`${prefix}${(made as string).slice(name.length)}`, optionsOf(a[1]).encoding);
      } finally {
        closeSyncOriginal(fd);
      }
    });
    for (const base of ["rename", "link"] as const) {
      perform(
        base,
        (a) => {
          checkArg(a, 0, "Read");
          checkArg(a, 0, "Write");
          checkArg(a, 1, "Write");
        },
        (a) => {
          const [source, target] = a as [string, string];
          const from = pin(source, base);
          try {
            const to = pin(target, base);
            try {
              viaCli(to, { o: base, from }, base, source, target);
            } finally {
              closeSyncOriginal(to.fd);
            }
          } finally {
            closeSyncOriginal(from.fd);
          }
        },
        (a) => typeof a[1] === "string",
      );
    }
    // A blob of what a confirmed descriptor holds, read now.
    replace(
      fsTarget,
      "openAsBlob",
      (original) =>
        function openAsBlob(this: unknown, ...a: unknown[]) {
          try {
            readGuard(a);
            if (typeof a[0] !== "string") return Reflect.apply(original, this, a);
            const fd = openConfirmedSync(a[0], { flag: "r", mode: undefined, read: true, write: false });
            const chunks: Buffer[] = [];
            try {
              for (;;) {
                const chunk = allocBuffer(COPY_CHUNK);
                const read = readSyncOriginal(fd, chunk, 0, COPY_CHUNK, null);
                if (read === 0) break;
                chunks.push(chunk.subarray(0, read));
              }
            } finally {
              closeSyncOriginal(fd);
            }
            const type = optionsOf(a[1]).type;
            return Promise.resolve(new BlobClass(chunks, { type: typeof type === "string" ? type : "" }));
          } catch (error) {
            return Promise.reject(error);
          }
        },
    );
    // The working directory is what the kernel says it is: one out of the grants is left at once.
    replace(
      process as unknown as Target,
      "chdir",
      (original) =>
        function chdir(this: unknown, ...a: unknown[]) {
          const before = cwdOriginal();
          Reflect.apply(original, this, a);
          const now = cwdOriginal();
          const answer = ask("FileSystem", "Read", now, { peek: true });
          if (allows(answer)) return;
          chdirOriginal(before);
          throw new PermissionDeniedError("FileSystem", "Read", answer.r);
        },
    );
  }
}
