/**
 * What database answers one isolate holds at once. Each answer is capped on its own
 * (`MAX_RESULT_BYTES`, src/worker/db.ts) and one HTTP request's tool results together
 * (src/answer-budget.ts), but an isolate of 128 MB serves many requests, of many tenants, at once:
 * 16 parallel reads of one app (its statement slots, src/data/app-slots.ts) could hold 16 × 8 MiB of
 * answers, with their parsed rows and serialised responses on top, and every other request in the
 * isolate would fail with it. The Worker's database fetch charges every answer's bytes here as it
 * reads them, to a {@link AnswerHold} its HTTP request opened; the bytes stay charged until that
 * request has answered (one release, at the request's entry), since the rows parsed from them live
 * that long. An answer that would pass the isolate's budget, or its app's share of it, is aborted:
 * 503 `server_busy` with a `Retry-After` (an `isError` tool result on the MCP endpoints); a
 * statement is refused before it is sent once either is already held, so a refused write never
 * reaches the database, and the answer of a write that was sent is always read (and counted).
 * An app's share is also its tenant's: once a request's developer is known ({@link AnswerMemory.tenant}),
 * its answers count in that developer's share too, which is no larger than an app's — a developer
 * has up to 100 projects (and platform requests of their own), and with a share per app alone two
 * of them held the whole isolate, every other tenant's read refused (test/worker/tenant-red3.test.ts).
 * A hold also lapses {@link HOLD_LEASE_MS} after it was opened: when a client goes away, the runtime
 * may cancel its request's pending I/O, and the `finally` that releases the hold never runs.
 * Per isolate and in memory, O(1) per charge (amortised). Pure (no runtime imports).
 */
import { AppError } from "./errors.ts";

/**
 * Bytes of database answers (the driver's JSON) the isolate holds at once (README "Decisions"). What
 * a held answer costs is a few times its bytes at its peak — the rows parsed from it, then the
 * response text built from them — so 24 MiB stands for ≈ 50–75 MB of the isolate's 128, next to the
 * code, the driver and the isolate caches (≈ 15 M characters at their bounds).
 */
export const ISOLATE_ANSWER_BYTES = 24 * 1024 * 1024;
/**
 * Bytes of those one app may hold: half, so one app never holds the isolate alone, and one
 * largest answer (`MAX_RESULT_BYTES`, 8 MiB) still fits with the request's other reads. One
 * developer's apps and platform requests together hold no more (their tenant share).
 */
export const APP_ANSWER_BYTES = 12 * 1024 * 1024;
/**
 * When an unreleased hold counts as released (ms): past the 30 s an app's statement may wait for a
 * slot plus its 8 s deadline, and the 60 s an MCP client waits for an answer by default.
 */
export const HOLD_LEASE_MS = 60_000;
/** Seconds a refused caller is told to wait: a request releases its answers once it has answered. */
export const BUSY_RETRY_AFTER_SECONDS = 1;

/** The bounds of one isolate's answer memory. */
export interface AnswerMemoryLimits {
  isolateBytes: number;
  appBytes: number;
  leaseMs: number;
}

const mib = (bytes: number) => `${Math.round((bytes / (1024 * 1024)) * 10) / 10} MiB`;

/** 503 `server_busy`: the answer would pass the isolate's (or its app's share of the) answer memory. */
export class ServerBusyError extends AppError {
  override readonly headers = { "retry-after": String(BUSY_RETRY_AFTER_SECONDS) };

  constructor(limits: AnswerMemoryLimits, scope: "isolate" | "app" | "tenant") {
    super(
      503,
      "server_busy",
      scope === "app"
        ? `this app's requests already hold ${mib(limits.appBytes)} of database answers on this server; retry in ${BUSY_RETRY_AFTER_SECONDS} s, or send fewer large reads at once (a smaller limit)`
        : scope === "tenant"
          ? `the requests of this app's developer (all their apps and platform requests) already hold ${mib(limits.appBytes)} of database answers on this server; retry in ${BUSY_RETRY_AFTER_SECONDS} s, or send fewer large reads at once (a smaller limit)`
          : `this server holds as many database answers as it may right now; retry in ${BUSY_RETRY_AFTER_SECONDS} s`,
    );
    this.name = "ServerBusyError";
  }
}

