/**
 * The count quotas on what a tenant adds to the tables every tenant shares (projects per developer,
 * client keys per project; collections per project count in src/data/collections.ts together with
 * their column bytes): one `count(*)` before the insert. Checked
 * before the insert's batch, so concurrent creates may pass together and end a few over — never
 * unboundedly, which is what the quotas are for.
 */
import { type SQL, sql } from "drizzle-orm";
import type { Db } from "./db.ts";
import { quotaExceeded } from "./errors.ts";

/** Throw 403 `quota_exceeded` (`message`) when `from` (a FROM … WHERE … clause) already counts `max` rows. */
export async function refuseAtQuota(db: Db, from: SQL, max: number, message: string): Promise<void> {
  const { rows } = await db.execute(sql`SELECT count(*)::int AS n FROM ${from}`);
  if (Number((rows[0] as { n: number | string }).n) >= max) throw quotaExceeded(message);
}
