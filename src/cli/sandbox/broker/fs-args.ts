/**
 * How the broker reads a file call's arguments: the path an argument names, read once (a URL or
 * bytes become the string Node then gets, so a getter cannot name one file to the check and another
 * to Node), the canonical path the CLI decides on, and the checks several calls share. Also where
 * `FileHandle.prototype` is learnt, from the first handle the broker sees, and locked: a FileHandle
 * passed as a path is guarded by its descriptor instead.
 */
import { canonicalPathWith, PermissionDeniedError } from "../../permissions.ts";
import type { AnyFunction, Broker, Target } from "./context.ts";
import {
  cwdOriginal,
  decodeBytes,
  FS_CONSTANTS,
  fileUrlToPath,
  hasInstanceOriginal,
  isProxy,
  realpathOriginal,
} from "./originals.ts";

/** The argument checks of the file calls (see {@link createFileArgs}). */
export interface FileArgs {
  /** Makes a FileHandle's number held until its close is done (and learns the class from the first). */
  learnFileHandle: (handle: object) => object;
  /** The path a file call's argument names, read once; null for what names none. */
  toPath: (value: unknown) => string | null;
  /** The canonical path a file check names, and whether resolving it went where Node hides things. */
  fileResource: (path: string) => { resource: string; escaped: boolean };
  checkPath: (value: unknown, action: "Read" | "Write") => void;
  /** Checks argument `index` and passes on the path string that was checked. */
  checkArg: (a: unknown[], index: number, action: "Read" | "Write") => void;
  /** Whether open flags (a number or Node's letters) write. */
  isWriteFlag: (flags: unknown) => boolean;
  /** `readFile`'s checks: its flag may write. */
  checkReadFile: (a: unknown[]) => void;
  /** A copy's: the source read, the destination written. */
  checkCopy: (a: unknown[]) => void;
  /** `exists`'s: a denial thrown (answered false by the caller), what is no path made undefined. */
  checkExists: (a: unknown[]) => void;
  /** The first argument written. */
  checkWrite: (a: unknown[]) => void;
}