/** One HTTP request's charged answer bytes (opened and released by the request's entry). */
export interface AnswerHold {
  /**
   * The share the request reads in: a project id, `host:<slug>` until a hostname's app is resolved,
   * `developer:<id>` for a signed-in developer's platform request, "" for the rest of the platform.
   */
  app: string;
  /**
   * The developer the request's app (or platform request) belongs to, once known: its answers count
   * in that developer's share too ({@link AnswerMemory.tenant}). Null until then.
   */
  tenant: string | null;
  readonly since: number;
  bytes: number;
  /** Released (or lapsed): charges go to a hold of their own (see src/worker/db.ts). */
  closed: boolean;
  /**
   * Lapsed, its request not known to have answered: the request outlived the lease (or was
   * cancelled), and its next statements are refused before they are sent.
   */
  lapsed: boolean;
}

export class AnswerMemory {
  limits: AnswerMemoryLimits;
  /** Open holds, oldest first (a Set keeps insertion order; `since` only grows). */
  readonly #holds = new Set<AnswerHold>();
  readonly #apps = new Map<string, number>();
  readonly #tenants = new Map<string, number>();
  #total = 0;
  /** Answers and statements refused so far (for logs and the tests). */
  refused = 0;

  constructor(limits: AnswerMemoryLimits) {
    this.limits = limits;
  }

  /** Bytes held now, in the isolate or by one app. */
  held(app?: string): number {
    this.#lapse(Date.now());
    return app === undefined ? this.#total : (this.#apps.get(app) ?? 0);
  }

  /** Bytes held now by one developer's requests (those whose developer is known). */
  heldByTenant(tenant: string): number {
    this.#lapse(Date.now());
    return this.#tenants.get(tenant) ?? 0;
  }

  /** A hold for one request of `app`. */
  open(app: string): AnswerHold {
    const hold: AnswerHold = { app, tenant: null, since: Date.now(), bytes: 0, closed: false, lapsed: false };
    this.#holds.add(hold);
    return hold;
  }

