/**
 * Metering: usage counters per project, billing period (`YYYY-MM`, UTC) and metric. Only successful
 * work is counted — the callers decide what success is (an app-MCP tool call that returned a result,
 * a function invocation the upstream answered with 2xx).
 *
 * Counts are batched per isolate ({@link UsageMeter}): a call adds to an in-memory sum, and one
 * statement per flush window writes every sum, so metering costs the database one round trip per
 * window instead of one per call (on a single-connection database each per-call upsert queued in
 * front of the next call's query). Usage reads see the database, so they lag by at most the window.
 */
import { and, eq, type SQL, sql } from "drizzle-orm";
import { usageCounters } from "../../schema/index.ts";
import type { Db } from "../db.ts";

/** Every metric the billing view reports (0 when nothing was recorded in the period). */
export const USAGE_METRICS = ["agent_tool_calls", "function_invocations"] as const;
export type UsageMetric = (typeof USAGE_METRICS)[number];

/** The billing period of an instant: `YYYY-MM` in UTC. */
export const billingPeriod = (at: Date = new Date()): string => at.toISOString().slice(0, 7);

/**
 * Counter rows per (project, period, metric): concurrent flushes (other isolates) pick a random
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
 * Attempts of one scheduled flush (the retry waits 4× the delay) before its counts wait for the next
 * call's flush. Two: with the database deadline (8 s) both fit in the 30 s of `waitUntil`.
 */
const FLUSH_ATTEMPTS = 2;

/**
 * The metering port services take: count `n` (default 1) successful units of `metric` for a
 * project, now. Synchronous and infallible: the write happens later, and a failed write must never
 * turn a call that happened into an error. The Worker wires one per request ({@link UsageMeter.port}).
 */
export type Meter = (projectId: string, metric: UsageMetric, n?: number) => void;

/** One pending sum. */
export interface UsageCount {
  projectId: string;
  period: string;
  metric: UsageMetric;
  n: number;
}

const keyOf = (c: Pick<UsageCount, "projectId" | "period" | "metric">) =>
  `${c.projectId}|${c.period}|${c.metric}`;

/**
 * One statement adding every count to one randomly chosen shard row of its (project, period,
 * metric). Rows are sorted by key, so two isolates' flushes take their row locks in the same order
 * and cannot deadlock; counts of projects deleted meanwhile are dropped (the rows would have gone
 * with the project anyway) instead of failing the whole statement on the foreign key.
 */
export async function writeUsage(db: Db, counts: readonly UsageCount[]): Promise<void> {
  if (counts.length === 0) return;
  const shard = Math.floor(Math.random() * USAGE_SHARDS);
  const sorted = [...counts].sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : 1));
  const rows: SQL[] = sorted.map(
    (c) => sql`(${c.projectId}::uuid, ${c.period}::text, ${c.metric}::text, ${c.n}::bigint)`,
  );
  await db.execute(sql`
    insert into usage_counters (project_id, period, metric, shard, value)
    select v.project_id, v.period, v.metric, ${shard}::smallint, v.n
    from (values ${sql.join(rows, sql`, `)}) as v(project_id, period, metric, n)
    where exists (select 1 from projects p where p.id = v.project_id)
    on conflict (project_id, period, metric, shard)
    do update set value = usage_counters.value + excluded.value`);
}

/**
 * An isolate's pending usage. Exact by construction: a flush takes the pending sums out in one
 * synchronous step (counts added while its statement runs go to the next flush), writes them in ONE
 * statement (atomic: all or none), and puts them back when it fails, so the next flush carries them.
 * The period is fixed when a count is added: a call at 23:59:59.9 on a month's last day counts in
 * that month, however late its flush. Not exact against a statement the database committed whose
 * answer was lost (a deadline firing after the commit): its counts go in again (README Decisions).
 */
export class UsageMeter {
  readonly #pending = new Map<string, UsageCount>();
  #scheduled = false;
  /** The flush window, in ms. */
  readonly delayMs: number;

  constructor(delayMs: number = FLUSH_DELAY_MS) {
    this.delayMs = delayMs;
  }

  /** Add `n` units of `metric` for a project, in the billing period of `at`. */
  add(projectId: string, metric: UsageMetric, n = 1, at: Date = new Date()): void {
    this.#merge({ projectId, period: billingPeriod(at), metric, n });
  }

  #merge(count: UsageCount): void {
    const pending = this.#pending.get(keyOf(count));
    if (pending) pending.n += count.n;
    else this.#pending.set(keyOf(count), { ...count });
  }

  /** The sums a flush would write now. */
  pending(): UsageCount[] {
    return [...this.#pending.values()].map((c) => ({ ...c }));
  }

  /** Write everything pending in one statement; on failure the counts are put back and the error thrown. */
  async flush(db: Db): Promise<void> {
    const batch = [...this.#pending.values()];
    this.#pending.clear();
    try {
      await writeUsage(db, batch);
    } catch (err) {
      for (const count of batch) this.#merge(count);
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
      if (this.#scheduled) return;
      this.#scheduled = true;
      waitUntil(this.#flushLater(db));
    };
  }

  /** The scheduled flush: after the window; a failure is retried (longer waits) unless a newer flush will carry it. */
  async #flushLater(db: Db): Promise<void> {
    for (let attempt = 0; attempt < FLUSH_ATTEMPTS; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, this.delayMs * 4 ** attempt));
      this.#scheduled = false;
      try {
        return await this.flush(db);
      } catch (err) {
        console.error("metering flush failed; its counts stay pending", err);
        if (this.#scheduled) return;
        this.#scheduled = true;
      }
    }
    this.#scheduled = false;
  }
}

/** A project's usage for one period: every known metric (0 by default) plus any other recorded. */
export async function usageFor(
  db: Db,
  projectId: string,
  period: string = billingPeriod(),
): Promise<{ period: string; usage: Record<string, number> }> {
  const rows = await db
    .select({ metric: usageCounters.metric, value: sql<string>`sum(${usageCounters.value})` })
    .from(usageCounters)
    .where(and(eq(usageCounters.projectId, projectId), eq(usageCounters.period, period)))
    .groupBy(usageCounters.metric);
  const usage: Record<string, number> = Object.fromEntries(USAGE_METRICS.map((metric) => [metric, 0]));
  for (const row of rows) usage[row.metric] = Number(row.value);
  return { period, usage };
}
