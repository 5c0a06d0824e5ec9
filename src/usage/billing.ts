/**
 * Billing: a project's usage for a billing period, as `GET …/billing` and `amba_billing_status`
 * answer it, and per UTC day, as `GET …/billing/daily`, `amba_billing_daily` and the console chart
 * read it.
 */
import * as v from "valibot";
import type { Db } from "../db.ts";
import { invalidInput } from "../errors.ts";
import { parseInput } from "../validate.ts";
import { DAY_MS, type DailyUsage, dailyUsageFor, usageDay, usageFor } from "./metering.ts";

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