  /**
   * {@link ServerBusyError} when `hold`'s app already holds its share, or the isolate its budget,
   * or `hold` lapsed: checked before a statement is sent, so a refused write never reaches the
   * database.
   */
  admit(hold: AnswerHold): void {
    this.#lapse(Date.now());
    if (hold.lapsed) throw this.#busy("isolate");
    if ((this.#apps.get(hold.app) ?? 0) >= this.limits.appBytes) throw this.#busy("app");
    if (hold.tenant !== null && (this.#tenants.get(hold.tenant) ?? 0) >= this.limits.appBytes)
      throw this.#busy("tenant");
    if (this.#total >= this.limits.isolateBytes) throw this.#busy("isolate");
  }

  #busy(scope: "isolate" | "app" | "tenant"): ServerBusyError {
    this.refused++;
    return new ServerBusyError(this.limits, scope);
  }

  /**
   * Charge `bytes` to `hold`; {@link ServerBusyError} (nothing charged) past a bound — unless
   * `overdraw`: the answer of a statement that may have changed something is always read (its
   * caller must learn what happened), and counted. What is charged to a hold released meanwhile
   * (a statement its request left running) is the caller's to give back (see src/worker/db.ts).
   */
  charge(hold: AnswerHold, bytes: number, overdraw = false): void {
    this.#lapse(Date.now());
    // Lapsed while its request still reads (it outlived the lease): refused like a full budget.
    if (hold.lapsed && !overdraw) throw this.#busy("isolate");
    const app = (this.#apps.get(hold.app) ?? 0) + bytes;
    const tenant = hold.tenant === null ? 0 : (this.#tenants.get(hold.tenant) ?? 0) + bytes;
    if (!overdraw) {
      if (app > this.limits.appBytes) throw this.#busy("app");
      if (tenant > this.limits.appBytes) throw this.#busy("tenant");
      if (this.#total + bytes > this.limits.isolateBytes) throw this.#busy("isolate");
    }
    this.#apps.set(hold.app, app);
    if (hold.tenant !== null) this.#tenants.set(hold.tenant, tenant);
    this.#total += bytes;
    hold.bytes += bytes;
  }

  /** Give back `bytes` of what `hold` was charged (an answer refused or read for no request). */
  uncharge(hold: AnswerHold, bytes: number): void {
    const given = Math.min(bytes, hold.bytes);
    if (given <= 0) return;
    hold.bytes -= given;
    this.#total -= given;
    const app = (this.#apps.get(hold.app) ?? 0) - given;
    if (app > 0) this.#apps.set(hold.app, app);
    else this.#apps.delete(hold.app);
    if (hold.tenant !== null) subtract(this.#tenants, hold.tenant, given);
  }

  /**
   * Count `hold`, and what it already holds, in developer `tenant`'s share from now on: its request's
   * caller is known to act for that developer's app (or as that developer). A request's answers
   * before that — its credential check, a few hundred bytes — count in its app's share alone.
   * Nothing for a released hold.
   */
  tenant(hold: AnswerHold, tenant: string): void {
    if (hold.closed || hold.tenant === tenant) return;
    if (hold.bytes > 0) {
      if (hold.tenant !== null) subtract(this.#tenants, hold.tenant, hold.bytes);
      this.#tenants.set(tenant, (this.#tenants.get(tenant) ?? 0) + hold.bytes);
    }
    hold.tenant = tenant;
  }

  /**
   * Count `hold`, and what it already holds, in `app`'s share from now on: a request that named its
   * app by hostname once the app is known, a platform request once its developer is — so one app
   * (or developer) is one share however it is addressed. Nothing for a released hold.
   */
  move(hold: AnswerHold, app: string): void {
    if (hold.closed || hold.app === app) return;
    if (hold.bytes > 0) {
      const left = (this.#apps.get(hold.app) ?? 0) - hold.bytes;
      if (left > 0) this.#apps.set(hold.app, left);
      else this.#apps.delete(hold.app);
      this.#apps.set(app, (this.#apps.get(app) ?? 0) + hold.bytes);
    }
    hold.app = app;
  }

  /** Release everything `hold` holds, its request having answered (idempotent). */
  release(hold: AnswerHold): void {
    this.uncharge(hold, hold.bytes);
    hold.closed = true;
    hold.lapsed = false;
    this.#holds.delete(hold);
  }

  /** Release the holds opened `leaseMs` ago or earlier (their requests were cancelled). */
  #lapse(now: number): void {
    const before = now - this.limits.leaseMs;
    for (const hold of this.#holds) {
      if (hold.since > before) return;
      this.release(hold);
      hold.lapsed = true;
    }
  }
}

/** Take `bytes` off `key`'s count, dropping the entry at zero. */
function subtract(counts: Map<string, number>, key: string, bytes: number): void {
  const left = (counts.get(key) ?? 0) - bytes;
  if (left > 0) counts.set(key, left);
  else counts.delete(key);
}

/** The isolate's answer memory (the Worker's request entry and database fetch use it). */
export const answerMemory = new AnswerMemory({
  isolateBytes: ISOLATE_ANSWER_BYTES,
  appBytes: APP_ANSWER_BYTES,
  leaseMs: HOLD_LEASE_MS,
});

/** Tests only: lower the bounds; returns the previous ones. */
export function setAnswerMemoryLimitsForTests(limits: Partial<AnswerMemoryLimits>): AnswerMemoryLimits {
  const previous = answerMemory.limits;
  answerMemory.limits = { ...previous, ...limits };
  return previous;
}
