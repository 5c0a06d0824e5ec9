/**
 * Billing: a project's usage for a billing period, as `GET …/billing` and `amba_billing_status`
 * answer it, and per UTC day, as `GET …/billing/daily`, `amba_billing_daily` and the console chart
 * read it.
 */
import { and, between, eq, sql } from "drizzle-orm";
import * as v from "valibot";
import { usageActiveUsers, usageCounters } from "../../schema/index.ts";
import { storageBytes } from "../data/sql.ts";
import type { Db } from "../db.ts";
import { invalidInput } from "../errors.ts";
import { parseInput } from "../validate.ts";
import { billingPeriod, DAY_MS, daysBetween, USAGE_METRICS, usageDay } from "./metering.ts";

/** Every known metric at 0: what a period or day with nothing recorded reports. */
const zeroUsage = (): Record<string, number> =>
  Object.fromEntries(USAGE_METRICS.map((metric) => [metric, 0]));

/**
 * A project's usage for one period: every known metric (0 by default) plus any other recorded,
 * `mau` (end users active in the period) and, for the current period, `storage_bytes` (what the
 * project's collection tables hold now, indexes included; no history is kept, so a past period
 * has none).
 */
export async function usageFor(
  db: Db,
  projectId: string,
  period: string = billingPeriod(),
): Promise<{ period: string; usage: Record<string, number> }> {
  const current = period === billingPeriod();
  const [rows, [totals]] = await Promise.all([
    db
      .select({ metric: usageCounters.metric, value: sql<string>`sum(${usageCounters.value})` })
      .from(usageCounters)
      .where(and(eq(usageCounters.projectId, projectId), eq(usageCounters.period, period)))
      .groupBy(usageCounters.metric),
    db
      .select({
        mau: sql<string>`count(*)`,
        storage: current ? sql<string>`(${storageBytes(projectId)})` : sql<null>`null`,
      })
      .from(usageActiveUsers)
      .where(and(eq(usageActiveUsers.projectId, projectId), eq(usageActiveUsers.period, period))),
  ]);
  const usage = zeroUsage();
  for (const row of rows) usage[row.metric] = Number(row.value);
  usage.mau = Number(totals?.mau ?? 0);
  if (current) usage.storage_bytes = Number(totals?.storage ?? 0);
  return { period, usage };
}

/** One day's usage: every known metric (0 by default) plus any other recorded. */
export interface DailyUsage {
  day: string;
  usage: Record<string, number>;
}

/**
 * A project's usage per UTC day from `from` to `to` (`YYYY-MM-DD`, both included, `from` ≤ `to`),
 * oldest first, every day present (zero-filled). One statement on the key prefix (project, period):
 * the periods the range spans bound the scan, the days cut it.
 */
export async function dailyUsageFor(
  db: Db,
  projectId: string,
  from: string,
  to: string,
): Promise<DailyUsage[]> {
  const rows = await db
    .select({
      day: sql<string>`to_char(${usageCounters.day}, 'YYYY-MM-DD')`,
      metric: usageCounters.metric,
      value: sql<string>`sum(${usageCounters.value})`,
    })
    .from(usageCounters)
    .where(
      and(
        eq(usageCounters.projectId, projectId),
        between(usageCounters.period, from.slice(0, 7), to.slice(0, 7)),
        between(usageCounters.day, from, to),
      ),
    )
    .groupBy(usageCounters.day, usageCounters.metric);
  const days = daysBetween(from, to).map((day) => ({
    day,
    usage: zeroUsage(),
  }));
  const byDay = new Map(days.map((d) => [d.day, d.usage]));
  for (const row of rows) {
    const usage = byDay.get(row.day);
    if (usage) usage[row.metric] = Number(row.value);
  }
  return days;
}

/** `GET …/billing?period=YYYY-MM` (default: the current UTC month). */
export const PeriodSchema = v.pipe(v.string(), v.regex(/^\d{4}-(0[1-9]|1[0-2])$/, "period must be YYYY-MM"));

/** Usage of a period (`GET …/billing?period=YYYY-MM`; `undefined` = the current UTC month). */
export async function billingStatus(
  db: Db,
  projectId: string,
  period: unknown,
): Promise<{ period: string; usage: Record<string, number> }> {
  if (period === undefined) return usageFor(db, projectId);
  const parsed = v.safeParse(PeriodSchema, period);
  if (!parsed.success) throw invalidInput("period: must be YYYY-MM");
  return usageFor(db, projectId, parsed.output);
}

/** Days the daily view shows by default: the console chart's 30, today included. */
export const DAILY_DEFAULT_DAYS = 30;
/** The longest range one daily read answers: a year (a leap one included) bounds the response. */
export const DAILY_MAX_DAYS = 366;

/**
 * A UTC calendar day, `YYYY-MM-DD`: a real one (no 2026-02-30), from 1970 on — nothing was metered
 * before, and it keeps a default range's start clear of the years PostgreSQL's `date` lacks (year 0).
 */
export const DaySchema = v.pipe(
  v.string(),
  v.regex(/^\d{4}-\d{2}-\d{2}$/, "must be YYYY-MM-DD"),
  v.check((day) => {
    const at = Date.parse(`${day}T00:00:00Z`);
    return Number.isFinite(at) && usageDay(new Date(at)) === day;
  }, "must be a calendar day YYYY-MM-DD"),
  v.check((day) => day >= "1970-01-01", "must be 1970-01-01 or later"),
);

/** `GET …/billing/daily?from=&to=` (UTC days, both included; defaults: the last 30 days to today). */
export const DailyRangeSchema = v.object({ from: v.optional(DaySchema), to: v.optional(DaySchema) });

/** The first day of the default range ending with `to`: {@link DAILY_DEFAULT_DAYS} days, `to` included. */
const defaultFrom = (to: string) =>
  usageDay(new Date(Date.parse(`${to}T00:00:00Z`) - (DAILY_DEFAULT_DAYS - 1) * DAY_MS));

/**
 * Usage per UTC day over a range, oldest first, zero-filled: `to` defaults to today, `from` to 29
 * days before `to`. A range ending before it starts or longer than {@link DAILY_MAX_DAYS} is a 400.
 */
export async function dailyUsage(
  db: Db,
  projectId: string,
  range: unknown,
  now: Date = new Date(),
): Promise<{ from: string; to: string; days: DailyUsage[] }> {
  const input = parseInput(DailyRangeSchema, range);
  const to = input.to ?? usageDay(now);
  const from = input.from ?? defaultFrom(to);
  if (from > to) throw invalidInput("from: must not be after to");
  const span = (Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / DAY_MS + 1;
  if (span > DAILY_MAX_DAYS) throw invalidInput(`from: the range may span at most ${DAILY_MAX_DAYS} days`);
  return { from, to, days: await dailyUsageFor(db, projectId, from, to) };
}
