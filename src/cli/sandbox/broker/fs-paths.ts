/**
 * The path checks of every `fs` call that names a file (sync, callback and promise forms): each
 * path argument read once and decided on by the CLI before Node sees it, entry calls pinned when
 * files are unrestricted (fs-pinned.ts). Under a file restriction the calls where a path could be
 * swapped after its check are taken further — fs-confirmed.ts, fs-stat.ts, fs-copy.ts,
 * fs-via-cli.ts — on top of these checks, which still run first.
 */
import fs from "node:fs";
import { resolve as resolvePath } from "node:path";
import { canonicalPathWith } from "../../permissions.ts";
import { type AnyFunction, type Broker, type Target, wrap } from "./context.ts";
import type { FileArgs } from "./fs-args.ts";
import { LINKED, MOVED, makeWrapPinned, REMOVED } from "./fs-pinned.ts";
import { cwdOriginal, nextTick } from "./originals.ts";

/** Installs the path checks on `fs` (and `process.chdir`). */
export function hookFsPathCalls(broker: Broker, files: FileArgs): void {
  const { guardClose } = broker;
  const { checkArg, checkExists } = files;
  const patchFsLike = pathChecks(broker, files);
  const streamFd = (a: unknown[]) => {
    const o = a[1];
    if (typeof o === "object" && o !== null) guardClose((o as { fd?: unknown }).fd);
  };
  const fsTarget = fs as unknown as Target;
  const nativeRealpath = fs.realpath.native;
  const nativeRealpathSync = fs.realpathSync.native;
  patchFsLike(fsTarget, ["", "Sync"]);
  // Node 22 copies a directory in C++ when `cpSync` has no filter — symlinks made (which Node
  // otherwise refuses) and followed where the destination has one, past every check but the two
  // top-level paths: a filter keeps each entry on Node's JavaScript path, through the checked calls.
  wrap(fsTarget, "cpSync", (a) => {
    const o = a[2];
    const options = typeof o === "object" && o !== null ? { ...(o as Record<string, unknown>) } : {};
    options.filter ??= () => true;
    a[2] = options;
  });
  wrap(fsTarget, "existsSync", checkExists, () => false);
  wrap(fsTarget, "exists", checkExists, (a) => {
    const callback = a.at(-1);
    if (typeof callback === "function") nextTick(callback as AnyFunction, false);
    return undefined;
  });
  wrap(fs.realpath as unknown as Target, "native", (a) => checkArg(a, 0, "Read"));
  wrap(fs.realpathSync as unknown as Target, "native", (a) => checkArg(a, 0, "Read"));
  (fs.realpath as unknown as Target).native ??= nativeRealpath;
  (fs.realpathSync as unknown as Target).native ??= nativeRealpathSync;
  wrap(fsTarget, "createReadStream", (a) => {
    streamFd(a);
    checkArg(a, 0, "Read");
  });
  wrap(fsTarget, "createWriteStream", (a) => {
    streamFd(a);
    checkArg(a, 0, "Write");
  });
  wrap(process as unknown as Target, "chdir", (a) => checkArg(a, 0, "Read"));
}

/** Installs the path checks on `fs.promises`. */
export function hookFsPromisesPathCalls(broker: Broker, files: FileArgs): void {
  const fsTarget = fs as unknown as Target;
  const patchFsLike = pathChecks(broker, files);
  wrap(fsTarget, "unwatchFile", () => {});
  patchFsLike(fs.promises as unknown as Target, [""]);
}

/** Checks the path calls `fs` and `fs.promises` share, on `target`, for each suffix (`Sync`, …). */
function pathChecks(broker: Broker, files: FileArgs): (target: Target, suffixes: string[]) => void {
  const { check, options } = broker;
  const { toPath, checkPath, checkArg, checkCopy } = files;
  const wrapPinned = makeWrapPinned(broker);
  const fsRestricted = () => options.fsRestricted;
  const READ_1 = [
    "access",
    "readdir",
    "readlink",
    "realpath",
    "stat",
    "lstat",
    "statfs",
    "opendir",
    "watch",
    "watchFile",
    "openAsBlob",
    "glob",
  ];
  const WRITE_1 = ["chmod", "chown", "lchown", "lchmod", "lutimes", "utimes", "mkdtemp"];
  /**
   * A glob's pattern, or each of its patterns (Node 22 takes an array), taken where the glob matches
   * them: under its `cwd` option when it has one (read once, checked, and passed on as read), else
   * the working directory. The walk itself goes through the checked `readdir`/`lstat` as well.
   */
  const checkPatterns = (a: unknown[]) => {
    let base: string | null = null;
    const o = a[1];
    if (typeof o === "object" && o !== null) {
      const { cwd, ...rest } = o as Record<string, unknown>;
      const dir = cwd === undefined ? null : toPath(cwd);
      a[1] = cwd === undefined ? rest : { ...rest, cwd: dir ?? cwd };
      if (dir !== null) {
        checkPath(dir, "Read");
        base = resolvePath(cwdOriginal(), dir);
      }
    }
    const many = Array.isArray(a[0]);
    const patterns = many ? [...(a[0] as unknown[])] : [a[0]];
    for (let i = 0; i < patterns.length; i++) {
      const pattern = toPath(patterns[i]);
      if (pattern !== null) patterns[i] = pattern;
      checkPath(base !== null && pattern !== null ? resolvePath(base, pattern) : patterns[i], "Read");
    }
    a[0] = many ? patterns : patterns[0];
  };
  const patchFsLike = (target: Target, suffixes: string[]) => {
    for (const suffix of suffixes) {
      for (const base of READ_1)
        wrap(target, base + suffix, (a) => (base === "glob" ? checkPatterns(a) : checkArg(a, 0, "Read")));
      for (const base of WRITE_1) wrap(target, base + suffix, (a) => checkArg(a, 0, "Write"));
      wrap(target, `cp${suffix}`, checkCopy);
      for (const base of ["rename", "link"]) {
        wrapPinned(target, base, suffix, MOVED, (a) => {
          checkArg(a, 0, "Read");
          checkArg(a, 0, "Write");
          checkArg(a, 1, "Write");
        });
      }
      for (const base of ["mkdir", "rm", "rmdir", "unlink"])
        wrapPinned(target, base, suffix, REMOVED, (a) => checkArg(a, 0, "Write"));
      wrapPinned(target, "symlink", suffix, LINKED, (a) => {
        const link = toPath(a[1]);
        const linkTarget = toPath(a[0]);
        if (link !== null) a[1] = link;
        if (linkTarget !== null) a[0] = linkTarget;
        // Node's permission model refuses every symlink unless all of the file system is granted:
        // refuse it here first, so no Allow line is written for a link that is never made.
        if (fsRestricted()) check("FileSystem", "Write", link ?? "symlink", true);
        if (link !== null && linkTarget !== null) {
          checkPath(
            canonicalPathWith(
              linkTarget,
              canonicalPathWith(`${link}/..`, cwdOriginal(), (p) => p),
              (p) => p,
            ),
            "Read",
          );
        }
        checkArg(a, 1, "Write");
      });
    }
  };
  return patchFsLike;
}
