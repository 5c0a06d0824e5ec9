/**
 * How many of one app's row statements an isolate sends to the shared database at once. The rate
 * limits count calls, and a call may hold a Postgres backend for up to the 8 s deadline, so an app's
 * callers could otherwise keep as many backends busy as they have calls in flight. Past
 * `inFlight` statements an app's next ones wait in a FIFO queue (no database cost: a waiter holds
 * only its request), at most `waiting` of them and each at most `waitMs`; past that the call is
 * refused with 429 `too_many_concurrent_requests`. Per isolate and in memory: no round trip, O(1)
 * per statement, one map entry per app with statements running or waiting (dropped at zero).
 * The data service holds the isolate's gate (src/data/service.ts `runRows`).
 */
import { AppError } from "../errors.ts";

/** The bounds of one app's statements in one isolate. */
export interface SlotLimits {
  /** Statements running at once. */
  inFlight: number;
  /** Statements waiting for a slot at once. */
  waiting: number;
  /** Longest wait for a slot, in ms. */
  waitMs: number;
}

/**
 * The isolate's bounds (README "Decisions", per-app database concurrency). 16 running: a backend
 * each, a sixth of the pool of Neon's smallest compute (≈ 94), and at ≈ 16 ms a statement still the
 * app's whole rate budget (1,000 calls a second) from one isolate. 64 waiting and 8 s (one statement
 * deadline: every running statement has ended by then) absorb a burst — a JSON-RPC batch, a page
 * of parallel SDK calls — without refusing it.
 */
export const APP_SLOT_LIMITS: SlotLimits = { inFlight: 16, waiting: 64, waitMs: 8_000 };

/** Seconds a refused caller is told to wait: statements are short, slots free up quickly. */
export const SLOTS_RETRY_AFTER_SECONDS = 1;

/** 429 `too_many_concurrent_requests`, rendered with a `Retry-After` header. */
export class TooManyConcurrentError extends AppError {
  override readonly headers = { "retry-after": String(SLOTS_RETRY_AFTER_SECONDS) };

  constructor(limits: SlotLimits, reason: "queue full" | "wait over") {
    super(
      429,
      "too_many_concurrent_requests",
      reason === "queue full"
        ? `this app already has ${limits.inFlight} database calls running and ${limits.waiting} waiting here; retry in ${SLOTS_RETRY_AFTER_SECONDS} s, or send fewer calls at once`
        : `no database slot for this app within ${limits.waitMs / 1000} s (${limits.inFlight} calls running); retry in ${SLOTS_RETRY_AFTER_SECONDS} s, or narrow the slow queries`,
    );
    this.name = "TooManyConcurrentError";
  }
}

interface Waiter {
  grant(): void;
  timer: ReturnType<typeof setTimeout>;
}

/** One app's statements: how many run, and who waits (a Set keeps insertion order: FIFO). */
interface AppQueue {
  running: number;
  waiters: Set<Waiter>;
}

/** A per-key gate: at most `inFlight` holders per key, then a bounded, time-limited FIFO queue. */
export class AppSlots {
  readonly #apps = new Map<string, AppQueue>();
  readonly limits: SlotLimits;

  constructor(limits: SlotLimits) {
    this.limits = limits;
  }

  /** Statements of `app` running now (0 for an app not in the map). */
  running(app: string): number {
    return this.#apps.get(app)?.running ?? 0;
  }

  /** Statements of `app` waiting for a slot now. */
  waiting(app: string): number {
    return this.#apps.get(app)?.waiters.size ?? 0;
  }

  /** Apps with statements running or waiting (the map never keeps an idle app). */
  get size(): number {
    return this.#apps.size;
  }

  /**
   * Take a slot of `app`: at once (undefined) when one is free, else a promise that resolves when a
   * slot is handed over and rejects with 429 when the queue is full or the wait is over. Whoever
   * gets a slot must `release` it exactly once.
   */
  acquire(app: string): Promise<void> | undefined {
    let queue = this.#apps.get(app);
    if (!queue) {
      queue = { running: 0, waiters: new Set() };
      this.#apps.set(app, queue);
    }
    if (queue.running < this.limits.inFlight) {
      queue.running++;
      return undefined;
    }
    if (queue.waiters.size >= this.limits.waiting) {
      return Promise.reject(new TooManyConcurrentError(this.limits, "queue full"));
    }
    const waiters = queue.waiters;
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        grant: resolve,
        timer: setTimeout(() => {
          waiters.delete(waiter);
          this.#dropIfIdle(app);
          reject(new TooManyConcurrentError(this.limits, "wait over"));
        }, this.limits.waitMs),
      };
      waiters.add(waiter);
    });
  }

  /** Give back a slot of `app`: to the longest waiter, else to the pool. */
  release(app: string): void {
    const queue = this.#apps.get(app);
    if (!queue) return;
    const next = queue.waiters.values().next();
    if (!next.done) {
      queue.waiters.delete(next.value);
      clearTimeout(next.value.timer);
      next.value.grant(); // the slot passes on: `running` stays
      return;
    }
    queue.running--;
    this.#dropIfIdle(app);
  }

  /** Run `work` in a slot of `app`; the slot is released however `work` ends. */
  async run<T>(app: string, work: () => PromiseLike<T>): Promise<T> {
    const wait = this.acquire(app);
    if (wait) await wait;
    try {
      return await work();
    } finally {
      this.release(app);
    }
  }

  #dropIfIdle(app: string): void {
    const queue = this.#apps.get(app);
    if (queue && queue.running <= 0 && queue.waiters.size === 0) this.#apps.delete(app);
  }
}
