/**
 * The data service: the ONE place collection rows are read and written. REST routes and app-MCP
 * tools both call these functions with raw input; validation (schemas built from the column
 * metadata), access policy, ownership stamping and soft-delete filtering happen here and nowhere
 * else. SQL is compiled by sql.ts; this module only decides which conditions apply and executes.
 */

import type { SQL } from "drizzle-orm";
import { sql } from "drizzle-orm";
import type * as v from "valibot";
import { pgError } from "../db-errors.ts";
import { AppError, conflict, forbidden, invalidInput, notFound } from "../errors.ts";
import { WeightedLru } from "../mcp/lru.ts";
import { parseInput } from "../validate.ts";
import { APP_SLOT_LIMITS, AppSlots } from "./app-slots.ts";
import type { Access, CollectionMeta, ColumnSpec } from "./columns.ts";
import { decodeCursor, encodeCursor } from "./cursor.ts";
import {
  type AggregateInput,
  DEFAULT_LIMIT,
  DEFAULT_NEAREST_LIMIT,
  type DeleteInput,
  type FindInput,
  type GetInput,
  type NearestInput,
  operationSchemas,
  type UpdateInput,
  whereDepthProblem,
} from "./schemas.ts";
import {
  aggregateRows,
  compileWhere,
  hardDeleteRow,
  insertRow,
  keysetCondition,
  metricKey,
  nearestRows,
  notDeleted,
  ownedBy,
  parseOrder,
  selectById,
  selectPage,
  softDeleteRow,
  updateRow,
  whereBudgetProblem,
} from "./sql.ts";
import type { StorageGuard } from "./storage-quota.ts";
import { uuidv7 } from "./uuid7.ts";

/** Anything that runs a drizzle `sql` query and returns rows (neon-http, PGlite, node-postgres). */
export interface SqlRunner {
  execute(query: SQL): PromiseLike<{ rows: unknown[] }>;
}

/** Who is acting: developer scope (all rows) or an end user (policy applies). */
export interface Actor {
  scope: "developer" | "end_user";
  /** The signed-in end user (required for `end_user`). */
  userId?: string;
  /**
   * The developer whose app this is: the app's row statements run in that developer's database
   * slots (src/data/app-slots.ts), shared by all of the developer's apps — with slots per app, a
   * developer's 100 projects could hold 100 apps' worth of the database's backends from one isolate.
   */
  tenant: string;
}

/** A row as returned to callers: server-managed columns plus the collection's columns. */
export type Row = Record<string, unknown>;

export interface Page {
  rows: Row[];
  next_cursor: string | null;
}

export interface DeleteResult {
  id: string;
  deleted: true;
  hard: boolean;
}

/** The operations, by the names the app MCP tools use (`<collection>_<op>`). */
export type Operation = "list" | "get" | "find" | "insert" | "update" | "delete" | "aggregate" | "nearest";

// ─── policy ─────────────────────────────────────────────────────────────────────────────────────

function endUserId(actor: Actor): string {
  if (!actor.userId) throw forbidden("no signed-in user");
  return actor.userId;
}

/** Conditions every read applies: not soft-deleted, and owner-only reads for end users. */
function readConditions(actor: Actor, access: Access): SQL[] {
  if (actor.scope === "developer" || access.read === "public") return [notDeleted];
  return [notDeleted, ownedBy(endUserId(actor))];
}

/** Conditions a write applies (throws when the actor may not write at all). */
function writeConditions(actor: Actor, meta: CollectionMeta): SQL[] {
  if (actor.scope === "developer") return [notDeleted];
  if (meta.access.write === "developer") {
    throw forbidden(`"${meta.name}" is writable by the developer only`);
  }
  return [notDeleted, ownedBy(endUserId(actor))];
}

// ─── execution ──────────────────────────────────────────────────────────────────────────────────

/** Postgres errors caused by the input become 400 / 409; anything else stays unexpected. */
export function mapDatabaseError(err: unknown): unknown {
  if (err instanceof AppError) return err;
  const pg = pgError(err);
  if (!pg) return err;
  if (pg.code === "23505") {
    return conflict(`duplicate value for a unique column${pg.detail ? `: ${pg.detail}` : ""}`);
  }
  if (pg.code === "23502") return invalidInput(`a required column is missing: ${pg.message}`);
  if (pg.code.startsWith("22") || pg.code.startsWith("23") || pg.code === "54000") {
    return invalidInput(`invalid value: ${pg.message}`);
  }
  if (pg.code === "42P01") return notFound("collection not found");
  if (pg.code === "42703" || pg.code === "42701") {
    return conflict("the collection changed while the request ran; retry");
  }
  return err;
}

