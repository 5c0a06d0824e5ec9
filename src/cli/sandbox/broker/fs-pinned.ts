/**
 * Calls on a directory entry (`rename`, `link`, `unlink`, `rm`, `rmdir`, `mkdir`, `symlink`) with
 * files unrestricted: the entry's directory is opened and decided on first, and Node acts through
 * `/proc/self/fd/<dir>/<name>`, so no directory swapped on the path after the check can redirect
 * the call (to the audit log, say). Under a file restriction fs-via-cli.ts takes these calls.
 */
import fs from "node:fs";
import { basename, dirname, resolve as resolvePath } from "node:path";
import { type PermissionAction, PermissionDeniedError } from "../../permissions.ts";
import { type AnyFunction, allows, type Broker, replace, type Target, wrap } from "./context.ts";
import { closeSyncOriginal, cwdOriginal, FS_CONSTANTS, openSyncOriginal } from "./originals.ts";

// `rename`, `link`, `unlink`, `rm`, `rmdir`, `mkdir` and `symlink` act on a name in a directory,
// and a directory on the path can be swapped after the check (for one that links elsewhere: the
// audit log moved, erased or hard-linked where it can be written). With files unrestricted (so
// Node's permission model lets the host name `/proc/self/fd`), the directory is opened first, the
// CLI decides on its real path with the entry's name, and Node gets `/proc/self/fd/<dir>/<name>`,
// which no swap above the entry can redirect (none of these follows the entry itself if it is a
// link). Under a file restriction Node would refuse that path; there the tool can make no link.

/** Which arguments name an entry, and what is done to it. */
export type Entries = [number, PermissionAction[]][];
export const MOVED: Entries = [
  [0, ["Read", "Write"]],
  [1, ["Write"]],
];
export const REMOVED: Entries = [[0, ["Write"]]];
export const LINKED: Entries = [[1, ["Write"]]];

/** `wrap`, and, when pinning, the call run on its pinned entries (see {@link makeWrapPinned}). */
export type WrapPinned = (
  target: Target,
  base: string,
  suffix: string,
  entries: Entries,
  guard: (a: unknown[]) => void,
) => void;

/** The pinning `wrap` of one install. */
export function makeWrapPinned(broker: Broker): WrapPinned {
  const { ask, options } = broker;
  const pinning = !options.fsRestricted;
  interface Pin {
    path: string;
    fd: number;
  }
  /** `path`'s directory opened and decided on with the entry's name; undefined if there is none. */
  const pinEntry = (path: string, actions: PermissionAction[]): Pin | undefined => {
    const absolute = resolvePath(cwdOriginal(), path);
    const name = basename(absolute);
    if (name === "") return undefined;
    let fd: number;
    try {
      fd = openSyncOriginal(dirname(absolute), FS_CONSTANTS.O_RDONLY | FS_CONSTANTS.O_DIRECTORY);
    } catch (error) {
      // No directory to pin: Node reports what is missing. Any other failure fails the call — tool
      // code can bring one about (every descriptor taken, a directory it may not list), and the
      // call unpinned would go where a directory swapped after its check points.
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") return undefined;
      throw error;
    }
    for (const action of actions) {
      const answer = ask("FileSystem", action, `fd:${fd}/${name}`, { fd, name, peek: true });
      if (!allows(answer)) {
        closeSyncOriginal(fd);
        throw new PermissionDeniedError("FileSystem", action, answer.r);
      }
    }
    return { path: `/proc/self/fd/${fd}/${name}`, fd };
  };
  /** Pins the entries of `a` (after its check): the pinned paths with the tool's, and the release. */
  const pinAll = (a: unknown[], entries: Entries): [[string, string][], () => void] => {
    const pins: Pin[] = [];
    const names: [string, string][] = [];
    const release = () => {
      for (const pin of pins) closeSyncOriginal(pin.fd);
    };
    try {
      for (const [index, actions] of entries) {
        const given = a[index];
        if (typeof given !== "string") continue;
        const pin = pinEntry(given, actions);
        if (pin === undefined) continue;
        pins.push(pin);
        names.push([pin.path, given]);
        a[index] = pin.path;
      }
    } catch (error) {
      release();
      throw error;
    }
    return [names, release];
  };
  /** `value` (an error, or a result such as `mkdir`'s path) naming the tool's paths, not the pinned. */
  const unpinned = (value: unknown, names: [string, string][]): unknown => {
    if (typeof value === "string") {
      let text = value;
      for (const [pinned, given] of names) text = text.split(pinned).join(given);
      return text;
    }
    if (typeof value !== "object" || value === null) return value;
    const fields = value as Record<string, unknown>;
    for (const key of ["message", "path", "dest"])
      if (typeof fields[key] === "string") fields[key] = unpinned(fields[key], names);
    return value;
  };
  /** `wrap` with `guard`, and, when pinning, the call run on its pinned entries (sync, callback, promise). */
  const wrapPinned = (
    target: Target,
    base: string,
    suffix: string,
    entries: Entries,
    guard: (a: unknown[]) => void,
  ) => {
    if (!pinning) return wrap(target, base + suffix, guard);
    const promises = target === (fs.promises as unknown as Target);
    replace(
      target,
      base + suffix,
      (original) =>
        function (this: unknown, ...a: unknown[]) {
          guard(a);
          const callback = a[a.length - 1];
          if (!promises && suffix === "" && typeof callback !== "function")
            return Reflect.apply(original, this, a);
          const [names, release] = pinAll(a, entries);
          const restore = (value: unknown) => unpinned(value, names);
          if (!promises && suffix === "")
            a[a.length - 1] = (...results: unknown[]) => {
              release();
              Reflect.apply(
                callback as AnyFunction,
                undefined,
                results.map((result) => restore(result)),
              );
            };
          let value: unknown;
          try {
            value = Reflect.apply(original, this, a);
          } catch (error) {
            release();
            throw restore(error);
          }
          if (suffix === "Sync") {
            release();
            return restore(value);
          }
          if (!promises) return value;
          return (value as Promise<unknown>).then(
            (result) => {
              release();
              return restore(result);
            },
            (error) => {
              release();
              throw restore(error);
            },
          );
        },
    );
  };
  return wrapPinned;
}
