/**
 * `/healthz`'s database check. Anyone may ask for it, without a credential or a rate limit (load
 * balancers and uptime monitors poll it), so it must not be a door to the database every tenant
 * shares: one check serves every `/healthz` of the isolate for {@link HEALTH_TTL_MS} after it
 * settles, and requests that arrive while it runs wait for that same check. At most one `select 1`
 * a second per isolate and database, however many ask.
 */
import { sql } from "drizzle-orm";
import { toAppError } from "../errors.ts";
import type { Db } from "./db.ts";

/** How long one check's answer is served again. */
export const HEALTH_TTL_MS = 1_000;

/** The database part of `/healthz`: its round trip, or the error code that ended it. */
export type DatabaseHealth = { ok: true; latency_ms: number } | { ok: false; error: string };

const checks = new WeakMap<Db, { settledAt: number | null; health: Promise<DatabaseHealth> }>();

async function check(db: Db): Promise<DatabaseHealth> {
  const started = Date.now();
  try {
    await db.execute(sql`select 1`);
    return { ok: true, latency_ms: Date.now() - started };
  } catch (err) {
    // The reason is logged, not shown: driver errors can name hosts and users.
    console.error("health check: database unreachable", err);
    return { ok: false, error: toAppError(err)?.code ?? "database_unavailable" };
  }
}

/** The database's health: the check running now or settled within {@link HEALTH_TTL_MS}, else a new one. */
export function databaseHealth(db: Db, now = Date.now()): Promise<DatabaseHealth> {
  const last = checks.get(db);
  if (last && (last.settledAt === null || now - last.settledAt < HEALTH_TTL_MS)) return last.health;
  const entry: { settledAt: number | null; health: Promise<DatabaseHealth> } = {
    settledAt: null,
    health: check(db).then((health) => {
      entry.settledAt = Date.now();
      return health;
    }),
  };
  checks.set(db, entry);
  return entry.health;
}
