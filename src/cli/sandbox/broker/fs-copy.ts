/**
 * Copies and truncation of a path, made on descriptors the CLI confirmed (fs-confirmed.ts): a
 * directory or link swapped on either path after its check reads or writes nothing out of the grants.
 */
import fs from "node:fs";
import { type AnyFunction, replace, type Target } from "./context.ts";
import type { FileArgs } from "./fs-args.ts";
import type { ConfirmedOpens, Opening } from "./fs-confirmed.ts";
import {
  allocBuffer,
  closeSyncOriginal,
  FS_CONSTANTS,
  fstatSyncOriginal,
  ftruncateSyncOriginal,
  nextTick,
  readSyncOriginal,
  writeSyncOriginal,
} from "./originals.ts";

/** How much a copy (or a blob) reads at a time. */
export const COPY_CHUNK = 64 * 1024;

/** Installs the confirmed `copyFile` and `truncate` (sync, callback, promise). */
export function hookConfirmedCopies(files: FileArgs, opens: ConfirmedOpens): void {
  const { checkCopy, checkWrite } = files;
  const { openConfirmedSync, openConfirmedHandle } = opens;
  const fsTarget = fs as unknown as Target;
  const promisesTarget = fs.promises as unknown as Target;
  // A copy reads one confirmed descriptor into another (Node's copies by path: `COPYFILE_FICLONE`
  // then makes no reflink, and `COPYFILE_FICLONE_FORCE` copies rather than fail); the new file gets
  // the source's mode, as Node's copy gives it.
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
}
