/**
 * The in-process permission broker of the tool process. It decides nothing itself: every check is
 * forwarded to the CLI (`ask`), which decides, audits and answers; the broker enforces the answer.
 * It patches the real Node built-ins in place
 * (fs sync/callback/promises/streams, net/tls/http via `net.Socket#connect` and `net.Server#listen`,
 * dgram, dns, child_process, worker_threads, inspector, wasi, v8 heap snapshots and flags,
 * `process.env`, the machine's identity in `os`, `process.binding`, `process.dlopen`, `process.kill`,
 * `module.register`) so every route to them — `require`, dynamic
 * `import()`, `createRequire`, or `this.constructor.constructor("return process")()` — reaches the
 * same checked functions, and hooks the TCP and pipe handles so the address a socket really dials
 * (after any name lookup, whatever the arguments looked like) is checked too. Node's own permission
 * model, set up by the parent, is the second wall; `--frozen-intrinsics` keeps the built-ins the
 * broker uses out of the tool's reach, and every Node function it calls is captured at install.
 * Runs only inside the tool process; nothing here may use a patched function.
 */
import childProcess from "node:child_process";
import fs from "node:fs";
import inspector from "node:inspector";
import moduleApi from "node:module";
import os from "node:os";
import {
  basename,
  dirname,
  join as joinPath,
  relative as relativePath,
  resolve as resolvePath,
} from "node:path";
import { types } from "node:util";
import v8 from "node:v8";
import vm from "node:vm";
import wasi from "node:wasi";
import workerThreads from "node:worker_threads";
import { type PermissionAction, PermissionDeniedError } from "../../permissions.ts";
import { DEFAULT_SHELL } from "../judge.ts";
import { DIRENT, type FileOp, type OpError, opAction, type PinnedEntry } from "../protocol.ts";
import { makeWatchFile } from "../watchers.ts";
import {
  type AnyFunction,
  type Ask,
  allows,
  type BrokerOptions,
  createBroker,
  replace,
  type Target,
  wrap,
} from "./context.ts";
import { hookDescriptors } from "./fds.ts";
import { createFileArgs } from "./fs-args.ts";
import { hookFsPathCalls, hookFsPromisesPathCalls } from "./fs-paths.ts";
import { hookModuleResolution } from "./modules.ts";
import { hookNetCalls } from "./net.ts";
import { hookDial, hookResolver } from "./net-handles.ts";
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
  fstatOriginal,
  fstatSyncOriginal,
  ftruncateSyncOriginal,
  isArray,
  isDate,
  nextTick,
  O_PATH,
  OWN_PID,
  openOriginal,
  openSyncOriginal,
  promisesOpenOriginal,
  readSyncOriginal,
  statSyncOriginal,
  writeSyncOriginal,
} from "./originals.ts";

export type { Ask } from "./context.ts";

/** A built-in this Node may not have (or has only behind a flag): undefined then. */
function loadOptionalBuiltin(name: string): Target | undefined {
  try {
    return moduleApi.createRequire(import.meta.url)(name) as Target;
  } catch {
    return undefined;
  }
}

/**
 * What glibc leaves out of the environment of a program it runs in secure-execution mode, besides
 * `LD_*` (its `unsecvars.h`), and its tunables: see `loaderVariable` in {@link installBroker}.
 * `TMPDIR` is on glibc's list too, but names only where temporary files go: left to the child.
 */
const LOADER_VARIABLES = new Set([
  "GCONV_PATH",
  "GETCONF_DIR",
  "GLIBC_TUNABLES",
  "HOSTALIASES",
  "LOCALDOMAIN",
  "LOCPATH",
  "MALLOC_TRACE",
  "NIS_PATH",
  "NLSPATH",
  "RESOLV_HOST_CONF",
  "RES_OPTIONS",
  "TZDIR",
]);

/**
 * The variables Node's own JavaScript reads (Node 20 and 22, found in their built-in sources):
 * colour detection (`tty.getColorDepth`, which `console` and `util.inspect` consult), debug logs,
 * warnings, child-process and cluster set-up, the REPL and test runner, bundled dependencies. A
 * read of one of these from what looks like Node's code writes no audit line; none holds a secret
 * (the proxy variables, which may carry credentials, are left out: Node reads them only when
 * asked to proxy, and such a read is a line).
 */
