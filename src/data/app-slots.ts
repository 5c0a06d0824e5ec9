/**
 * How many of one app's row statements an isolate sends to the shared database at once — with the
 * other apps of its developer: the key callers pass is the developer (the tenant), since a developer
 * has up to 100 apps, and a bound per app let one developer hold 100 apps' worth. The rate
 * limits count calls, and a call may hold a Postgres backend for up to the 8 s deadline, so an app's
 * callers could otherwise keep as many backends busy as they have calls in flight. Past
 * `inFlight` statements an app's next ones wait (no database cost: a waiter holds only its
 * request), at most `waiting` of them and each at most `waitMs`; past that the call is
 * refused with 429 `too_many_concurrent_requests`. Per isolate and in memory: no round trip, O(1)
 * (amortised) for a statement that finds a slot free or gives one back, one map entry per app with
 * statements running or waiting (dropped at zero).
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
 * a connection pool's acquisition timeout is: 30 s — past three statement deadlines (8 s), and
 * under the 60 s an MCP client waits for an answer by default. A waiter costs the database
 * nothing, so the bound is the caller's patience, not a fairness rule (the 16 are that): a burst
 * that is being served should not be refused. Measured, a thousand concurrent inserts against
 * `npm run dev` (one embedded connection) drained in 5.7–8 s on a quiet machine — and past 10 s
 * (PostgREST's 10 s, the first bound here, refused the last few) with the test suite loading
 * the same two cores.
 * The count bound (1,000) only caps the memory a burst holds; it is a second's worth of the app's
 * whole budget, so a burst the rate limits let through — a JSON-RPC batch, a page of parallel SDK
 * calls, a thousand concurrent inserts — waits its turn rather than being refused. Leases of 30 s:
 * past the 8 s deadline (`DB_TIMEOUT_MS`) with room to spare, so a slot lapses only when its
 * request is gone.
 */
export const APP_SLOT_LIMITS: SlotLimits = { inFlight: 16, waiting: 1_000, waitMs: 30_000, leaseMs: 30_000 };

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
        ? `this app (with the other apps of its developer) already has ${limits.inFlight} database calls running and ${limits.waiting} waiting on this server; retry in ${SLOTS_RETRY_AFTER_SECONDS} s, or send fewer calls at once`
        : `no database slot for this app within ${limits.waitMs / 1000} s (${limits.inFlight} calls of its developer's apps running); retry in ${SLOTS_RETRY_AFTER_SECONDS} s, or narrow the slow queries`,
    );
    this.name = "TooManyConcurrentError";
  }
}

/**
 * How often a waiter near the front of its app's queue — one of the first `inFlight`, which may
 * take a free slot — looks for one (ms). A waiter further back sleeps about half the time until it
 * reaches that window (the waiters between times the app's recent interval between two slots
 * taken), within this and {@link MAX_SLOT_POLL_MS}, so the front window is always awake to take
 * a slot that frees and the back of a long queue looks a few times a second.
 */
export const SLOT_POLL_MS = 5;
/** The longest interval between a waiting statement's looks. */
export const MAX_SLOT_POLL_MS = 250;

/** One statement holding a slot, and since when (ms). */
interface Lease {
  since: number;
}

/** One statement waiting for a slot, by its place in its queue's arrivals, and since when (ms). */
interface Waiter {
  ticket: number;
  since: number;
}

/**
 * How long past its `waitMs` a waiter is still counted as waiting. A live waiter leaves its queue
 * by then (refused), but one whose request was cancelled — its client went away — never resumes
 * and never reaches its `finally`; left in place it would hold the front of the queue (and, in the
 * developer's queue, hold back every end user) for good.
 */
const WAITER_GRACE_MS = 2_000;

/** Statements waiting for a slot, in arrival order (a Set keeps insertion order; deletes are O(1)). */
interface Queue {
  waiters: Set<Waiter>;
  /** Arrivals so far: the next waiter's ticket. */
  tickets: number;
}

/**
 * One app's statements in this isolate: those running, oldest first, and those waiting — the
 * developer's in a queue of their own that goes first (see {@link AppSlots}).
 */