/** The argument checks of one install. */
export function createFileArgs(broker: Broker): FileArgs {
  const { check, guardFd, hold, options } = broker;
  // `FileHandle.prototype`, learnt from the first handle `fs.promises.open` makes (the class is not
  // exported, and that is the only way tool code gets one): no object is a FileHandle before.
  let fileHandle: object | undefined;
  let fileHandleFd: AnyFunction | undefined;
  const learnFileHandle = (handle: object) => {
    if (fileHandle === undefined) setUpFileHandle(handle);
    const fd = fileHandleFd ? Reflect.apply(fileHandleFd, handle, []) : undefined;
    const closeOwn = (handle as Target).close;
    if (typeof fd !== "number" || fd < 0 || typeof closeOwn !== "function") return handle;
    // Its number is its own until its close is done (`close` is each handle's own function).
    const release = hold(fd);
    Reflect.defineProperty(handle, "close", {
      value: function close(this: unknown) {
        return (Reflect.apply(closeOwn as AnyFunction, this, []) as Promise<void>).then(
          (value) => {
            release();
            return value;
          },
          (error) => {
            release();
            throw error;
          },
        );
      },
      writable: false,
      configurable: false,
      enumerable: true,
    });
    return handle;
  };
  const setUpFileHandle = (handle: object) => {
    fileHandle = Object.getPrototypeOf(handle) as object;
    fileHandleFd = Reflect.getOwnPropertyDescriptor(fileHandle, "fd")?.get as AnyFunction | undefined;
    // Node itself tells a FileHandle by `instanceof`: tool code must not redefine that answer.
    Reflect.defineProperty(fileHandle.constructor, Symbol.hasInstance, {
      value: hasInstanceOriginal,
      writable: false,
      configurable: false,
    });
    // Node's permission model refuses `futimes`, `fchmod` and `fchown` (a descriptor opened for
    // reading would do), but Node 20 not a FileHandle's `utimes`: refused alike, as a write.
    if (options.fsRestricted) {
      for (const name of ["utimes", "chmod", "chown"]) {
        Reflect.defineProperty(fileHandle, name, {
          value: function (this: object) {
            try {
              const fd = fileHandleFd ? Reflect.apply(fileHandleFd, this, []) : undefined;
              check("FileSystem", "Write", `fd:${String(fd)}`, true);
            } catch (error) {
              return Promise.reject(error);
            }
          },
          writable: false,
          configurable: false,
        });
      }
    }
    Object.freeze(fileHandle);
  };
  /**
   * The path a file call's argument names, read once. Node takes any object that looks like a URL
   * (`href` and `protocol`, nothing more) as a file URL, so every object but a real FileHandle
   * (whose descriptor is guarded instead) is read here as one — what is not a file URL fails the
   * call, as Node would — and the call gets the string, never the object again.
   */
  const toPath = (value: unknown): string | null => {
    if (typeof value === "string") return value;
    if (value instanceof Uint8Array) return decodeBytes(value);
    if ((typeof value !== "object" && typeof value !== "function") || value === null) return null;
    if (fileHandle !== undefined && !isProxy(value) && Object.getPrototypeOf(value) === fileHandle) {
      if (fileHandleFd) guardFd(Reflect.apply(fileHandleFd, value, []));
      return null;
    }
    return fileUrlToPath(value as URL);
  };
  /** The canonical path a file check names, and whether resolving it went where Node hides things. */
  const fileResource = (path: string): { resource: string; escaped: boolean } => {
    try {
      return { resource: canonicalPathWith(path, cwdOriginal(), realpathOriginal), escaped: false };
    } catch {
      // Resolving went through a place Node's permission model hides: out of the jail.
      return { resource: canonicalPathWith(path, cwdOriginal(), (p) => p), escaped: true };
    }
  };
  const checkPath = (value: unknown, action: "Read" | "Write") => {
    // `readFile`, `writeFile`, `appendFile` also take a descriptor (Node 22 writes a string to it
    // straight from C++, past every fd function).
    if (typeof value === "number") guardFd(value);
    const path = toPath(value);
    if (path === null) return;
    const { resource, escaped } = fileResource(path);
    check("FileSystem", action, resource, escaped);
  };
  /**
   * Checks argument `index` and passes on the path string that was checked: a URL (whose getters
   * tool code may override) or bytes are read once, here, not again by Node after the check.
   */
  const checkArg = (a: unknown[], index: number, action: "Read" | "Write") => {
    const path = toPath(a[index]);
    if (path !== null) a[index] = path;
    checkPath(a[index], action);
  };
  const isWriteFlag = (flags: unknown): boolean => {
    if (flags === undefined || flags === null) return false;
    if (typeof flags === "number") {
      const c = FS_CONSTANTS;
      return (flags & (c.O_WRONLY | c.O_RDWR | c.O_CREAT | c.O_TRUNC | c.O_APPEND)) !== 0;
    }
    return /[wa+]/.test(String(flags));
  };
  /**
   * `readFile` opens with the `flag` of its options, which may truncate (`w`) or create (`a`) the
   * file: such a flag is a write too. The flag is read once and Node gets the options as checked.
   */
  const checkReadFile = (a: unknown[]) => {
    checkArg(a, 0, "Read");
    const o = a[1];
    if (typeof o !== "object" || o === null) return;
    const { flag, ...rest } = o as Record<string, unknown>;
    a[1] = flag === undefined ? rest : { ...rest, flag };
    if (isWriteFlag(flag)) checkArg(a, 0, "Write");
  };
  const checkCopy = (a: unknown[]) => {
    checkArg(a, 0, "Read");
    checkArg(a, 1, "Write");
  };
  // `exists` answers, it does not throw: a path the tool may not read does not exist for it (audited
  // as Deny), and neither does one that is not a path (Node's own answer).
  const checkExists = (a: unknown[]) => {
    try {
      checkArg(a, 0, "Read");
    } catch (error) {
      if (error instanceof PermissionDeniedError) throw error;
      a[0] = undefined;
    }
  };
  const checkWrite = (a: unknown[]) => checkArg(a, 0, "Write");
  return {
    learnFileHandle,
    toPath,
    fileResource,
    checkPath,
    checkArg,
    isWriteFlag,
    checkReadFile,
    checkCopy,
    checkExists,
    checkWrite,
  };
}
