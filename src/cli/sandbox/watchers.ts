/**
 * `fs.watchFile` and `fs.unwatchFile` for the broker under a file restriction. Node checks a watched
 * file once, by its path, and then polls that path every interval (libuv's `uv_fs_poll`, by name):
 * a directory swapped on the path after the check — by the tool itself, between two polls — has
 * Node report the stats of whatever the path names then, outside the grants too. Its watcher also
 * hands out its class, whose `start` polls any path past every check. So the broker polls instead:
 * each poll is `look`, which asks what the path names now the way `stat` does (a descriptor the CLI
 * confirms); what is out of the grants reads as a file that is not there (zero-filled stats, as
 * Node reports a missing file). The watcher is an EventEmitter like Node's `StatWatcher` (`change`
 * with the current and previous stats, `stop`, `ref`, `unref`), with nothing that starts a poll.
 * Runs inside the tool process only; every function it uses is captured at install.
 */
import { EventEmitter } from "node:events";
import type { BigIntStats, Stats } from "node:fs";

type AnyStats = Stats | BigIntStats;

/** What the broker gives the watchers. */
export interface WatchFileDeps {
  /** Checks the tool's path argument `a[0]` as a read (throws the refusal) and returns it absolute. */
  checkPath: (a: unknown[]) => string;
  /** The tool's path argument `a[0]`, read once, made absolute (unchecked: nothing is looked at). */
  absolute: (a: unknown[]) => string;
  /** What `path` names now, as the tool may see it; undefined when missing or out of the grants. */
  look: (path: string, bigint: boolean) => AnyStats | undefined;
  /** Stats of anything, whose shape a zero-filled copy takes (numbers, bigints, dates). */
  sample: (bigint: boolean) => AnyStats;
}

/** The fields libuv compares between two polls (`statbuf_eq`). */
const COMPARED = ["dev", "ino", "mode", "uid", "gid", "size", "mtimeMs", "ctimeMs", "birthtimeMs"] as const;

const setIntervalOriginal = setInterval;
const clearIntervalOriginal = clearInterval;
const nextTick = process.nextTick.bind(process);
const emit = EventEmitter.prototype.emit;
const listenerCount = EventEmitter.prototype.listenerCount;
const addListener = EventEmitter.prototype.addListener;
const removeListener = EventEmitter.prototype.removeListener;
const removeAllListeners = EventEmitter.prototype.removeAllListeners;
const objectKeys = Object.keys;
const objectCreate = Object.create;
const getPrototypeOf = Object.getPrototypeOf;
const DateClass = Date;

/** The broker's `fs.watchFile` and `fs.unwatchFile`. */
export function makeWatchFile(deps: WatchFileDeps): {
  watchFile: (...a: unknown[]) => EventEmitter;
  unwatchFile: (...a: unknown[]) => void;
} {
  /** What a watcher polls; kept here, out of the tool's reach. */
  interface Poll {
    path: string;
    bigint: boolean;
    timer: NodeJS.Timeout;
    last: AnyStats | undefined;
  }
  const polls = new WeakMap<object, Poll>();
  const watchers = new Map<string, EventEmitter>();
  const zeros = new Map<boolean, AnyStats>();
  /** Zero-filled stats, Node's answer for a file that is not there. */
  const zero = (bigint: boolean): AnyStats => {
    const known = zeros.get(bigint);
    if (known) return known;
    const sample = deps.sample(bigint) as unknown as Record<string, unknown>;
    const filled = objectCreate(getPrototypeOf(sample)) as Record<string, unknown>;
    for (const key of objectKeys(sample)) {
      const value = sample[key];
      filled[key] = typeof value === "bigint" ? 0n : value instanceof DateClass ? new DateClass(0) : 0;
    }
    zeros.set(bigint, filled as unknown as AnyStats);
    return filled as unknown as AnyStats;
  };
  const same = (a: AnyStats | undefined, b: AnyStats | undefined): boolean => {
    if (a === undefined || b === undefined) return a === b;
    const x = a as unknown as Record<string, unknown>;
    const y = b as unknown as Record<string, unknown>;
    return COMPARED.every((key) => x[key] === y[key]);
  };
  const stop = (watcher: EventEmitter) => {
    const poll = polls.get(watcher);
    if (!poll) return;
    polls.delete(watcher);
    clearIntervalOriginal(poll.timer);
    if (watchers.get(poll.path) === watcher) watchers.delete(poll.path);
    nextTick(() => Reflect.apply(emit, watcher, ["stop"]));
  };

  /** Node's `StatWatcher` as the tool sees it: no `start`, so no poll but through `watchFile`. */
  class StatWatcher extends EventEmitter {
    stop(): void {
      stop(this);
    }
    ref(): this {
      polls.get(this)?.timer.ref();
      return this;
    }
    unref(): this {
      polls.get(this)?.timer.unref();
      return this;
    }
  }
  const StatWatcherPrototype = StatWatcher.prototype;
  Object.freeze(StatWatcherPrototype);

  const tick = (watcher: EventEmitter, poll: Poll) => {
    const current = deps.look(poll.path, poll.bigint);
    if (same(current, poll.last)) return;
    const previous = poll.last;
    poll.last = current;
    Reflect.apply(emit, watcher, ["change", current ?? zero(poll.bigint), previous ?? zero(poll.bigint)]);
  };

  function watchFile(...a: unknown[]): EventEmitter {
    const path = deps.checkPath(a);
    let options = a[1];
    let listener = a[2];
    if (options === null || typeof options !== "object") {
      listener = options;
      options = undefined;
    }
    const o = (options ?? {}) as { interval?: unknown; persistent?: unknown; bigint?: unknown };
    const interval = o.interval === undefined ? 5007 : Number(o.interval);
    const persistent = o.persistent === undefined ? true : Boolean(o.persistent);
    const bigint = Boolean(o.bigint);
    if (typeof listener !== "function") {
      const error = new TypeError(
        `The "listener" argument must be of type function. Received ${listener === null ? "null" : typeof listener}`,
      ) as TypeError & { code: string };
      error.code = "ERR_INVALID_ARG_TYPE";
      throw error;
    }
    let watcher = watchers.get(path);
    if (watcher === undefined) {
      const created = new StatWatcher();
      const poll: Poll = {
        path,
        bigint,
        last: deps.look(path, bigint),
        timer: setIntervalOriginal(
          () => tick(created, poll),
          Number.isFinite(interval) && interval > 0 ? interval : 5007,
        ),
      };
      if (!persistent) poll.timer.unref();
      polls.set(created, poll);
      watchers.set(path, created);
      // Node reports a file that is not there at once (current and previous both zero-filled).
      if (poll.last === undefined)
        nextTick(() => {
          if (polls.get(created) === poll && poll.last === undefined)
            Reflect.apply(emit, created, ["change", zero(bigint), zero(bigint)]);
        });
      watcher = created;
    }
    Reflect.apply(addListener, watcher, ["change", listener]);
    return watcher;
  }

  function unwatchFile(...a: unknown[]): void {
    const path = deps.absolute(a);
    const watcher = watchers.get(path);
    if (watcher === undefined) return;
    if (typeof a[1] === "function") Reflect.apply(removeListener, watcher, ["change", a[1]]);
    else Reflect.apply(removeAllListeners, watcher, ["change"]);
    if (Reflect.apply(listenerCount, watcher, ["change"]) === 0) stop(watcher);
  }

  return { watchFile, unwatchFile };
}
