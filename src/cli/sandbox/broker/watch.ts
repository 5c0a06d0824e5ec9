/**
 * Watching a file.
 *
 * Under a file restriction a watched file is polled by the broker, each poll a look at what a
 * descriptor the CLI confirmed names (watchers.ts; by the checked path where there is no `O_PATH`),
 * and `fs.watch` is refused: an inotify watch is tied to what the path named when Node added it,
 * after the check, and nothing in Node ties it to what was checked (Node's permission model
 * refuses the host the `/proc/self/fd` path of a confirmed descriptor); a watcher's class would
 * also start one on any path, past the broker and Node's model alike.
 */
import fs from "node:fs";
import { resolve as resolvePath } from "node:path";
import { PermissionDeniedError } from "../../permissions.ts";
import { makeWatchFile } from "../watchers.ts";
import { type AnyFunction, type Broker, replace, type Target } from "./context.ts";
import type { FileArgs } from "./fs-args.ts";
import type { ConfirmedOpens, Opening } from "./fs-confirmed.ts";
import {
  closeSyncOriginal,
  cwdOriginal,
  fstatSyncOriginal,
  O_PATH,
  openSyncOriginal,
  statSyncOriginal,
} from "./originals.ts";

/** Why `fs.watch` is refused under a file restriction (appended to the refusal's message). */
const WATCH_REFUSED =
  " (fs.watch is not available under a file restriction: a watch cannot be tied to what was checked; poll with fs.watchFile or fs.stat)";

/** Installs the polling `fs.watchFile` and refuses `fs.watch`, under a file restriction. */
export function hookWatching(broker: Broker, files: FileArgs, opens: ConfirmedOpens): void {
  const { check, refuseIfDenied, options } = broker;
  const { toPath, fileResource, checkArg } = files;
  const { refusalOf } = opens;
  const fsTarget = fs as unknown as Target;
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
}
