/**
 * Billing: a project's usage for a billing period, as `GET …/billing` and `amba_billing_status` answer it.
 */
import * as v from "valibot";
import type { Db } from "../db.ts";
import { invalidInput } from "../errors.ts";
import { usageFor } from "./metering.ts";

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