const NODE_OWN_VARIABLES = new Set([
  "AGENT_NAME",
  "APPVEYOR",
  "BUILDKITE",
  "CI",
  "CI_NAME",
  "CIRCLECI",
  "COLORTERM",
  "DRONE",
  "FORCE_COLOR",
  "GITEA_ACTIONS",
  "GITHUB_ACTIONS",
  "GITLAB_CI",
  "JEST_WORKER_ID",
  "NO_COLOR",
  "NODE_CHANNEL_FD",
  "NODE_CHANNEL_SERIALIZATION_MODE",
  "NODE_CLUSTER_SCHED_POLICY",
  "NODE_DEBUG",
  "NODE_DISABLE_COLORS",
  "NODE_EXTRA_CA_CERTS",
  "NODE_INSPECT_RESUME_ON_START",
  "NODE_MANY_ACCEPTS",
  "NODE_NO_READLINE",
  "NODE_NO_WARNINGS",
  "NODE_OPTIONS",
  "NODE_PATH",
  "NODE_PENDING_PIPE_INSTANCES",
  "NODE_REPL_EXTERNAL_MODULE",
  "NODE_REPL_HISTORY",
  "NODE_REPL_HISTORY_SIZE",
  "NODE_REPL_MODE",
  "NODE_TEST_CONTEXT",
  "NODE_TLS_REJECT_UNAUTHORIZED",
  "NODE_UNIQUE_ID",
  "NODE_V8_COVERAGE",
  "TEAMCITY_VERSION",
  "TERM",
  "TERM_PROGRAM",
  "TERM_PROGRAM_VERSION",
  "TF_BUILD",
  "TMUX",
  "TRAVIS",
  "UNDICI_NO_FG",
  "WATCH_REPORT_DEPENDENCIES",
  "__MINIMATCH_TESTING_PLATFORM__",
]);

/** Why `fs.watch` is refused under a file restriction (appended to the refusal's message). */
const WATCH_REFUSED =
  " (fs.watch is not available under a file restriction: a watch cannot be tied to what was checked; poll with fs.watchFile or fs.stat)";

