/**
 * How many of one app's row statements an isolate sends to the shared database at once. The rate
 * limits count calls, and a call may hold a Postgres backend for up to the 8 s deadline, so an app's
 * callers could otherwise keep as many backends busy as they have calls in flight. Past
 * `inFlight` statements an app's next ones wait (no database cost: a waiter holds only its
 * request), at most `waiting` of them and each at most `waitMs`; past that the call is
 * refused with 429 `too_many_concurrent_requests`. Per isolate and in memory: no round trip, O(1)
 * (amortised) for a statement that finds a slot free (a waiting one looks again every
 * `SLOT_POLL_MS`), one map entry per app with statements running or waiting (dropped at zero).
 * A slot is released in a `finally`, and also lapses `leaseMs` after it was taken: when a client
 * goes away, the runtime may cancel its request's pending I/O, and the `finally` after it never runs.
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
  /**
   * When a slot held this long (ms) counts as free again: longer than any statement may hold it
   * (the database deadline), so only a slot whose request was cancelled before its `finally` lapses.
   */
  leaseMs: number;
}

/**
 * The isolate's bounds (README "Decisions", database time per app). 16 running: a backend each, a
 * sixth of the pooler's backends on Neon's smallest compute (≈ 94), and at 16 ms a statement still
 * the app's whole rate budget (1,000 calls a second) in one isolate. Waiting is bounded by time, as
 * a connection pool's acquisition timeout is (PostgREST's, pgbouncer's): 8 s, one statement
 * deadline — every running statement has ended by then. The count bound (1,000) only caps the
 * memory a burst holds; it is a second's worth of the app's whole budget, so a burst the rate
 * limits let through — a JSON-RPC batch, a page of parallel SDK calls, a thousand concurrent
 * inserts — waits its turn rather than being refused. Leases of 30 s: past the 8 s deadline
 * (`DB_TIMEOUT_MS`) with room to spare, so a slot lapses only when its request is gone.
 */
export const APP_SLOT_LIMITS: SlotLimits = { inFlight: 16, waiting: 1_000, waitMs: 8_000, leaseMs: 30_000 };

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
        ? `this app already has ${limits.inFlight} database calls running and ${limits.waiting} waiting on this server; retry in ${SLOTS_RETRY_AFTER_SECONDS} s, or send fewer calls at once`
        : `no database slot for this app within ${limits.waitMs / 1000} s (${limits.inFlight} calls running); retry in ${SLOTS_RETRY_AFTER_SECONDS} s, or narrow the slow queries`,
    );
    this.name = "TooManyConcurrentError";
  }
}

/**
 * Milliseconds between a waiting statement's looks for a free slot, with `inFlight` or fewer
 * waiting. A deeper queue looks less often — once per `inFlight` statements ahead, up to
 * {@link MAX_SLOT_POLL_MS} — so an app's waiters wake about `inFlight` × 100 times a second in all,
 * however many there are.
 */
export const SLOT_POLL_MS = 10;
/** The longest interval between a waiting statement's looks. */
export const MAX_SLOT_POLL_MS = 250;

/** One statement's place, running or waiting, and since when (ms). */
interface Lease {
  since: number;
}

/**
 * One app's statements in this isolate, running and waiting, each oldest first (a Set keeps
 * insertion order, and deleting a lease is O(1)).
 */
interface AppLeases {
  running: Set<Lease>;
  waiting: Set<Lease>;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Drop the leases taken at or before `before` (they are at the front). */
function lapse(leases: Set<Lease>, before: number): void {
  for (const lease of leases) {
    if (lease.since > before) return;
    leases.delete(lease);
  }
}

/**
 * A per-key gate: at most `inFlight` holders per key, then at most `waiting` more that wait up to
 * `waitMs`. A waiter polls (every `SLOT_POLL_MS` or less often behind a deep queue, on its own timer) rather than being handed a slot
 * by the call that frees it: in Workers the calls are different requests, and a promise created in
 * one request and resolved from another is not safe there (workerd refuses or cancels it). No call
 * passes a waiting one: while any wait, a new call waits too.
 */
export class AppSlots {
  readonly #apps = new Map<string, AppLeases>();
  readonly limits: SlotLimits;

  constructor(limits: SlotLimits) {
    this.limits = limits;
  }

  /** Statements of `app` running now (0 for an app not in the map). */
  running(app: string): number {
    return this.#leases(app)?.running.size ?? 0;
  }

  /** Statements of `app` waiting for a slot now. */
  waiting(app: string): number {
    return this.#leases(app)?.waiting.size ?? 0;
  }

  /** Apps with statements running or waiting (the map never keeps an idle app). */
  get size(): number {
    return this.#apps.size;
  }

  /** Run `work` in a slot of `app`; the slot is released however `work` ends. */
  async run<T>(app: string, work: () => PromiseLike<T>): Promise<T> {
    let leases = this.#leases(app);
    if (!leases) {
      leases = { running: new Set(), waiting: new Set() };
      this.#apps.set(app, leases);
    }
    let lease: Lease = { since: Date.now() };
    if (leases.waiting.size === 0 && leases.running.size < this.limits.inFlight) leases.running.add(lease);
    else lease = await this.#wait(app, leases, lease);
    try {
      return await work();
    } finally {
      leases.running.delete(lease);
      this.#dropIfIdle(app, leases);
    }
  }

  /**
   * Wait for a free slot of `app` and take it (in the same step as the check: no other waiter can
   * take it in between); throws 429 when the queue is full or the wait is over.
   */
  async #wait(app: string, leases: AppLeases, waiting: Lease): Promise<Lease> {
    if (leases.waiting.size >= this.limits.waiting) {
      this.#dropIfIdle(app, leases);
      throw new TooManyConcurrentError(this.limits, "queue full");
    }
    leases.waiting.add(waiting);
    const until = Date.now() + this.limits.waitMs;
    try {
      while (Date.now() < until) {
        const depth = Math.ceil(leases.waiting.size / this.limits.inFlight);
        await sleep(Math.min(MAX_SLOT_POLL_MS, SLOT_POLL_MS * Math.max(1, depth), until - Date.now()));
        lapse(leases.running, Date.now() - this.limits.leaseMs);
        if (leases.running.size < this.limits.inFlight) {
          const lease = { since: Date.now() };
          leases.running.add(lease);
          return lease;
        }
      }
    } finally {
      leases.waiting.delete(waiting);
    }
    this.#dropIfIdle(app, leases);
    throw new TooManyConcurrentError(this.limits, "wait over");
  }

  /** The leases of `app` with the lapsed ones dropped (a waiter lapses when it outlived its wait). */
  #leases(app: string): AppLeases | undefined {
    const leases = this.#apps.get(app);
    if (!leases) return undefined;
    const now = Date.now();
    lapse(leases.running, now - this.limits.leaseMs);
    lapse(leases.waiting, now - this.limits.waitMs - this.limits.leaseMs);
    this.#dropIfIdle(app, leases);
    return this.#apps.get(app);
  }

  #dropIfIdle(app: string, leases: AppLeases): void {
    if (leases.running.size === 0 && leases.waiting.size === 0 && this.#apps.get(app) === leases) {
      this.#apps.delete(app);
    }
  }
}