/** Run a query, mapping input-caused database errors. */
export async function run(db: SqlRunner, query: SQL): Promise<Row[]> {
  try {
    const result = await db.execute(query);
    return result.rows as Row[];
  } catch (err) {
    throw mapDatabaseError(err);
  }
}

/**
 * The isolate's bound on each app's row statements in flight (src/data/app-slots.ts): every
 * statement on an app's rows, REST and app MCP alike, runs through `runRows` and holds a slot while
 * the database works on it. Exported for the tests, which read how many are running.
 */
export const appSlots = new AppSlots(APP_SLOT_LIMITS);

/**
 * `run` in one of the app's database slots — its developer's, which all of the developer's apps
 * share: waits for one (or is refused, 429) past the bound; the developer's calls wait ahead of the
 * end users'.
 */
function runRows(db: SqlRunner, actor: Actor, query: SQL): Promise<Row[]> {
  return appSlots.run(actor.tenant, () => run(db, query), actor.scope === "developer");
}

const rowsOf = (rows: Row[]): Row[] => rows.map((r) => r.row as Row);

// ─── operations ─────────────────────────────────────────────────────────────────────────────────

/**
 * Parse an input that may carry a `where`: its nesting is checked first, iteratively, because the
 * `where` schema is recursive (a filter nested thousands deep would overflow the stack in it), then
 * its condition and list budgets, so the schema never walks more than they allow.
 */
function parseFiltered<S extends v.GenericSchema>(schema: S, input: unknown): v.InferOutput<S> {
  if (typeof input === "object" && input !== null && "where" in input) {
    const { where } = input as { where: unknown };
    const problem = whereDepthProblem(where) ?? whereBudgetProblem(where);
    if (problem) throw invalidInput(problem);
  }
  return parseInput(schema, input);
}

/** `list`: newest first, keyset paged. */
export function listRows(db: SqlRunner, actor: Actor, meta: CollectionMeta, input: unknown): Promise<Page> {
  const parsed = parseInput(operationSchemas(meta).list, input ?? {});
  return page(db, actor, meta, { limit: parsed.limit, cursor: parsed.cursor });
}

/** `find`: typed where, any sortable order, keyset paged. */
export function findRows(db: SqlRunner, actor: Actor, meta: CollectionMeta, input: unknown): Promise<Page> {
  return page(db, actor, meta, parseFiltered(operationSchemas(meta).find, input ?? {}));
}

async function page(db: SqlRunner, actor: Actor, meta: CollectionMeta, input: FindInput): Promise<Page> {
  const order = parseOrder(meta, input.order);
  const limit = input.limit ?? DEFAULT_LIMIT;
  const conditions = readConditions(actor, meta.access);
  if (input.where) conditions.push(compileWhere(meta, input.where));
  if (input.cursor) conditions.push(keysetCondition(order, decodeCursor(input.cursor, order.signature)));
  const rows = rowsOf(await runRows(db, actor, selectPage(meta, conditions, order, limit + 1)));
  if (rows.length <= limit) return { rows, next_cursor: null };
  rows.length = limit;
  const last = rows[limit - 1] as Row;
  return {
    rows,
    next_cursor: encodeCursor({
      order: order.signature,
      value: last[order.column.name] ?? null,
      id: last.id as string,
    }),
  };
}

/** `get`: one visible row by id (404 when absent, soft-deleted or not visible). */
export async function getRow(
  db: SqlRunner,
  actor: Actor,
  meta: CollectionMeta,
  input: unknown,
): Promise<Row> {
  const { id } = parseInput(operationSchemas(meta).get, input) as GetInput;
  const [row] = rowsOf(await runRows(db, actor, selectById(meta, id, readConditions(actor, meta.access))));
  if (!row) throw notFound(`no row ${id} in ${meta.name}`);
  return row;
}

/**
 * `insert`: writable columns only; end users become the row's owner. Refused while the project is
 * over its storage quota (`storage`: no round trip, src/data/storage-quota.ts).
 */