/** Installs the broker. Call once, before any tool code runs; `reserved` are the host's own pipes. */
export function installBroker(ask: Ask, options: BrokerOptions): void {
  // Tool code meets this class in every denial (`error.constructor`): a setter on its prototype would
  // run inside the broker's own paths, a `Symbol.hasInstance` would change what counts as a denial.
  Object.freeze(PermissionDeniedError.prototype);
  Object.freeze(PermissionDeniedError);
  const broker = createBroker(ask, options);
  const { check, guardFd, guardClose, hold, refuseIfDenied } = broker;
  // First, while net.Socket#connect is still Node's own.
  const handleFd = hookDial(ask, guardFd, guardClose);
  hookResolver(ask);

  // ---- file system -------------------------------------------------------------------------
  const files = createFileArgs(broker);
  const {
    learnFileHandle,
    toPath,
    fileResource,
    checkArg,
    isWriteFlag,
    checkReadFile,
    checkCopy,
    checkExists,
  } = files;
  hookDescriptors(broker);
  hookFsPathCalls(broker, files);
  hookModuleResolution(broker, files);
  hookFsPromisesPathCalls(broker, files);
  const fsTarget = fs as unknown as Target;
  // ---- watching ----------------------------------------------------------------------------
  // Under a file restriction a watched file is polled by the broker, each poll a look at what a
  // descriptor the CLI confirmed names (watchers.ts; by the checked path where there is no `O_PATH`),
  // and `fs.watch` is refused: an inotify watch is tied to what the path named when Node added it,
  // after the check, and nothing in Node ties it to what was checked (Node's permission model
  // refuses the host the `/proc/self/fd` path of a confirmed descriptor); a watcher's class would
  // also start one on any path, past the broker and Node's model alike.
  if (options.fsRestricted) {
    const linux = process.platform === "linux";
    const looking: Opening = { flag: undefined, mode: undefined, read: true, write: false };
    const look = (path: string, bigint: boolean): fs.Stats | fs.BigIntStats | undefined => {
      if (!linux) {
        const { resource, escaped } = fileResource(path);
        try {
          if (escaped) return undefined;
          refuseIfDenied("FileSystem", "Read", resource);
          return statSyncOriginal(path, { bigint, throwIfNoEntry: false });
        } catch {
          return undefined;
        }
      }
      let fd: number;
      try {
        fd = openSyncOriginal(path, O_PATH);
      } catch {
        return undefined;
      }
      try {
        return refusalOf(fd, looking) === undefined ? fstatSyncOriginal(fd, { bigint }) : undefined;
      } catch {
        return undefined;
      } finally {
        closeSyncOriginal(fd);
      }
    };
    const absolute = (a: unknown[]) => resolvePath(cwdOriginal(), a[0] as string);
    const { watchFile, unwatchFile } = makeWatchFile({
      checkPath: (a) => {
        checkArg(a, 0, "Read");
        return absolute(a);
      },
      absolute,
      look,
      sample: (bigint) => fstatSyncOriginal(options.reserved[0] ?? 0, { bigint }),
    });
    /** `call` on the tool's path read once (what is no path goes to Node, which refuses it). */
    const onPath = (call: AnyFunction) => (original: AnyFunction) =>
      function (this: unknown, ...a: unknown[]) {
        const path = toPath(a[0]);
        if (path === null) return Reflect.apply(original, this, a);
        a[0] = path;
        return Reflect.apply(call, this, a);
      };
    replace(fsTarget, "watchFile", onPath(watchFile));
    replace(fsTarget, "unwatchFile", onPath(unwatchFile));
    const refuseWatch = (...a: unknown[]) => {
      try {
        check("FileSystem", "Read", fileResource(a[0] as string).resource, true);
      } catch (error) {
        if (error instanceof PermissionDeniedError) error.message += WATCH_REFUSED;
        throw error;
      }
    };
    replace(fsTarget, "watch", onPath(refuseWatch));
    replace(fs.promises as unknown as Target, "watch", onPath(refuseWatch));
  }

  // ---- what was opened is what was checked -------------------------------------------------
  // A path names what it names when it is checked: tool code can swap a directory or a link on it
  // before Node opens it (an asynchronous open waits for libuv's pool, which tool code can keep
  // busy). So the broker opens the file itself and checks the descriptor once more: the CLI reads
  // what it really is (`/proc/<host>/fd/<n>`) and decides on that path; one out of the grants is
  // closed and refused. Truncation waits for that answer (the file is opened without `O_TRUNC`), so
  // a refused open has read, written and truncated nothing — at most it made an empty file where a
  // swapped link pointed. `open` (every kind), `readFile`, `writeFile`, `appendFile` and the streams
  // (which open through `fs.open`) take this way; the other path calls, below.
  /** How a call opens its file: the flag and mode, and whether it reads and whether it writes. */
  interface Opening {
    flag: unknown;
    mode: unknown;
    read: boolean;
    write: boolean;
  }
  /** The refusal of what `fd` really is, if it is out of the grants (nothing to ask when unrestricted). */
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
      if (truncate && fstatSyncOriginal(fd).isFile()) ftruncateSyncOriginal(fd, 0);
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
      if (truncate && (await handle.stat()).isFile()) await handle.truncate(0);
      return handle;
    } catch (error) {
      await handle.close();
      throw error;
    }
  };
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
  const checkWrite = (a: unknown[]) => checkArg(a, 0, "Write");
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
  // `stat`, `lstat`, `exists` and `access` for existence (sync, callback, promise) look at what a
  // descriptor the broker opened and the CLI confirmed names, as the opens above: `O_PATH` (Linux;
  // no access to the file itself needed, as for stat(2)), with `O_NOFOLLOW` for `lstat` (the
  // descriptor is then the link's own), then `fstat`. A directory swapped on the path after the
  // check shows nothing out of the grants (`exists` answers false). Errors read as the call's
  // (`stat '…'`, not `open '…'`). Under a file restriction on Linux only: elsewhere every file may
  // be looked at. `access` for a mode, `readdir`, `opendir` and the rest: made by the CLI (below).
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
    // by the CLI (below).
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
  // A copy reads one confirmed descriptor into another (Node's copies by path: `COPYFILE_FICLONE`
  // then makes no reflink, and `COPYFILE_FICLONE_FORCE` copies rather than fail); the new file gets
  // the source's mode, as Node's copy gives it.
  const COPY_CHUNK = 64 * 1024;
  const copyOpenings = (mode: unknown, fileMode?: number): [Opening, Opening] => {
    const exclusive = typeof mode === "number" && (mode & FS_CONSTANTS.COPYFILE_EXCL) !== 0;
    return [
      { flag: "r", mode: undefined, read: true, write: false },
      { flag: exclusive ? "wx" : "w", mode: fileMode, read: false, write: true },
    ];
  };
  replace(
    fsTarget,
    "copyFileSync",
    (original) =>
      function copyFileSync(this: unknown, ...a: unknown[]) {
        checkCopy(a);
        if (typeof a[0] !== "string" || typeof a[1] !== "string") return Reflect.apply(original, this, a);
        const from = openConfirmedSync(a[0], copyOpenings(a[2])[0]);
        try {
          const to = openConfirmedSync(a[1], copyOpenings(a[2], fstatSyncOriginal(from).mode & 0o7777)[1]);
          try {
            const buffer = allocBuffer(COPY_CHUNK);
            for (let read = readSyncOriginal(from, buffer, 0, COPY_CHUNK, null); read > 0; ) {
              for (let written = 0; written < read; )
                written += writeSyncOriginal(to, buffer, written, read - written);
              read = readSyncOriginal(from, buffer, 0, COPY_CHUNK, null);
            }
          } finally {
            closeSyncOriginal(to);
          }
        } finally {
          closeSyncOriginal(from);
        }
      },
  );
  const copyConfirmed = async (source: string, target: string, mode: unknown): Promise<void> => {
    const from = await openConfirmedHandle(source, copyOpenings(mode)[0]);
    try {
      const to = await openConfirmedHandle(target, copyOpenings(mode, (await from.stat()).mode & 0o7777)[1]);
      try {
        const buffer = allocBuffer(COPY_CHUNK);
        for (let { bytesRead } = await from.read(buffer, 0, COPY_CHUNK, null); bytesRead > 0; ) {
          for (let written = 0; written < bytesRead; )
            written += (await to.write(buffer, written, bytesRead - written)).bytesWritten;
          ({ bytesRead } = await from.read(buffer, 0, COPY_CHUNK, null));
        }
      } finally {
        await to.close();
      }
    } finally {
      await from.close();
    }
  };
  replace(
    promisesTarget,
    "copyFile",
    (original) =>
      function copyFile(this: unknown, ...a: unknown[]) {
        checkCopy(a);
        if (typeof a[0] !== "string" || typeof a[1] !== "string") return Reflect.apply(original, this, a);
        return copyConfirmed(a[0], a[1], a[2]);
      },
  );
  replace(
    fsTarget,
    "copyFile",
    (original) =>
      function copyFile(this: unknown, ...a: unknown[]) {
        checkCopy(a);
        const callback = a[a.length - 1];
        if (typeof a[0] !== "string" || typeof a[1] !== "string" || typeof callback !== "function")
          return Reflect.apply(original, this, a);
        copyConfirmed(a[0], a[1], a.length > 3 ? a[2] : undefined).then(
          () => nextTick(callback as AnyFunction, null),
          (error) => nextTick(callback as AnyFunction, error),
        );
      },
  );
  // `truncate` of a path: a confirmed descriptor, written (not read), truncated.
  const TRUNCATING: Opening = { flag: "r+", mode: undefined, read: false, write: true };
  const lengthOf = (length: unknown) =>
    (typeof length === "function" ? undefined : length) as number | undefined;
  replace(
    fsTarget,
    "truncateSync",
    (original) =>
      function truncateSync(this: unknown, ...a: unknown[]) {
        checkWrite(a);
        if (typeof a[0] !== "string") return Reflect.apply(original, this, a);
        const fd = openConfirmedSync(a[0], TRUNCATING);
        try {
          ftruncateSyncOriginal(fd, lengthOf(a[1]));
        } finally {
          closeSyncOriginal(fd);
        }
      },
  );
  const truncateConfirmed = async (path: string, length: number | undefined): Promise<void> => {
    const handle = await openConfirmedHandle(path, TRUNCATING);
    try {
      await handle.truncate(length);
    } finally {
      await handle.close();
    }
  };
  replace(
    promisesTarget,
    "truncate",
    (original) =>
      function truncate(this: unknown, ...a: unknown[]) {
        checkWrite(a);
        if (typeof a[0] !== "string") return Reflect.apply(original, this, a);
        return truncateConfirmed(a[0], lengthOf(a[1]));
      },
  );
  replace(
    fsTarget,
    "truncate",
    (original) =>
      function truncate(this: unknown, ...a: unknown[]) {
        checkWrite(a);
        const callback = a[a.length - 1];
        if (typeof a[0] !== "string" || typeof callback !== "function")
          return Reflect.apply(original, this, a);
        truncateConfirmed(a[0], lengthOf(a[1])).then(
          () => nextTick(callback as AnyFunction, null),
          (error) => nextTick(callback as AnyFunction, error),
        );
      },
  );

  // ---- path calls the CLI does on a confirmed descriptor ------------------------------------
  // The other calls that name a path — `readdir`, `opendir`, `readlink`, `realpath`, `access` for
  // a mode, `chmod`, `chown`, `lchown`, `utimes`, `lutimes`, `statfs`, and the entry calls `unlink`,
  // `rm`, `rmdir`, `mkdir`, `mkdtemp`, `rename`, `link` — have no form on a descriptor that Node
  // allows the host under its permission model (nor does it let the host name `/proc/self/fd`). So
  // the broker opens what the call acts on — the file (`O_PATH`, following links, as the call
  // would), or for an entry call the entry's directory (`O_PATH | O_DIRECTORY`), the entry then
  // named in it — and the CLI decides on what that descriptor really is and, if it allows, makes
  // the call itself through `/proc/<host>/fd/<n>` (file-ops.ts): a directory or link swapped on
  // the tool's path after the open changes nothing. `realpath` is the path the kernel keeps for
  // the descriptor, as the CLI read it. `cp` is made of these calls (and the confirmed copies
  // above); `openAsBlob` reads a confirmed descriptor at once (Node would read the path again
  // whenever the blob is read); `chdir` is confirmed after the fact (the new working directory's
  // real path, else back to the old one). The callback and promise forms answer on a later tick:
  // the CLI is asked synchronously, as for every check. Under a file restriction on Linux only.
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
    for (const [target, name] of [
      [fs.realpath, "native"],
      [fs.realpathSync, "native"],
    ] as const) {
      replace(
        target as unknown as Target,
        name,
        (original) =>
          function (this: unknown, ...a: unknown[]) {
            const callback = target === fs.realpath ? a[a.length - 1] : undefined;
            const args = typeof callback === "function" ? a.slice(0, -1) : a;
            readGuard(args);
            if (typeof args[0] !== "string" || (target === fs.realpath && typeof callback !== "function"))
              return Reflect.apply(original, this, a);
            if (target === fs.realpathSync) return realpathOf("realpath")(args);
            later(() => realpathOf("realpath")(args), callback as AnyFunction);
          },
      );
    }
    // `access` for a mode (for existence alone, the confirmed open above).
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

  hookNetCalls(broker);

  // ---- processes ---------------------------------------------------------------------------
  // The CLI resolves the program (a bare name through its own PATH, anything else from our cwd) and
  // answers with the executable to run: that path is what gets started, not what the tool named.
  const program = (file: unknown): string => {
    const answer = ask("Process", "Execute", String(file), { exec: { cwd: cwdOriginal() } });
    if (!allows(answer)) throw new PermissionDeniedError("Process", "Execute", answer.r);
    return answer.x ?? String(file);
  };
  const shellOf = (shell: unknown): string => (typeof shell === "string" ? shell : DEFAULT_SHELL);
  /**
   * A child's environment can make any program run code of the tool's: the dynamic loader and the C
   * library load what these variables name (a library to preload or audit, a library path, iconv
   * modules, locale data, tunables, …). glibc ignores exactly these in a program it does not trust
   * its caller with (its secure-execution list; every `LD_*` is the loader's), and macOS's loader
   * reads `DYLD_*`. A granted program is a grant of that program, not of whatever library the tool
   * wrote in a writable grant: such a variable goes to a child only when every program may run —
   * the resource `env:<NAME>`, decided like a program.
   */
  const loaderVariable = (name: string): boolean =>
    name.startsWith("LD_") || name.startsWith("DYLD_") || LOADER_VARIABLES.has(name);
  // Such a variable the host started with (granted, its value the user's) is not the tool's choice.
  const startedWith = new Map<string, string>();
  for (const key in process.env) {
    const value = process.env[key];
    if (loaderVariable(key) && value !== undefined) startedWith.set(key, value);
  }
  /**
   * One `NAME=value` entry as the child's C library reads it: the name ends at the first `=` (a key
   * `GCONV_PATH=/x` with any value is the variable `GCONV_PATH`).
   */
  const checkChildPair = (pair: string) => {
    const equals = pair.indexOf("=");
    const name = equals === -1 ? pair : pair.slice(0, equals);
    const value = equals === -1 ? "" : pair.slice(equals + 1);
    if (loaderVariable(name) && startedWith.get(name) !== value) check("Process", "Execute", `env:${name}`);
  };
  /**
   * What a child gets as its stdio: none of the host's own pipes (a granted program handed the
   * call or answer pipe reads what is meant for the host; handed the channel, writes to it). As the
   * Process handle takes it (`{type, fd}` or `{type, handle}` each, read once by Node's C++): copied,
   * each field read once, and the descriptor each names — the number, or the one its handle holds —
   * checked.
   */
  const childStdioEntries = (stdio: unknown): unknown => {
    if (!isArray(stdio)) return stdio;
    const copy: unknown[] = [];
    for (let i = 0, n = stdio.length; i < n; i++) {
      const entry = stdio[i] as Record<string, unknown> | null;
      if (typeof entry !== "object" || entry === null) {
        copy.push(entry);
        continue;
      }
      const type = entry.type;
      if (type === "ignore" || type === "pipe" || type === "overlapped" || type === "wrap") {
        const handle = entry.handle;
        if (type === "wrap") guardFd(handleFd(handle));
        copy.push({ type, handle });
      } else {
        // As a C++ int (a number past 2³¹ would wrap around to a small one).
        const read = entry.fd;
        const fd = typeof read === "number" ? read | 0 : read;
        guardFd(fd);
        copy.push({ type, fd });
      }
    }
    return copy;
  };
  /**
   * The same for a synchronous spawn's `stdio` option, before Node normalizes it (reading a
   * stream's `fd` twice): an entry naming a descriptor becomes that number, read once, and checked;
   * `inherit` at index `i` is descriptor `i`. A handle (or an object holding one) is checked on the
   * descriptor it holds, and an object that names neither is passed as a copy of what Node reads.
   */
  const childStdioOption = (stdio: unknown): unknown => {
    if (!isArray(stdio)) return stdio; // a string: descriptors 0–2 only
    const copy: unknown[] = [];
    for (let i = 0, n = stdio.length; i < n; i++) {
      const entry = stdio[i] as unknown;
      if (entry === "inherit") guardFd(i);
      if (typeof entry === "number") {
        // As Node's C++ takes it (ToInt32: a number past 2³¹ wraps around to a small one).
        guardFd(entry | 0);
        copy.push(entry | 0);
        continue;
      }
      if (typeof entry !== "object" || entry === null || types.isArrayBufferView(entry)) {
        copy.push(entry);
        continue;
      }
      const native = handleFd(entry);
      if (native !== undefined) {
        guardFd(native);
        copy.push(entry);
        continue;
      }
      const { fd, handle, _handle } = entry as Record<string, unknown>;
      if (typeof fd === "number") {
        guardFd(fd | 0);
        copy.push(fd | 0);
        continue;
      }
      guardFd(handleFd(handle));
      guardFd(handleFd(_handle));
      copy.push({ handle, _handle });
    }
    return copy;
  };
  /**
   * The environment a synchronous spawn passes on, as Node reads it (`options.env || process.env`,
   * inherited keys included), copied once — each key and value read once — and checked: Node gets
   * the copy, so a getter or a proxy cannot show the check one set and Node another.
   */
  const childEnv = (given: unknown): Record<string, string | undefined> => {
    const source = (given || realEnv) as Record<string, unknown>;
    const copy: Record<string, string | undefined> = {};
    for (const key in source) {
      const value = source[key];
      // As Node makes the pair (`${key}=${value}`; an undefined value is left out).
      copy[key] = value === undefined ? undefined : `${value}`;
    }
    for (const key in copy) {
      const value = copy[key];
      if (value !== undefined) checkChildPair(`${key}=${value}`);
    }
    return copy;
  };
  /**
   * The `envPairs` a Process handle gets (`NAME=value` strings), copied once as strings and checked;
   * none given means the host's own environment (what the child would inherit), made explicit.
   */
  const childEnvPairs = (given: unknown): string[] => {
    const pairs: string[] = [];
    if (isArray(given)) {
      for (let i = 0, n = given.length; i < n; i++) pairs.push(String(given[i]));
    } else {
      for (const key in realEnv) pairs.push(`${key}=${realEnv[key]}`);
    }
    for (const pair of pairs) checkChildPair(pair);
    return pairs;
  };
  const cp = childProcess as unknown as Target;
  const optionsAt = (a: unknown[], index: number): Record<string, unknown> | undefined => {
    const o = a[index];
    return typeof o === "object" && o !== null && !isArray(o)
      ? { ...(o as Record<string, unknown>) }
      : undefined;
  };
  // Synchronous spawns do not go through ChildProcess#spawn: check them at the top, reading the
  // arguments as Node does — `(file, args, options)`, options second when `args` is a non-array
  // object, none after a function (`execFileSync(file, cb, {shell})` ignores the third), else third
  // (`spawnSync(file, null, {shell})` reads it) — and run exactly the executable the CLI resolved,
  // the shell included (a shell name would go through the tool's `env.PATH`).
  const syncOptionsIndex = (a: unknown[]) => {
    if (typeof a[1] === "function") return -1;
    return typeof a[1] === "object" && a[1] !== null && !isArray(a[1]) ? 1 : 2;
  };
  for (const name of ["spawnSync", "execFileSync"]) {
    wrap(cp, name, (a) => {
      const index = syncOptionsIndex(a);
      const o = optionsAt(a, index);
      if (o?.shell) o.shell = program(shellOf(o.shell));
      else a[0] = program(a[0]);
      // Options Node ignores (after a callback): the child inherits the host's environment.
      if (index === -1) {
        childEnv(undefined);
        return;
      }
      const options = o ?? {};
      options.env = childEnv(options.env);
      if (options.stdio !== undefined) options.stdio = childStdioOption(options.stdio);
      a[index] = options;
    });
  }
  wrap(cp, "execSync", (a) => {
    const o = optionsAt(a, 1) ?? {};
    o.shell = program(shellOf(o.shell));
    o.env = childEnv(o.env);
    if (o.stdio !== undefined) o.stdio = childStdioOption(o.stdio);
    a[1] = o;
  });
  // Every asynchronous spawn (spawn, exec, execFile, fork, a bare ChildProcess, and its `_handle`
  // called directly, or a handle of that class) ends in the Process handle's `spawn`, with the
  // shell already in `file` when one is used: checked there, its options read once. The class is
  // taken from a throw-away ChildProcess (never spawned) before any tool code.
  const probe = new childProcess.ChildProcess() as unknown as { _handle?: object };
  const processHandle = probe._handle ? (Object.getPrototypeOf(probe._handle) as Target) : undefined;
  const originalSpawn = processHandle?.spawn;
  if (processHandle && typeof originalSpawn === "function") {
    Reflect.defineProperty(processHandle, "spawn", {
      value: function spawn(this: object, spawnOptions: unknown) {
        const o = (
          typeof spawnOptions === "object" && spawnOptions !== null ? { ...spawnOptions } : {}
        ) as Record<string, unknown>;
        o.file = program(o.file);
        o.envPairs = childEnvPairs(o.envPairs);
        o.stdio = childStdioEntries(o.stdio);
        return Reflect.apply(originalSpawn as AnyFunction, this, [o]);
      },
      writable: false,
      configurable: false,
    });
    Object.freeze(processHandle);
  }
  const checkRun = (command: unknown) => check("Process", "Execute", String(command));
  const checkWorker = (what: string) => check("Process", "Execute", what, options.noWorkers);
  /**
   * Replaces class `target[name]` with a constructor that runs `guard` first. Not a subclass: its
   * prototype would be the original, constructed unchecked (`Object.getPrototypeOf(Worker)`); and
   * the instances' prototype names the replacement as its `constructor`, for good.
   */
  const guardClass = (target: Target, name: string, guard: (args: unknown[]) => void) => {
    const Original = target[name] as new (...args: unknown[]) => object;
    const Checked = function (this: unknown, ...args: unknown[]) {
      if (new.target === undefined)
        throw new TypeError(`Class constructor ${name} cannot be invoked without 'new'`);
      guard(args);
      return Reflect.construct(Original, args, new.target);
    };
    Object.defineProperty(Checked, "name", { value: name });
    Object.defineProperty(Checked, "prototype", { value: Original.prototype, writable: false });
    Reflect.defineProperty(Original.prototype, "constructor", {
      value: Checked,
      writable: false,
      configurable: false,
    });
    Reflect.defineProperty(target, name, {
      value: Checked,
      writable: true,
      configurable: true,
      enumerable: true,
    });
  };
  guardClass(workerThreads as unknown as Target, "Worker", (a) =>
    checkWorker(`worker:${String(a[0]).slice(0, 200)}`),
  );
  guardClass(wasi as unknown as Target, "WASI", () => checkWorker("wasi"));
  // V8 runs the bytecode in a code cache (`cachedData`) as its own: crafted bytes are code V8 never
  // checked, past everything above. Every `vm` entry that takes one reads its options once (a copy
  // goes on) and refuses one under a restriction.
  const vmTarget = vm as unknown as Target;
  const refuseCachedData = (a: unknown[], index: number) => {
    const o = a[index];
    if (typeof o !== "object" || o === null) return;
    const copy = { ...(o as Record<string, unknown>) };
    if (copy.cachedData !== undefined) checkWorker("vm.cachedData");
    a[index] = copy;
  };
  guardClass(vmTarget, "Script", (a) => refuseCachedData(a, 1));
  wrap(vmTarget, "runInThisContext", (a) => refuseCachedData(a, 1));
  wrap(vmTarget, "runInContext", (a) => refuseCachedData(a, 2));
  wrap(vmTarget, "runInNewContext", (a) => refuseCachedData(a, 2));
  wrap(vmTarget, "compileFunction", (a) => refuseCachedData(a, 2));
  if (typeof vmTarget.SourceTextModule === "function")
    guardClass(vmTarget, "SourceTextModule", (a) => refuseCachedData(a, 1));
  // SQLite (Node ≥ 22.5) opens, creates and attaches database files itself, past the broker and
  // Node's permission model: under a restriction the class is replaced, not wrapped (a subclass
  // would hand its original out as its prototype), and every database is refused.
  const sqlite = loadOptionalBuiltin("node:sqlite");
  if (sqlite && options.noWorkers) {
    const refused = function DatabaseSync() {
      checkWorker("sqlite");
    };
    Reflect.defineProperty(sqlite, "DatabaseSync", {
      value: refused,
      writable: true,
      configurable: true,
      enumerable: true,
    });
  }
  const processTarget = process as unknown as Target;
  for (const name of ["binding", "_linkedBinding"]) {
    wrap(processTarget, name, (a) => checkWorker(`process.${name}:${String(a[0] ?? "")}`));
  }
  wrap(processTarget, "dlopen", (a) => checkWorker(`process.dlopen:${String(a[1] ?? "")}`));
  // Node ≥ 22.15 replaces the host with a program, which its permission model allows whenever any
  // child process is: the program is checked and resolved like a spawn's.
  wrap(processTarget, "execve", (a) => {
    a[0] = program(a[0]);
    // Its environment (`process.env` by default), as Node reads it — own keys — copied once.
    const given = a[2] === undefined ? realEnv : a[2];
    if (typeof given !== "object" || given === null) return; // Node refuses it
    const copy: Record<string, unknown> = {};
    for (const key of Object.keys(given)) copy[key] = (given as Record<string, unknown>)[key];
    for (const key in copy) {
      const value = copy[key];
      if (typeof value === "string") checkChildPair(`${key}=${value}`);
    }
    a[2] = copy;
  });
  // Variables from a file land in the real environment: the file is read like any other.
  wrap(processTarget, "loadEnvFile", (a) => {
    a[0] ??= ".env";
    checkArg(a, 0, "Read");
  });
  // A diagnostic report is a file Node writes itself, where `directory`/`filename` say, also on a
  // crash or a signal: none is written under a restriction.
  const report = process.report as unknown as Target | undefined;
  if (report) {
    wrap(report, "writeReport", () => checkWorker("process.report.writeReport"));
    for (const name of Reflect.ownKeys(report)) {
      const descriptor = Reflect.getOwnPropertyDescriptor(report, name);
      const set = descriptor?.set;
      if (!descriptor || !set) continue;
      Reflect.defineProperty(report, name, {
        ...descriptor,
        set(value: unknown) {
          checkWorker(`process.report.${String(name)}`);
          Reflect.apply(set, this, [value]);
        },
      });
    }
  }
  // A signal to another process (`_debugProcess` sends SIGUSR1: Node opens an inspector in the CLI).
  // The pid is read once: an object's `valueOf` could name the host here and the CLI to Node.
  for (const name of ["kill", "_kill", "_debugProcess"]) {
    wrap(processTarget, name, (a) => {
      const pid = Number(a[0]);
      a[0] = pid;
      if (pid !== OWN_PID) checkRun(`kill:${pid}`);
    });
  }
  // Another process's scheduling priority is as much its own business as a signal to it.
  wrap(os as unknown as Target, "setPriority", (a) => {
    const pid = a.length >= 2 ? Number(a[0]) : 0;
    if (a.length >= 2) a[0] = pid;
    if (pid !== 0 && pid !== OWN_PID) checkRun(`priority:${pid}`);
  });
  // Tracing writes its file (`node_trace.<n>.log` in the cwd) from Node's C++, past the broker and
  // Node's permission model: refused under a restriction, like a diagnostic report.
  const traceEvents = loadOptionalBuiltin("node:trace_events");
  if (traceEvents) wrap(traceEvents, "createTracing", () => checkWorker("trace_events"));
  wrap(inspector as unknown as Target, "open", () => checkWorker("inspector"));
  wrap(inspector.Session.prototype as unknown as Target, "connect", () => checkWorker("inspector"));
  wrap(inspector.Session.prototype as unknown as Target, "connectToMainThread", () =>
    checkWorker("inspector"),
  );
  wrap(moduleApi as unknown as Target, "register", () => checkWorker("module.register"));
  // A hook of the tool's would run before the broker's resolve hook, and could skip it.
  wrap(moduleApi as unknown as Target, "registerHooks", () => checkWorker("module.registerHooks"));
  // Node ≥ 22.1 writes V8's code cache into any directory named here, checked only by its
  // permission model (no line, and a write grant over the files the sandbox stands on would do).
  wrap(moduleApi as unknown as Target, "enableCompileCache", () => checkWorker("module.enableCompileCache"));
  // A heap snapshot shows every string of the host (its channel key among them), and so does a
  // query of the heap's objects (Node 22); V8 flags set at run time are, in Node's words,
  // undefined behaviour.
  for (const name of [
    "getHeapSnapshot",
    "writeHeapSnapshot",
    "setHeapSnapshotNearHeapLimit",
    "setFlagsFromString",
    "queryObjects",
  ])
    wrap(v8 as unknown as Target, name, () => checkWorker(`v8.${name}`));

  // ---- environment -------------------------------------------------------------------------
  const realEnv = process.env;
  // What generic code probes on any object (JSON.stringify, await, util.inspect, test matchers):
  // unless such a variable really exists, these are not environment reads, neither checked nor audited.
  const INSPECTION_KEYS = new Set([
    "toJSON",
    "then",
    "constructor",
    "toString",
    "toLocaleString",
    "valueOf",
    "hasOwnProperty",
    "isPrototypeOf",
    "propertyIsEnumerable",
    "__proto__",
    "inspect",
    "asymmetricMatch",
    "$$typeof",
    "nodeType",
    "@@__IMMUTABLE_ITERABLE__@@",
    "@@__IMMUTABLE_RECORD__@@",
  ]);
  // The tool process only has the granted variables: enumerating shows those, reading one
  // that is not there is a check (Deny under --sandbox, audited).
  const notAnEnvRead = (key: string): boolean => INSPECTION_KEYS.has(key) && !Object.hasOwn(realEnv, key);
  /**
   * Whether the reader looks like Node's own code. Only a hint: a frame's script name is the
   * tool's to choose (`//# sourceURL=node:…` on code it evaluates, a `filename` given to `vm`),
   * so it decides only whether a refusal is thrown, never whether a line is written — see
   * {@link checkEnvRead}.
   */
  const calledFromNodeInternals = () => {
    const stack = new Error().stack?.split("\n") ?? [];
    // [0] "Error", [1] this function, [2] checkEnvRead, [3] the proxy trap, then the reader — past
    // the built-ins in between (`Object.hasOwn`, `Reflect.get`: "at Proxy.hasOwn (<anonymous>)"),
    // which are nobody's: what called them decides.
    let reader = 4;
    while (stack[reader]?.endsWith("(<anonymous>)")) reader++;
    return /\(node:|at node:/.test(stack[reader] ?? "");
  };
  /**
   * A variable read: checked, audited, and refused by throwing when the tool reads it. A read that
   * looks like Node's own (colours, debug logs, a spawn copying the environment) never throws —
   * Node's code must not fail — and whoever chose the script name, it is audited too when it asks
   * about a variable that is not there, unless Node itself reads that name
   * ({@link NODE_OWN_VARIABLES}). One that is there is granted, and enumerating shows its value anyway.
   */
  const checkEnvRead = (key: string) => {
    if (!calledFromNodeInternals()) check("Environment", "Read", key);
    else if (!Object.hasOwn(realEnv, key) && !NODE_OWN_VARIABLES.has(key)) ask("Environment", "Read", key);
  };
  const envProxy = new Proxy(realEnv, {
    get(target, key, receiver) {
      if (typeof key === "string" && !notAnEnvRead(key)) checkEnvRead(key);
      return Reflect.get(target, key, receiver);
    },
    has(target, key) {
      if (typeof key === "string" && !notAnEnvRead(key)) checkEnvRead(key);
      return Reflect.has(target, key);
    },
    // `Object.getOwnPropertyDescriptor(process.env, name)` (and `Object.hasOwn`) probe a name as
    // much as reading it does; the granted ones, which enumerating shows anyway, pass unaudited.
    getOwnPropertyDescriptor(target, key) {
      if (typeof key === "string" && !Object.hasOwn(target, key) && !notAnEnvRead(key)) checkEnvRead(key);
      return Reflect.getOwnPropertyDescriptor(target, key);
    },
  });
  Reflect.defineProperty(process, "env", {
    value: envProxy,
    writable: true,
    configurable: true,
    enumerable: true,
  });
  // What the machine says of itself — its name, its addresses, its user — is read like a variable
  // (`os.<function>`, granted by `--allow-env os.hostname`): Node asks the system, not `process.env`.
  // `os.homedir()` reads the user's passwd entry only when `HOME` is not set (libuv's
  // `uv_os_homedir`); with it set, it answers the variable, which is granted. A diagnostic report
  // carries the host name and the interfaces too. `process.binding("os")` is refused above.
  const osTarget = os as unknown as Target;
  for (const name of ["hostname", "networkInterfaces", "userInfo"])
    wrap(osTarget, name, () => check("Environment", "Read", `os.${name}`));
  wrap(osTarget, "homedir", () => {
    if (!Object.hasOwn(realEnv, "HOME")) check("Environment", "Read", "os.homedir");
  });
  if (report)
    wrap(report, "getReport", () => {
      check("Environment", "Read", "os.hostname");
      check("Environment", "Read", "os.networkInterfaces");
    });

  moduleApi.syncBuiltinESMExports();
}