interface AppLeases {
  running: Set<Lease>;
  waiting: Queue;
  developer: Queue;
  /** When a waiter last took a slot, and the recent interval between two takes (ms, averaged). */
  lastTake: number;
  takeGapMs: number;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Drop the entries that began at or before `before` (leases or waiters: the oldest are first). */
function lapse(entries: Set<{ since: number }>, before: number): void {
  for (const entry of entries) {
    if (entry.since > before) return;
    entries.delete(entry);
  }
}

/**
 * A per-key gate: at most `inFlight` holders per key, then at most `waiting` more that wait up to
 * `waitMs`, in arrival order to within `inFlight` places: a free slot goes to whichever of the
 * first `inFlight` waiters looks first. Waiters look on timers of their own rather than being woken
 * by the statement that frees a slot: in Workers those are different requests, and a continuation
 * resumed from another request does its I/O as that request ("Cannot perform I/O on behalf of a
 * different request", seen in the tests). No slot waits for a sleeping waiter, and no new call
 * passes the waiting ones: while any wait, a new call queues behind them.
 *
 * The app's developer queues apart and goes first: while a developer call waits, no end user's
 * takes a slot. An app's end users cannot lock its developer out of its database (as with the rate
 * limits, README "Decisions"): the developer, or the agent building the app, gets the next free
 * slot however many end-user calls wait. Both share the app's `inFlight` slots and `waiting` bound.
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
    const leases = this.#leases(app);
    return leases ? leases.waiting.waiters.size + leases.developer.waiters.size : 0;
  }

  /** Apps with statements running or waiting (the map never keeps an idle app). */
  get size(): number {
    return this.#apps.size;
  }

  /**
   * Run `work` in a slot of `app` — ahead of the end users' waiting calls when `developer` — and
   * release the slot however `work` ends.
   */
  async run<T>(app: string, work: () => PromiseLike<T>, developer = false): Promise<T> {
    let leases = this.#leases(app);
    if (!leases) {
      const queue = (): Queue => ({ waiters: new Set(), tickets: 0 });
      leases = { running: new Set(), waiting: queue(), developer: queue(), lastTake: 0, takeGapMs: 0 };
      this.#apps.set(app, leases);
    }
    const ahead = leases.developer.waiters.size + (developer ? 0 : leases.waiting.waiters.size);
    let lease: Lease;
    if (ahead === 0 && leases.running.size < this.limits.inFlight) {
      lease = { since: Date.now() };
      leases.running.add(lease);
    } else lease = await this.#wait(app, leases, developer);
    try {
      return await work();
    } finally {
      leases.running.delete(lease);
      this.#dropIfIdle(app, leases);
    }
  }

  /** Wait for a slot of `app` and take it; 429 when the queue is full or the wait is over. */
  async #wait(app: string, leases: AppLeases, developer: boolean): Promise<Lease> {
    const { inFlight, waiting, waitMs } = this.limits;
    if (leases.waiting.waiters.size + leases.developer.waiters.size >= waiting) {
      this.#dropIfIdle(app, leases);
      throw new TooManyConcurrentError(this.limits, "queue full");
    }
    const queue = developer ? leases.developer : leases.waiting;
    const waiter: Waiter = { ticket: ++queue.tickets, since: Date.now() };
    queue.waiters.add(waiter);
    const until = waiter.since + waitMs;
    try {
      for (let now = Date.now(); now < until; now = Date.now()) {
        this.#lapse(leases, now);
        // This waiter itself may have been counted out, if its timers ran that late.
        const front = (queue.waiters.values().next().value as Waiter | undefined)?.ticket ?? waiter.ticket;
        const behind = waiter.ticket - front - inFlight; // places until the front window
        const yields = !developer && leases.developer.waiters.size > 0;
        if (behind < 0 && !yields && leases.running.size < inFlight) return this.#take(leases, now);
        const gap = leases.takeGapMs || SLOT_POLL_MS;
        const step = behind < 0 ? SLOT_POLL_MS : ((behind + 1) * gap) / 2;
        await sleep(Math.min(Math.max(step, SLOT_POLL_MS), MAX_SLOT_POLL_MS, until - now));
      }
    } finally {
      queue.waiters.delete(waiter);
    }
    this.#dropIfIdle(app, leases);
    throw new TooManyConcurrentError(this.limits, "wait over");
  }

  /** A waiter takes a free slot; the interval since the last take feeds the waiters' estimate. */
  #take(leases: AppLeases, now: number): Lease {
    if (leases.lastTake) leases.takeGapMs = 0.8 * leases.takeGapMs + 0.2 * (now - leases.lastTake);
    leases.lastTake = now;
    const lease = { since: now };
    leases.running.add(lease);
    return lease;
  }

  /** Drop the leases and waiters of requests that were cancelled (see WAITER_GRACE_MS). */
  #lapse(leases: AppLeases, now: number): void {
    lapse(leases.running, now - this.limits.leaseMs);
    const gone = now - this.limits.waitMs - WAITER_GRACE_MS;
    lapse(leases.developer.waiters, gone);
    lapse(leases.waiting.waiters, gone);
  }

  /** The leases of `app` with the lapsed ones dropped. */
  #leases(app: string): AppLeases | undefined {
    const leases = this.#apps.get(app);
    if (!leases) return undefined;
    this.#lapse(leases, Date.now());
    this.#dropIfIdle(app, leases);
    return this.#apps.get(app);
  }

  #dropIfIdle(app: string, leases: AppLeases): void {
    const idle =
      leases.running.size === 0 && leases.waiting.waiters.size === 0 && leases.developer.waiters.size === 0;
    if (idle && this.#apps.get(app) === leases) this.#apps.delete(app);
  }
}
