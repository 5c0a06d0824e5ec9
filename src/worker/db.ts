/**
 * Database access for the Worker: drizzle over the Neon serverless HTTP driver. When `LOCAL_DB_URL`
 * is set (`npm run dev`, tests) the driver's requests go to the local Neon-protocol endpoint instead;
 * nothing else in the Worker knows which one it talks to.
 *
 * Every round trip has a deadline (`DB_TIMEOUT_MS`, default `DEFAULT_DB_TIMEOUT_MS`): the driver's
 * fetch is aborted and the query fails with `DatabaseTimeoutError` (503 `database_timeout`, an
 * `isError` tool result), so a hanging database cannot hang a request. Every answer is read up to
 * `MAX_RESULT_BYTES`; a larger one fails with `ResultTooLargeError` (400 `result_too_large`). Every
 * answer's bytes are charged, as they are read, to the isolate's answer memory (src/answer-memory.ts)
 * under the hold of the HTTP request that sent the query (`createDb(env, hold)`: the request's own
 * handle over the isolate's cached one), and stay charged until that request has answered; an answer
 * past the isolate's budget or its app's share fails with `ServerBusyError` (503 `server_busy`).
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
import { type AnswerHold, answerMemory } from "../answer-memory.ts";
import type { Db } from "../db.ts";
import { DatabaseTimeoutError, ResultTooLargeError } from "../errors.ts";
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
/** The answer hold of the request a query belongs to (rides in the query's own fetchOptions). */
const HOLD = "ambaHold";

/**
 * The body of a database answer, each chunk charged to `hold` as it arrives: at most `limit`
 * bytes (null past it). A charge refused (`ServerBusyError`) cancels the body and is thrown. What
 * was charged is `charged()` (the caller gives it back when the answer is refused).
 */
async function chargedBody(
  response: Response,
  limit: number,
  hold: AnswerHold,
  overdraw: boolean,
  charged: (bytes: number) => void,
): Promise<Uint8Array | null> {
  const charge = (bytes: number) => {
    answerMemory.charge(hold, bytes, overdraw);
    charged(bytes);
  };
  const declared = response.headers.get("content-length");
  const encoding = response.headers.get("content-encoding");
  const plain = encoding === null || encoding.trim().toLowerCase() === "identity";
  if (
    declared !== null &&
    /^\d{1,15}$/.test(declared) &&
    plain &&
    !response.headers.has("transfer-encoding")
  ) {
    const bytes = Number(declared);
    if (bytes > limit) return null;
    charge(bytes); // before reading, so an answer past the budget is never read in
    const body = new Uint8Array(await response.arrayBuffer());
    return body.byteLength > limit ? null : body;
  }
  if (!response.body) return new Uint8Array();
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > limit) {
        void reader.cancel().catch(() => {});
        return null;
      }
      charge(value.byteLength);
      chunks.push(value);
    }
  } catch (err) {
    void reader.cancel().catch(() => {});
    throw err;
  }
  const body = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    body.set(chunk, at);
    at += chunk.byteLength;
  }
  return body;
}

/** The start of the driver's request body for one statement (a transaction's is `{"queries":…`). */
const ONE_STATEMENT = '{"query":"';

/**
 * Whether a driver request is one statement that only reads: a `select` (or `with` … `select`)
 * naming no write. Its text ends where the JSON string does (its own quotes are escaped), before
 * `","params":`. Anything else — writes, transactions, a read naming `update` in an identifier —
 * counts as possibly changing something: its answer is read whatever the budget (it was checked
 * before sending), so a caller never gets a refusal for a write that happened.
 */
export function readOnly(body: unknown): boolean {
  if (typeof body !== "string" || !body.startsWith(ONE_STATEMENT)) return false;
  const end = body.indexOf('","params":');
  const text = body.slice(ONE_STATEMENT.length, end < 0 ? undefined : end);
  return (
    /^\s*(?:select|with)\b/i.test(text) &&
    !/\b(?:insert|update|delete|merge|truncate|copy|call|do)\b/i.test(text)
  );
}

/**
 * The driver's fetch. The driver spreads a client's `fetchOptions`, then a query's own, into the
 * request init, so each client's route and each query's answer hold arrive here with the request
 * (endpoint and deadline are per client, while the driver's own settings are global). The body is
 * read under the same deadline, up to the size cap, charged to the hold as it arrives: the request's
 * hold while the request runs (released when it has answered), else — a query no request holds, or
 * one sent after its request answered (usage flushes) — a hold of its own, released once read and
 * never refused (such statements are the platform's own, small and few). A request's statement is
 * refused before it is sent when its app's share or the isolate's budget is already held; once
 * sent, a read's answer past either is refused, a write's is read (see {@link readOnly}). A refused
 * or failed answer gives back what it was charged.
 */
