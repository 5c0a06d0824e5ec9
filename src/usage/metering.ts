/**
 * Metering: usage counters per project, billing period (`YYYY-MM`, UTC) and metric. Only successful
 * work is counted — the callers decide what success is (an app-MCP tool call that returned a result,
 * a function invocation the upstream answered with 2xx).
 */
import { and, eq, sql } from "drizzle-orm";
import { usageCounters } from "../../schema/index.ts";
import type { Db } from "../db.ts";

/** Every metric the billing view reports (0 when nothing was recorded in the period). */
export const USAGE_METRICS = ["agent_tool_calls", "function_invocations"] as const;
export type UsageMetric = (typeof USAGE_METRICS)[number];

/** The billing period of an instant: `YYYY-MM` in UTC. */
export const billingPeriod = (at: Date = new Date()): string => at.toISOString().slice(0, 7);

/**
 * Counter rows per (project, period, metric): concurrent upserts pick a random shard, so they rarely
 * queue on one row lock; every increment still lands in exactly one row (exact), reads sum the shards.
 */
export const USAGE_SHARDS = 16;

/** Add `n` to a project's counter for the current period (one upsert, on a random shard). */
export async function recordUsage(db: Db, projectId: string, metric: UsageMetric, n = 1): Promise<void> {
  const shard = Math.floor(Math.random() * USAGE_SHARDS);
  await db
    .insert(usageCounters)
    .values({ projectId, period: billingPeriod(), metric, shard, value: n })
    .onConflictDoUpdate({
      target: [usageCounters.projectId, usageCounters.period, usageCounters.metric, usageCounters.shard],
      set: { value: sql`${usageCounters.value} + ${n}` },
    });
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
