/**
 * Database access for the Worker: drizzle over the Neon serverless HTTP driver. When `LOCAL_DB_URL`
 * is set (`npm run dev`, tests) the driver's requests go to the local Neon-protocol endpoint instead;
 * nothing else in the Worker knows which one it talks to.
 *
 * Every round trip has a deadline (`DB_TIMEOUT_MS`, default `DEFAULT_DB_TIMEOUT_MS`): the driver's
 * fetch is aborted and the query fails with `DatabaseTimeoutError` (503 `database_timeout`, an
 * `isError` tool result), so a hanging database cannot hang a request. Every answer is read up to
 * `MAX_RESULT_BYTES`; a larger one fails with `ResultTooLargeError` (400 `result_too_large`).
 *
 * The driver is loaded on the first query an isolate sends, not at start-up: evaluating
 * `@neondatabase/serverless` (its Buffer polyfill, `process` shim, pg client, pg-types) was the
 * largest share of the Worker's start-up CPU (BENCHMARKS.md "Start-up and bundle"), and requests that
 * never reach the database (`initialize`, `ping`, CORS preflights, refused input) never pay it. The
 * handle the services get is built synchronously from drizzle's own neon-http session over a client
 * whose queries stay lazy until awaited — exactly what the driver's `NeonQueryPromise` is — so
 * `db.batch` still sends one transaction and every call site is unchanged.
 */
import type { NeonQueryFunction } from "@neondatabase/serverless";
import { createTableRelationsHelpers, extractTablesRelationalConfig } from "drizzle-orm";
import type { NeonHttpClient } from "drizzle-orm/neon-http/session";
import { NeonHttpSession } from "drizzle-orm/neon-http/session";
import { PgDatabase, PgDialect } from "drizzle-orm/pg-core";
import * as schema from "../../schema/index.ts";
import type { Db } from "../db.ts";
import { DatabaseTimeoutError, ResultTooLargeError } from "../errors.ts";
import { messageBytesWithin } from "../mcp/body.ts";
import type { Env } from "./env.ts";

/** Deadline of one database round trip (request sent → response body read), in ms. */
export const DEFAULT_DB_TIMEOUT_MS = 8_000;

/** The deadline a Worker runs with: `DB_TIMEOUT_MS` when it is a positive number, else the default. */
export function dbTimeoutMs(setting: string | undefined): number {
  const value = Number(setting);
  return setting && Number.isFinite(value) && value > 0 ? value : DEFAULT_DB_TIMEOUT_MS;
}

/**
 * Largest database answer read into the isolate (bytes of the driver's JSON). Rows may hold up to
 * 1 MiB each, so a page of 200 could be 200 MB — past the 128 MB an isolate has, and the requests
 * of other tenants running in it would fail with it. Parsed, 8 MiB of JSON is a few times that.
 */
export const MAX_RESULT_BYTES = 8 * 1024 * 1024;

/** Where one client's requests go and how long they may take (rides in the driver's fetchOptions). */
interface Route {
  endpoint?: string;
  timeoutMs: number;
}

const ROUTE = "ambaRoute";

/**
 * The driver's fetch. The driver spreads a client's `fetchOptions` into the request init, so each
 * client's route arrives here with the request (endpoint and deadline are per client, while the
 * driver's own settings are global). The body is read under the same deadline, up to the size cap.
 */
async function deadlineFetch(url: string, init: RequestInit & { [ROUTE]?: Route }): Promise<Response> {
  const { [ROUTE]: route, ...rest } = init;
  const timeoutMs = route?.timeoutMs ?? DEFAULT_DB_TIMEOUT_MS;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DatabaseTimeoutError(timeoutMs)), timeoutMs);
  try {
    const response = await fetch(route?.endpoint ?? url, { ...rest, signal: controller.signal });
    const body = await messageBytesWithin(response, MAX_RESULT_BYTES);
    if (body === null) throw new ResultTooLargeError(MAX_RESULT_BYTES);
    return new Response(body, { status: response.status, headers: response.headers });
  } catch (err) {
    throw controller.signal.aborted ? controller.signal.reason : err;
  } finally {
    clearTimeout(timer);
  }
}

