/**
 * `/healthz`'s database check. Anyone may ask for it, without a credential or a rate limit (load
 * balancers and uptime monitors poll it), so it must not be a door to the database every tenant
 * shares: a check's answer serves every `/healthz` of the isolate for {@link HEALTH_TTL_MS}, and
 * while a check runs the previous answer serves the requests that arrive meanwhile. Only the first
 * requests of a fresh isolate, before any check has answered, each run their own: a Worker request
 * cannot wait on another request's I/O (workerd refuses it: "Cannot perform I/O on behalf of a
 * different request"), so concurrent requests cannot share one check in flight. At most one
 * `select 1` a second per isolate and database, however many ask, after the first answer.
 */
import { sql } from "drizzle-orm";
import type { Db } from "../db.ts";
import { toAppError } from "../errors.ts";

/** How long one check's answer is served again. */
export const HEALTH_TTL_MS = 1_000;

/** The database part of `/healthz`: its round trip, or the error code that ended it. */
export type DatabaseHealth = { ok: true; latency_ms: number } | { ok: false; error: string };

/**
 * How long a running check keeps others on the last answer: past the database deadline (8 s), a
 * check whose request was cancelled before it finished (its `finally` never ran) stops counting.
 */
const RUNNING_MAX_MS = 10_000;

interface Checks {
  last?: { at: number; health: DatabaseHealth };
  /** When the running check started, or null. */
  runningSince: number | null;
}

/** Per database (connection string and endpoint): the last answer and whether a check runs. */
const checks = new Map<string, Checks>();

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

/**
 * The health of the database `key` names (reached through `db`): the last answer while it is
 * younger than {@link HEALTH_TTL_MS} or while a newer check runs, else a new check.
 */
export async function databaseHealth(db: Db, key: string): Promise<DatabaseHealth> {
  let entry = checks.get(key);
  if (!entry) {
    entry = { runningSince: null };
    checks.set(key, entry);
  }
  const { last, runningSince } = entry;
  const now = Date.now();
  const running = runningSince !== null && now - runningSince < RUNNING_MAX_MS;
  if (last && (running || now - last.at < HEALTH_TTL_MS)) return last.health;
  entry.runningSince = now;
  try {
    const health = await check(db);
    entry.last = { at: Date.now(), health };
    return health;
  } finally {
    entry.runningSince = null;
  }
}
