/**
 * Metering: usage counters per project, UTC day (and its billing period, `YYYY-MM`) and metric. Only successful
 * work is counted — the callers decide what success is (an app-MCP tool call that returned a result,
 * a function invocation the upstream answered with 2xx, an event stored).
 *
 * Counts are batched per isolate ({@link UsageMeter}): a call adds to an in-memory sum, and one
 * statement per flush window writes every sum, so metering costs the database one round trip per
 * window instead of one per call (on a single-connection database each per-call upsert queued in
 * front of the next call's query). Usage reads see the database, so they lag by at most the window.
 * The reads are in src/usage/billing.ts: this module is on the Worker's start-up path (every hot
 * request meters), and the reads' table objects must not be.
 */
import { type SQL, sql } from "drizzle-orm";
import type { Db } from "../db.ts";

/**
 * Every metric the billing view reports (0 when nothing was recorded in the period): successful
 * app-MCP tool calls, function invocations the upstream answered with 2xx, and events stored by
 * `POST /v1/events` (src/events/service.ts).
 */
export const USAGE_METRICS = ["agent_tool_calls", "function_invocations", "events"] as const;
export type UsageMetric = (typeof USAGE_METRICS)[number];

/** The billing period of an instant: `YYYY-MM` in UTC. */
export const billingPeriod = (at: Date = new Date()): string => at.toISOString().slice(0, 7);

/** The day of an instant: `YYYY-MM-DD` in UTC (its first 7 characters are its billing period). */
export const usageDay = (at: Date = new Date()): string => at.toISOString().slice(0, 10);

/**
 * Counter rows per (project, day, metric): concurrent flushes (other isolates) pick a random
 * shard, so they rarely queue on one row lock; every count still lands in exactly one row (exact),
 * reads sum the shards.
 */
export const USAGE_SHARDS = 16;

/**
 * How long the first count of a window waits before its flush. 250 ms: a busy isolate writes at
 * most 4 metering statements a second whatever its call rate, while the billing view and the
 * console chart lag by a quarter of a second — far below anything a person reads as stale — and the
 * flush stays well inside the 30 s a Worker's `waitUntil` may run after the response.
 */
export const FLUSH_DELAY_MS = 250;

/**
 * Attempts of one scheduled flush (the retry waits 4× the delay) before its batches wait for the
 * next call's flush. Two: with the database deadline (8 s) both fit in the 30 s of `waitUntil`.
 */
const FLUSH_ATTEMPTS = 2;

/**
 * The metering port services take: count `n` (default 1) successful units of `metric` for a
 * project, now. Synchronous and infallible: the write happens later, and a failed write must never
 * turn a call that happened into an error. The Worker wires one per request ({@link UsageMeter.port}).
 */
export type Meter = (projectId: string, metric: UsageMetric, n?: number) => void;

/** One pending sum, per UTC day (`YYYY-MM-DD`). */
export interface UsageCount {
  projectId: string;
  day: string;
  metric: UsageMetric;
  n: number;
}

/** An end user active in a billing period (`mau` in the billing view: one per period, however often). */
export interface ActiveUser {
  projectId: string;
  period: string;
  userId: string;
}

/** Counts (and active users) taken out for writing, under an id the database remembers once the counts are added. */
interface UsageBatch {
  id: string;
  counts: UsageCount[];
  users: ActiveUser[];
}

const keyOf = (c: Pick<UsageCount, "projectId" | "day" | "metric">) => `${c.projectId}|${c.day}|${c.metric}`;

const userKeyOf = (u: ActiveUser) => `${u.projectId}|${u.period}|${u.userId}`;

/**
 * Active users an isolate remembers as already sent, so a user's next calls schedule no flush. At
 * this many the memory starts over: the users are then sent once more, which adds nothing (the
 * insert ignores rows it has).
 */
const MAX_KNOWN_USERS = 50_000;

/** One flush in this many also deletes the batch ids older than {@link BATCH_ID_RETENTION}. */
const PRUNE_EVERY = 64;

/**
 * How long a written batch's id is remembered. A batch is retried within seconds to minutes (the
 * isolate keeps it in memory); a week is far beyond any isolate's life.
 */
const BATCH_ID_RETENTION = "7 days";

/**
 * One statement that adds every batch's counts not added before: it records the batch ids in
 * `usage_batches`, and only the batches whose id was new add their counts, so a batch retried after
 * an answer was lost (the statement committed, the client saw a timeout or a dropped connection) is
 * not counted twice. Counts go to one randomly chosen shard row of their (project, day, metric) —
 * the period column is the day's month, so a month is the sum of its days — in key order, so two isolates' flushes take their row locks in the same order and cannot
 * deadlock; counts of projects deleted meanwhile are dropped instead of failing the whole statement
 * on the foreign key (their rows would have gone with the project).
 */
