/**
 * The descriptors tool code may not touch: the host's own pipes to the CLI (never written, read or
 * closed) and the numbers held — a live FileHandle's, or one the broker opened and the CLI
 * confirmed, in use across ticks — which a close by number would hand to the next open. Guards
 * every `fs` call that takes a descriptor, closes at once (not on libuv's pool), and guards a
 * socket made on a descriptor (`new net.Socket({ fd })`) and a TTY stream (`new tty.ReadStream(fd)`).
 */
import fs from "node:fs";
import net from "node:net";
import tty from "node:tty";
import { type AnyFunction, type Broker, replace, type Target, wrap } from "./context.ts";
import { closeSyncOriginal, nextTick } from "./originals.ts";

/** Installs the descriptor guards. */
export function hookDescriptors(broker: Broker): void {
  const { guardFd, guardClose } = broker;
  const FD_FUNCTIONS = [
    "close",
    "write",
    "writev",
    "read",
    "readv",
    "fstat",
    "fsync",
    "fdatasync",
    "ftruncate",
    "fchmod",
    "fchown",
    "futimes",
  ];
  for (const base of FD_FUNCTIONS)
    for (const name of [base, `${base}Sync`]) wrap(fs as unknown as Target, name, (a) => guardFd(a[0]));
  wrap(fs as unknown as Target, "closeSync", (a) => guardClose(a[0]));
  // A close the tool queues runs on libuv's pool, later, when a thread is free — also while the
  // broker holds a descriptor it opened and the CLI confirmed (a synchronous call blocks only this
  // thread, not the pool): a close of that number, queued before it was opened, and an open of the
  // tool's landing on it would have the broker read, write or truncate another file than the one
  // confirmed. So `fs.close` closes at once, here, and answers on a later tick, as Node would.
  replace(
    fs as unknown as Target,
    "close",
    (original) =>
      function close(this: unknown, ...a: unknown[]) {
        const callback = a[1];
        if (callback !== undefined && typeof callback !== "function") return Reflect.apply(original, this, a);
        guardClose(a[0]);
        try {
          closeSyncOriginal(a[0] as number);
        } catch (error) {
          // Not a descriptor at all: thrown now, as Node does; a failed close goes to the callback.
          if (typeof (error as NodeJS.ErrnoException).errno !== "number") throw error;
          nextTick(
            callback === undefined
              ? () => {
                  throw error;
                }
              : (callback as AnyFunction),
            error,
          );
          return;
        }
        if (callback !== undefined) nextTick(callback as AnyFunction, null);
      },
  );
  const OriginalSocket = net.Socket;
  const socketProxy = new Proxy(OriginalSocket, {
    construct(target, args, newTarget) {
      const o = args[0];
      if (typeof o === "object" && o !== null) guardFd((o as { fd?: unknown }).fd);
      return Reflect.construct(target, args, newTarget);
    },
    apply(target, thisArg, args) {
      const o = args[0];
      if (typeof o === "object" && o !== null) guardFd((o as { fd?: unknown }).fd);
      return Reflect.apply(target, thisArg, args);
    },
  });
  for (const name of ["Socket", "Stream"])
    Reflect.defineProperty(net, name, {
      value: socketProxy,
      writable: true,
      configurable: true,
      enumerable: true,
    });
  // A TTY handle takes its descriptor in its constructor, past the handles' guarded `open`
  // (net-handles.ts), and libuv makes one on any pipe: `tty.ReadStream(4)` read the calls, and
  // `tty.WriteStream(5).destroy()` closed the answers pipe under the host. The stream classes are the
  // only route to that handle: each is guarded, and its prototype names the guarded one as its
  // `constructor`, for good. Node itself refuses a descriptor that is not a number.
  for (const name of ["ReadStream", "WriteStream"]) {
    const Original = (tty as unknown as Target)[name] as AnyFunction & { prototype: object };
    const guarded = new Proxy(Original, {
      construct(target, args, newTarget) {
        guardClose(args[0]);
        return Reflect.construct(target, args, newTarget);
      },
      apply(target, thisArg, args) {
        guardClose(args[0]);
        return Reflect.apply(target, thisArg, args);
      },
    });
    Reflect.defineProperty(Original.prototype, "constructor", {
      value: guarded,
      writable: false,
      configurable: false,
    });
    Reflect.defineProperty(tty, name, {
      value: guarded,
      writable: true,
      configurable: true,
      enumerable: true,
    });
  }
}