export async function insertRowFor(
  db: SqlRunner,
  actor: Actor,
  meta: CollectionMeta,
  input: unknown,
  storage: StorageGuard,
): Promise<Row> {
  const values = parseInput(operationSchemas(meta).insert, input);
  writeConditions(actor, meta);
  storage(meta.projectId, "rows");
  const owner = actor.scope === "end_user" ? endUserId(actor) : null;
  const [row] = rowsOf(await runRows(db, actor, insertRow(meta, uuidv7(), owner, values)));
  return row as Row;
}

/** Why a write matched no row: 403 when the caller can see it (not theirs), else 404. */
async function missingForWrite(
  db: SqlRunner,
  actor: Actor,
  meta: CollectionMeta,
  id: string,
): Promise<AppError> {
  const [visible] = await runRows(db, actor, selectById(meta, id, readConditions(actor, meta.access)));
  return visible ? forbidden("you can only change rows you own") : notFound(`no row ${id} in ${meta.name}`);
}

/** `update`: merge patch by id; bumps `updated_at`. Refused over the storage quota, as `insert`. */
export async function updateRowFor(
  db: SqlRunner,
  actor: Actor,
  meta: CollectionMeta,
  input: unknown,
  storage: StorageGuard,
): Promise<Row> {
  const { id, patch } = parseInput(operationSchemas(meta).update, input) as UpdateInput;
  const conditions = writeConditions(actor, meta);
  storage(meta.projectId, "rows");
  const [row] = rowsOf(await runRows(db, actor, updateRow(meta, id, patch, conditions)));
  if (!row) throw await missingForWrite(db, actor, meta, id);
  return row;
}

/** `delete`: soft by default; `hard: true` removes the row (developer scope only). */
export async function deleteRowFor(
  db: SqlRunner,
  actor: Actor,
  meta: CollectionMeta,
  input: unknown,
): Promise<DeleteResult> {
  const { id, hard = false } = parseInput(operationSchemas(meta).delete, input) as DeleteInput;
  if (hard && actor.scope !== "developer")
    throw forbidden("hard delete is available in developer scope only");
  const conditions = writeConditions(actor, meta);
  // A developer may purge a row that is already soft-deleted (hard delete is developer-only).
  const statement = hard ? hardDeleteRow(meta, id, []) : softDeleteRow(meta, id, conditions);
  const [row] = await runRows(db, actor, statement);
  if (!row) throw await missingForWrite(db, actor, meta, id);
  return { id, deleted: true, hard };
}