export async function writeUsage(db: Db, batches: readonly UsageBatch[]): Promise<void> {
  const rows: SQL[] = batches.flatMap((batch) =>
    batch.counts.map(
      (c) =>
        sql`(${batch.id}::uuid, ${c.projectId}::uuid, ${c.day}::date, ${c.metric}::text, ${c.n}::bigint)`,
    ),
  );
  const users = activeUsersInsert(batches.flatMap((batch) => batch.users));
  if (rows.length === 0) {
    if (users) await db.execute(users);
    return;
  }
  const shard = Math.floor(Math.random() * USAGE_SHARDS);
  const prune =
    Math.random() * PRUNE_EVERY < 1
      ? sql`, pruned as (delete from usage_batches where created_at < now() - ${BATCH_ID_RETENTION}::interval)`
      : sql``;
  await db.execute(sql`
    with counts (batch_id, project_id, day, metric, n) as (values ${sql.join(rows, sql`, `)}),
    fresh as (
      insert into usage_batches (id) select distinct batch_id from counts
      on conflict do nothing returning id
    )${prune}${users ? sql`, active as (${users})` : sql``}
    insert into usage_counters (project_id, period, metric, day, shard, value)
    select c.project_id, to_char(c.day, 'YYYY-MM'), c.metric, c.day, ${shard}::smallint, sum(c.n)
    from counts c
    where c.batch_id in (select id from fresh)
      and exists (select 1 from projects p where p.id = c.project_id)
    group by c.project_id, c.day, c.metric
    order by c.project_id, to_char(c.day, 'YYYY-MM'), c.metric, c.day
    on conflict (project_id, period, metric, day, shard)
    do update set value = usage_counters.value + excluded.value`);
}

/**
 * The insert of active users (null when there are none): a row per (project, period, user) that is
 * not there yet, so sending a user twice (a retried batch, another isolate) adds nothing and needs
 * no batch id. In key order (no deadlocks between isolates); users deleted meanwhile are dropped.
 */
function activeUsersInsert(users: readonly ActiveUser[]): SQL | null {
  const unique = [...new Map(users.map((u) => [userKeyOf(u), u])).values()];
  if (unique.length === 0) return null;
  const values = unique.map((u) => sql`(${u.projectId}::uuid, ${u.period}::text, ${u.userId}::uuid)`);
  return sql`insert into usage_active_users (project_id, period, user_id)
    select u.project_id, u.period, u.user_id from (values ${sql.join(values, sql`, `)}) as u (project_id, period, user_id)
    where exists (select 1 from app_users a where a.id = u.user_id and a.project_id = u.project_id)
    order by u.project_id, u.period, u.user_id
    on conflict do nothing`;
}

/**
 * An isolate's pending usage. Exact by construction: a flush takes the pending sums out in one
 * synchronous step (counts added while its statement runs go to the next flush) as a batch with a
 * fresh id, and writes it in ONE statement (atomic: all or none). A batch whose flush failed is
 * kept and sent again, under the same id, with the next flush: if the failed statement had in fact
 * committed, the id makes the retry add nothing. The day is fixed when a count is added: a call
 * at 23:59:59.9 counts on that day (and in that month), however late its flush.
 */
export class UsageMeter {
  readonly #pending = new Map<string, UsageCount>();
  readonly #pendingUsers = new Map<string, ActiveUser>();
  /** Active users pending or sent: seen again in the same period, they cost nothing. */
  readonly #knownUsers = new Set<string>();
  /** Batches whose flush failed: maybe written, maybe not; their ids decide. */
  #unsettled: UsageBatch[] = [];
  #scheduled = false;
  /** The flush whose statement is running, if any (a read after {@link settle} waits for it). */
  #inflight: Promise<void> | undefined;
  /** The flush window, in ms. */
  readonly delayMs: number;

  constructor(delayMs: number = FLUSH_DELAY_MS) {
    this.delayMs = delayMs;
  }

  /** Add `n` units of `metric` for a project, on the UTC day of `at`. */
  add(projectId: string, metric: UsageMetric, n = 1, at: Date = new Date()): void {
    const count = { projectId, day: usageDay(at), metric, n };
    const pending = this.#pending.get(keyOf(count));
    if (pending) pending.n += n;
    else this.#pending.set(keyOf(count), count);
  }

