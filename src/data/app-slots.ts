/**
 * How many of one app's row statements an isolate sends to the shared database at once. The rate
 * limits count calls, and a call may hold a Postgres backend for up to the 8 s deadline, so an app's
 * callers could otherwise keep as many backends busy as they have calls in flight. Past
 * `inFlight` statements an app's next ones wait (no database cost: a waiter holds only its
 * request), at most `waiting` of them and each at most `waitMs`; past that the call is
 * refused with 429 `too_many_concurrent_requests`. Per isolate and in memory: no round trip, O(1)
 * for a statement that finds a slot free (a waiting one looks again every `SLOT_POLL_MS`), one map
 * entry per app with statements running or waiting (dropped at zero).
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
 * The isolate's bounds (README "Decisions", database time per app). 16 running: a backend each, a
 * sixth of the pooler's backends on Neon's smallest compute (≈ 94), and at 16 ms a statement still
 * the app's whole rate budget (1,000 calls a second) in one isolate. 64 waiting and 8 s (one statement
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

/** Milliseconds between a waiting statement's looks for a free slot. */
export const SLOT_POLL_MS = 10;

/** One app's statements in this isolate: how many run, how many wait. */
interface AppCount {
  running: number;
  waiting: number;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * A per-key gate: at most `inFlight` holders per key, then at most `waiting` more that wait up to
 * `waitMs`. A waiter polls (every `SLOT_POLL_MS`, on its own timer) rather than being handed a slot
 * by the call that frees it: in Workers the calls are different requests, and a promise created in
 * one request and resolved from another is not safe there (workerd refuses or cancels it). No call
 * passes a waiting one: while any wait, a new call waits too.
 */
export class AppSlots {
  readonly #apps = new Map<string, AppCount>();
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
    return this.#apps.get(app)?.waiting ?? 0;
  }

  /** Apps with statements running or waiting (the map never keeps an idle app). */
  get size(): number {
    return this.#apps.size;
  }

  /** Run `work` in a slot of `app`; the slot is released however `work` ends. */
  async run<T>(app: string, work: () => PromiseLike<T>): Promise<T> {
    let count = this.#apps.get(app);
    if (!count) {
      count = { running: 0, waiting: 0 };
      this.#apps.set(app, count);
    }
    if (count.waiting === 0 && count.running < this.limits.inFlight) count.running++;
    else await this.#wait(app, count);
    try {
      return await work();
    } finally {
      count.running--;
      this.#dropIfIdle(app, count);
    }
  }

  /**
   * Wait for a free slot of `app` and take it (in the same step as the check: no other waiter can
   * take it in between); throws 429 when the queue is full or the wait is over.
   */
  async #wait(app: string, count: AppCount): Promise<void> {
    if (count.waiting >= this.limits.waiting) {
      this.#dropIfIdle(app, count);
      throw new TooManyConcurrentError(this.limits, "queue full");
    }
    count.waiting++;
    try {
      for (let waited = 0; waited < this.limits.waitMs; waited += SLOT_POLL_MS) {
        await sleep(SLOT_POLL_MS);
        if (count.running < this.limits.inFlight) {
          count.running++;
          return;
        }
      }
    } finally {
      count.waiting--;
    }
    this.#dropIfIdle(app, count);
    throw new TooManyConcurrentError(this.limits, "wait over");
  }

  #dropIfIdle(app: string, count: AppCount): void {
    if (count.running === 0 && count.waiting === 0 && this.#apps.get(app) === count) this.#apps.delete(app);
  }
}