export type { Db };

// biome-ignore lint/suspicious/noExplicitAny: the driver's query function, modes chosen per call
type Driver = NeonQueryFunction<any, any>;

/**
 * The real client for one route, loading the driver on first use. `drizzle-orm/neon-http` is loaded
 * with it and builds the client, so the driver gets drizzle's type parsers (timestamps, dates and
 * intervals left as text) exactly as a statically built drizzle instance would set them.
 */
function driverLoader(url: string, route: Route): () => Promise<Driver> {
  let loading: Promise<Driver> | undefined;
  return () =>
    (loading ??= Promise.all([import("@neondatabase/serverless"), import("drizzle-orm/neon-http")]).then(
      ([{ neon, neonConfig }, { drizzle }]) => {
        neonConfig.fetchFunction = deadlineFetch;
        return drizzle({ client: neon(url, { fetchOptions: { [ROUTE]: route } }) }).$client as Driver;
      },
    ));
}

/** One query, sent when first awaited (like the driver's own `NeonQueryPromise`, so a batch can collect it). */
class DeferredQuery implements PromiseLike<unknown> {
  readonly #driver: () => Promise<Driver>;
  #sent?: Promise<unknown>;
  readonly query: string;
  readonly params: unknown[] | undefined;
  readonly options: object | undefined;

  constructor(driver: () => Promise<Driver>, query: string, params?: unknown[], options?: object) {
    this.#driver = driver;
    this.query = query;
    this.params = params;
    this.options = options;
  }

  // biome-ignore lint/suspicious/noThenProperty: a thenable on purpose — drizzle awaits it
  then<A = unknown, B = never>(
    onSent?: ((value: unknown) => A | PromiseLike<A>) | null,
    onFailed?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    this.#sent ??= this.#driver().then((sql) => sql.query(this.query, this.params, this.options));
    return this.#sent.then(onSent, onFailed);
  }
}

/** The client drizzle's session talks to: `query` and `transaction`, deferred to the loaded driver. */
function deferredClient(driver: () => Promise<Driver>): NeonHttpClient {
  const query = (text: string, params?: unknown[], options?: object) =>
    new DeferredQuery(driver, text, params, options);
  const transaction = async (queries: DeferredQuery[], options?: object) => {
    const sql = await driver();
    return sql.transaction(
      queries.map((q) => sql.query(q.query, q.params, q.options)),
      options,
    );
  };
  return Object.assign(query, { query, transaction }) as unknown as NeonHttpClient;
}

function connect(url: string, route: Route): Db {
  const dialect = new PgDialect();
  const tables = extractTablesRelationalConfig(schema, createTableRelationsHelpers);
  const relational = { fullSchema: schema, schema: tables.tables, tableNamesMap: tables.tableNamesMap };
  const session = new NeonHttpSession(deferredClient(driverLoader(url, route)), dialect, relational, {});
  // drizzle's neon-http database is this plus `batch` (one transaction per batch).
  const db = new PgDatabase(dialect, session, relational);
  return Object.assign(db, { batch: (queries: never) => session.batch(queries) }) as unknown as Db;
}

const cache = new Map<string, Db>();

/** One drizzle instance per (connection string, endpoint, deadline) per isolate. */
export function createDb(
  env: Pick<Env, "DATABASE_URL" | "LOCAL_DB_URL"> & Partial<Pick<Env, "DB_TIMEOUT_MS">>,
): Db {
  const route: Route = { endpoint: env.LOCAL_DB_URL || undefined, timeoutMs: dbTimeoutMs(env.DB_TIMEOUT_MS) };
  const key = `${env.DATABASE_URL}|${route.endpoint ?? ""}|${route.timeoutMs}`;
  let db = cache.get(key);
  if (!db) {
    db = connect(env.DATABASE_URL, route);
    cache.set(key, db);
  }
  return db;
}
