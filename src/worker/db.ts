/**
 * Database access for the Worker: drizzle over the Neon serverless HTTP driver. When `LOCAL_DB_URL`
 * is set (`npm run dev`, tests) the driver's requests go to the local Neon-protocol endpoint instead;
 * nothing else in the Worker knows which one it talks to.
 *
 * Every round trip has a deadline (`DB_TIMEOUT_MS`, default `DEFAULT_DB_TIMEOUT_MS`): the driver's
 * fetch is aborted and the query fails with `DatabaseTimeoutError` (503 `database_timeout`, an
 * `isError` tool result), so a hanging database cannot hang a request.
 */
import { neon, neonConfig } from "@neondatabase/serverless";
import { drizzle } from "drizzle-orm/neon-http";
import * as schema from "../../schema/index.ts";
import { DatabaseTimeoutError } from "../errors.ts";
import type { Env } from "./env.ts";

/** Deadline of one database round trip (request sent → response body read), in ms. */
export const DEFAULT_DB_TIMEOUT_MS = 8_000;

/** The deadline a Worker runs with: `DB_TIMEOUT_MS` when it is a positive number, else the default. */
export function dbTimeoutMs(setting: string | undefined): number {
  const value = Number(setting);
  return setting && Number.isFinite(value) && value > 0 ? value : DEFAULT_DB_TIMEOUT_MS;
}

/** Where one client's requests go and how long they may take (rides in the driver's fetchOptions). */
interface Route {
  endpoint?: string;
  timeoutMs: number;
}

const ROUTE = "ambaRoute";

/**
 * The driver's fetch. The driver spreads a client's `fetchOptions` into the request init, so each
 * client's route arrives here with the request (endpoint and deadline are per client, while the
 * driver's own settings are global). The body is read under the same deadline.
 */
async function deadlineFetch(url: string, init: RequestInit & { [ROUTE]?: Route }): Promise<Response> {
  const { [ROUTE]: route, ...rest } = init;
  const timeoutMs = route?.timeoutMs ?? DEFAULT_DB_TIMEOUT_MS;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DatabaseTimeoutError(timeoutMs)), timeoutMs);
  try {
    const response = await fetch(route?.endpoint ?? url, { ...rest, signal: controller.signal });
    const body = await response.arrayBuffer();
    return new Response(body, { status: response.status, headers: response.headers });
  } catch (err) {
    throw controller.signal.aborted ? controller.signal.reason : err;
  } finally {
    clearTimeout(timer);
  }
}

export type Db = ReturnType<typeof connect>;

const connect = (url: string, route: Route) =>
  drizzle({ client: neon(url, { fetchOptions: { [ROUTE]: route } }), schema });

const cache = new Map<string, Db>();

/** One drizzle instance per (connection string, endpoint, deadline) per isolate. */
export function createDb(env: Pick<Env, "DATABASE_URL" | "LOCAL_DB_URL" | "DB_TIMEOUT_MS">): Db {
  const route: Route = { endpoint: env.LOCAL_DB_URL || undefined, timeoutMs: dbTimeoutMs(env.DB_TIMEOUT_MS) };
  const key = `${env.DATABASE_URL}|${route.endpoint ?? ""}|${route.timeoutMs}`;
  let db = cache.get(key);
  if (!db) {
    neonConfig.fetchFunction = deadlineFetch;
    db = connect(env.DATABASE_URL, route);
    cache.set(key, db);
  }
  return db;
}
