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

/** Add `n` to a project's counter for the current period (one upsert). */
export async function recordUsage(db: Db, projectId: string, metric: UsageMetric, n = 1): Promise<void> {
  await db
    .insert(usageCounters)
    .values({ projectId, period: billingPeriod(), metric, value: n })
    .onConflictDoUpdate({
      target: [usageCounters.projectId, usageCounters.period, usageCounters.metric],
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
    .select({ metric: usageCounters.metric, value: usageCounters.value })
    .from(usageCounters)
    .where(and(eq(usageCounters.projectId, projectId), eq(usageCounters.period, period)));
  const usage: Record<string, number> = Object.fromEntries(USAGE_METRICS.map((metric) => [metric, 0]));
  for (const row of rows) usage[row.metric] = Number(row.value);
  return { period, usage };
}