/** `aggregate`: count/sum/avg/min/max, optionally grouped; `{rows: [{count, sum_x, …groups}]}`. */
export async function aggregate(
  db: SqlRunner,
  actor: Actor,
  meta: CollectionMeta,
  input: unknown,
): Promise<{ rows: Row[] }> {
  const parsed = parseFiltered(operationSchemas(meta).aggregate, input) as AggregateInput;
  const seen = new Set<string>();
  const metrics = parsed.metrics.filter((m) => {
    const key = metricKey(m);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  const groupBy = [...new Set(parsed.group_by ?? [])];
  const clash = groupBy.find((name) => seen.has(name));
  if (clash) throw invalidInput(`group_by: column "${clash}" has the same name as a metric result`);
  const conditions = readConditions(actor, meta.access);
  if (parsed.where) conditions.push(compileWhere(meta, parsed.where));
  return { rows: rowsOf(await runRows(db, actor, aggregateRows(meta, metrics, groupBy, conditions))) };
}

/** `nearest`: rows by cosine distance to a vector, each with `distance`. */
export async function nearest(
  db: SqlRunner,
  actor: Actor,
  meta: CollectionMeta,
  input: unknown,
): Promise<{ rows: Row[] }> {
  const schema = operationSchemas(meta).nearest;
  if (!schema) throw invalidInput(`"${meta.name}" has no vector column`);
  const parsed = parseFiltered(schema, input) as NearestInput;
  const vectors = meta.columns.filter((c) => c.type === "vector");
  const column = (parsed.column ? vectors.find((c) => c.name === parsed.column) : vectors[0]) as ColumnSpec;
  if (parsed.vector.length !== column.dimensions) {
    throw invalidInput(`vector: expected ${column.dimensions} numbers for "${column.name}"`);
  }
  // Cosine distance to a zero vector is NaN for every row: there is no order to answer with.
  if (parsed.vector.every((x) => x === 0)) {
    throw invalidInput("vector: must not be all zeros (cosine distance to a zero vector is undefined)");
  }
  const conditions = readConditions(actor, meta.access);
  if (parsed.where) conditions.push(compileWhere(meta, parsed.where));
  const limit = parsed.limit ?? DEFAULT_NEAREST_LIMIT;
  return {
    rows: rowsOf(await runRows(db, actor, nearestRows(meta, column, parsed.vector, conditions, limit))),
  };
}

type OperationFn = (
  db: SqlRunner,
  actor: Actor,
  meta: CollectionMeta,
  input: unknown,
  storage: StorageGuard,
) => Promise<unknown>;

const OPERATIONS: Record<Operation, OperationFn> = {
  list: listRows,
  get: getRow,
  find: findRows,
  insert: insertRowFor,
  update: updateRowFor,
  delete: deleteRowFor,
  aggregate,
  nearest,
};

/** Run an operation by name (the app MCP's collection tools); `storage` guards the growing writes. */
export function runOperation(
  db: SqlRunner,
  actor: Actor,
  meta: CollectionMeta,
  operation: Operation,
  input: unknown,
  storage: StorageGuard,
): Promise<unknown> {
  return OPERATIONS[operation](db, actor, meta, input, storage);
}

// ─── metadata ───────────────────────────────────────────────────────────────────────────────────

interface MetaRow {
  name: string;
  columns: ColumnSpec[] | string;
  access: Access | string;
}

const parseJson = <T>(value: T | string): T => (typeof value === "string" ? (JSON.parse(value) as T) : value);

const asText = (value: unknown): string => (typeof value === "string" ? value : JSON.stringify(value));

// Loaded metadata is interned by content: every request loads it afresh, and the per-metadata caches
// (operation schemas ≈ 50 µs to build, the rendered row SELECT) are keyed by object. Entries are
// frozen (shared) and the map is bounded by the characters of their content (a collection of 100
// described columns is ≈ 60 KB), least recently used out.
const INTERNED_BUDGET_CHARS = 2 * 1024 * 1024;
const interned = new WeightedLru<string, CollectionMeta>(INTERNED_BUDGET_CHARS, (_meta, key) => key.length);

/**
 * The interned copy of metadata read elsewhere (the app MCP's KV copy of an app's surface), so the
 * per-metadata caches find it as they find metadata loaded here.
 */
export const internCollection = (meta: CollectionMeta): CollectionMeta =>
  toMeta(meta.projectId, { name: meta.name, columns: meta.columns, access: meta.access });

function toMeta(projectId: string, row: MetaRow): CollectionMeta {
  const key = `${projectId}\n${row.name}\n${asText(row.columns)}\n${asText(row.access)}`;
  const known = interned.get(key);
  if (known) return known;
  const columns = parseJson(row.columns);
  for (const column of columns) Object.freeze(column);
  const meta: CollectionMeta = Object.freeze({
    projectId,
    name: row.name,
    columns: Object.freeze(columns) as ColumnSpec[],
    access: Object.freeze(parseJson(row.access)),
  });
  interned.set(key, meta);
  return meta;
}

/** The metadata of one collection, or null. */
export async function loadCollection(
  db: SqlRunner,
  projectId: string,
  name: string,
): Promise<CollectionMeta | null> {
  const rows = (await run(
    db,
    sql`SELECT name, columns, access FROM collections WHERE project_id = ${projectId}::uuid AND name = ${name}`,
  )) as unknown as MetaRow[];
  const row = rows[0];
  return row ? toMeta(projectId, row) : null;
}

/** The metadata of one collection, or 404. */
export async function requireCollection(
  db: SqlRunner,
  projectId: string,
  name: string,
): Promise<CollectionMeta> {
  const meta = await loadCollection(db, projectId, name);
  if (!meta) throw notFound(`collection "${name}" not found`);
  return meta;
}

/** Every collection of a project, by name. */
export async function listCollections(db: SqlRunner, projectId: string): Promise<CollectionMeta[]> {
  const rows = (await run(
    db,
    sql`SELECT name, columns, access FROM collections WHERE project_id = ${projectId}::uuid ORDER BY name`,
  )) as unknown as MetaRow[];
  return rows.map((row) => toMeta(projectId, row));
}