  /**
   * Note an end user active on the UTC month of `at`. True when the isolate had not noted them in
   * that month yet (the user is then pending and a flush must write it).
   */
  addActiveUser(projectId: string, userId: string, at: Date = new Date()): boolean {
    const user = { projectId, period: billingPeriod(at), userId };
    const key = userKeyOf(user);
    if (this.#knownUsers.has(key)) return false;
    if (this.#knownUsers.size >= MAX_KNOWN_USERS) this.#knownUsers.clear();
    this.#knownUsers.add(key);
    this.#pendingUsers.set(key, user);
    return true;
  }

  /** The sums not known to be written (pending and failed batches), as a flush would add them. */
  pending(): UsageCount[] {
    const sums = new Map<string, UsageCount>();
    for (const c of [...this.#unsettled.flatMap((b) => b.counts), ...this.#pending.values()]) {
      const sum = sums.get(keyOf(c));
      if (sum) sum.n += c.n;
      else sums.set(keyOf(c), { ...c });
    }
    return [...sums.values()];
  }

  /**
   * Read-your-writes for the billing views: writes what is pending now (and any failed batch) and
   * waits for a flush already under way, so a usage read after it sees every count and active user
   * this isolate took before. A failed write is kept for the next flush, never thrown (the read then
   * lags as before). Costs a statement only when something is pending.
   */
  async settle(db: Db): Promise<void> {
    const running = this.#inflight;
    if (this.#pending.size > 0 || this.#pendingUsers.size > 0 || this.#unsettled.length > 0) {
      await this.flush(db).catch(() => {});
    }
    await running?.catch(() => {});
  }

  /** Write everything pending and every failed batch in one statement; on failure they are kept and the error thrown. */
  flush(db: Db): Promise<void> {
    const write = this.#write(db);
    this.#inflight = write;
    const clear = () => {
      if (this.#inflight === write) this.#inflight = undefined;
    };
    write.then(clear, clear);
    return write;
  }

  async #write(db: Db): Promise<void> {
    const batches = this.#unsettled;
    this.#unsettled = [];
    if (this.#pending.size > 0 || this.#pendingUsers.size > 0) {
      const counts = [...this.#pending.values()];
      batches.push({ id: crypto.randomUUID(), counts, users: [...this.#pendingUsers.values()] });
      this.#pending.clear();
      this.#pendingUsers.clear();
    }
    try {
      await writeUsage(db, batches);
    } catch (err) {
      this.#unsettled.push(...batches);
      throw err;
    }
  }

  /**
   * The request's metering port: adds; the first count of a window schedules one flush on `db`,
   * `delayMs` later, kept alive by the request's `waitUntil`.
   */
  port(db: Db, waitUntil: (promise: Promise<unknown>) => void): Meter {
    return (projectId, metric, n = 1) => {
      this.add(projectId, metric, n);
      this.#schedule(db, waitUntil);
    };
  }

  /**
   * Note the request's end user as active this month; only a user new to the isolate in that month
   * schedules a flush (same window and statement as the counts).
   */
  noteActiveUser(
    db: Db,
    waitUntil: (promise: Promise<unknown>) => void,
    projectId: string,
    userId: string,
  ): void {
    if (this.addActiveUser(projectId, userId)) this.#schedule(db, waitUntil);
  }

  /** The first pending usage of a window schedules its one flush, kept alive by that request. */
  #schedule(db: Db, waitUntil: (promise: Promise<unknown>) => void): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    waitUntil(this.#flushLater(db));
  }

  /** Whether a flush is scheduled or under way (a test waits for a quiet meter before faking its clock). */
  get busy(): boolean {
    return this.#scheduled || this.#inflight !== undefined;
  }

  /** The scheduled flush: after the window; a failure is retried (longer wait) unless a newer flush will carry it. */
  async #flushLater(db: Db): Promise<void> {
    for (let attempt = 0; attempt < FLUSH_ATTEMPTS; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, this.delayMs * 4 ** attempt));
      this.#scheduled = false;
      try {
        return await this.flush(db);
      } catch (err) {
        console.error("metering flush failed; its counts are sent again with the next flush", err);
        if (this.#scheduled) return;
        this.#scheduled = true;
      }
    }
    this.#scheduled = false;
  }
}

/** One UTC day in ms (UTC has no daylight saving). */
export const DAY_MS = 86_400_000;

/** The UTC days from `from` to `to` (`YYYY-MM-DD`, both included), oldest first. */
export function daysBetween(from: string, to: string): string[] {
  const start = Date.parse(`${from}T00:00:00Z`);
  const count = Math.round((Date.parse(`${to}T00:00:00Z`) - start) / DAY_MS) + 1;
  return Array.from({ length: Math.max(0, count) }, (_, i) => usageDay(new Date(start + i * DAY_MS)));
}