async function deadlineFetch(
  url: string,
  init: RequestInit & { [ROUTE]?: Route; [HOLD]?: AnswerHold },
): Promise<Response> {
  const { [ROUTE]: route, [HOLD]: requestHold, ...rest } = init;
  const timeoutMs = route?.timeoutMs ?? DEFAULT_DB_TIMEOUT_MS;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DatabaseTimeoutError(timeoutMs)), timeoutMs);
  const own = !requestHold || requestHold.closed;
  const hold = own ? answerMemory.open(requestHold?.app ?? "") : requestHold;
  const overdraw = own || !readOnly(rest.body);
  let charged = 0;
  let read = false;
  try {
    // A lapsed request's statements are refused (admit), also those that would write.
    if (requestHold && (!own || requestHold.lapsed)) answerMemory.admit(requestHold);
    const response = await fetch(route?.endpoint ?? url, { ...rest, signal: controller.signal });
    const body = await chargedBody(response, MAX_RESULT_BYTES, hold, overdraw, (bytes) => {
      charged += bytes;
    });
    if (body === null) throw new ResultTooLargeError(MAX_RESULT_BYTES);
    read = true;
    return new Response(body, { status: response.status, headers: response.headers });
  } catch (err) {
    throw controller.signal.aborted ? controller.signal.reason : err;
  } finally {
    clearTimeout(timer);
    if (own) answerMemory.release(hold);
    // Refused, failed, or read after its request released the hold (a statement left running, as
    // a background write started before the response): nobody holds it on.
    else if (!read || hold.closed) answerMemory.uncharge(hold, charged);
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

/** Query (or transaction) options with the request's answer hold added to their fetchOptions. */
function holding(options: object | undefined, hold: AnswerHold | undefined): object | undefined {
  if (!hold) return options;
  const { fetchOptions } = (options ?? {}) as { fetchOptions?: object };
  return { ...options, fetchOptions: { ...fetchOptions, [HOLD]: hold } };
}

/** One query, sent when first awaited (like the driver's own `NeonQueryPromise`, so a batch can collect it). */
class DeferredQuery implements PromiseLike<unknown> {
  readonly #driver: () => Promise<Driver>;
  #sent?: Promise<unknown>;
  readonly query: string;
  readonly params: unknown[] | undefined;
  readonly options: object | undefined;

  constructor(
    driver: () => Promise<Driver>,
    query: string,
    params?: unknown[],
    options?: object,
    hold?: AnswerHold,
  ) {
    this.#driver = driver;
    this.query = query;
    this.params = params;
    this.options = holding(options, hold);
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

/**
 * The client drizzle's session talks to: `query` and `transaction`, deferred to the loaded driver,
 * each sent with `hold` (the request's answer hold, when the handle is a request's).
 */
function deferredClient(driver: () => Promise<Driver>, hold?: AnswerHold): NeonHttpClient {
  const query = (text: string, params?: unknown[], options?: object) =>
    new DeferredQuery(driver, text, params, options, hold);
  const transaction = async (queries: DeferredQuery[], options?: object) => {
    const sql = await driver();
    return sql.transaction(
      queries.map((q) => sql.query(q.query, q.params, q.options)),
      holding(options, hold),
    );
  };
  return Object.assign(query, { query, transaction }) as unknown as NeonHttpClient;
}

/** What the handles of one route share: the dialect, the schema's relational config, the driver. */
interface Connection {
  dialect: PgDialect;
  relational: { fullSchema: typeof schema; schema: object; tableNamesMap: Record<string, string> };
  driver: () => Promise<Driver>;
  /** The handle of no request (each answer held while it is read). */
  db: Db;
}

/** A drizzle handle over `connection`, its queries sent with `hold`. */
function handle(connection: Omit<Connection, "db">, hold?: AnswerHold): Db {
  const { dialect, relational, driver } = connection;
  // biome-ignore lint/suspicious/noExplicitAny: drizzle's relational config, typed by its builder
  const session = new NeonHttpSession(deferredClient(driver, hold), dialect, relational as any, {});
  // drizzle's neon-http database is this plus `batch` (one transaction per batch).
  // biome-ignore lint/suspicious/noExplicitAny: as above
  const db = new PgDatabase(dialect, session, relational as any);
  return Object.assign(db, { batch: (queries: never) => session.batch(queries) }) as unknown as Db;
}

function connect(url: string, route: Route): Connection {
  const dialect = new PgDialect();
  const tables = extractTablesRelationalConfig(schema, createTableRelationsHelpers);
  const relational = { fullSchema: schema, schema: tables.tables, tableNamesMap: tables.tableNamesMap };
  const shared = { dialect, relational, driver: driverLoader(url, route) };
  return { ...shared, db: handle(shared) };
}

const cache = new Map<string, Connection>();

/**
 * A drizzle handle for one (connection string, endpoint, deadline): the isolate's own, or — given
 * the answer hold of an HTTP request — one for that request, whose answers stay charged to the hold
 * (a session and a database object over the isolate's cached dialect, schema config and driver).
 */
export function createDb(
  env: Pick<Env, "DATABASE_URL" | "LOCAL_DB_URL"> & Partial<Pick<Env, "DB_TIMEOUT_MS">>,
  hold?: AnswerHold,
): Db {
  const route: Route = { endpoint: env.LOCAL_DB_URL || undefined, timeoutMs: dbTimeoutMs(env.DB_TIMEOUT_MS) };
  const key = `${env.DATABASE_URL}|${route.endpoint ?? ""}|${route.timeoutMs}`;
  let connection = cache.get(key);
  if (!connection) {
    connection = connect(env.DATABASE_URL, route);
    cache.set(key, connection);
  }
  return hold ? handle(connection, hold) : connection.db;
}
