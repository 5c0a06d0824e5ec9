/**
 * SQL compilation for collections — pure: metadata + validated input in, drizzle `sql` out; nothing
 * here executes. Identifiers only ever come from validated metadata and go through
 * `sql.identifier`; values are always bound parameters (column defaults in DDL are the one literal,
 * see values.ts). Row results are built as JSON in SQL (`row_to_json`) so every driver returns the
 * same shapes: ISO timestamps, numbers, arrays, vectors as number arrays.
 */
import { Name, SQL, StringChunk, sql } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import { invalidInput } from "../errors.ts";
import { isPlainObject } from "../mcp/jsonrpc.ts";
import {
  type AlterCollection,
  arrayElementType,
  type CollectionMeta,
  type ColumnSpec,
  type ColumnType,
  isValidValue,
  ORDERABLE_TYPES,
  pgType,
} from "./columns.ts";
import type { CursorPosition } from "./cursor.ts";
import type { Metric, Where } from "./schemas.ts";
import { acceptsBareValue, MAX_WHERE_DEPTH, operatorsFor, visibleColumns } from "./schemas.ts";
import { bind, bindList, defaultLiteral } from "./values.ts";

type Column = Pick<ColumnSpec, "name" | "type" | "dimensions" | "required">;

/** Deepest `and` / `or` / `not` nesting and most conditions one `where` may have. */
export const MAX_WHERE_CONDITIONS = 100;
/** Most `like` / `ilike` pattern characters in one `where` (each pattern: MAX_PATTERN_LENGTH). */
export const MAX_WHERE_PATTERN_CHARS = 1024;
/**
 * Most `in` / `nin` / `overlaps` / `contains` values in one `where`, all lists together (one list:
 * MAX_LIST_VALUES). Under `or` every list is checked on every row scanned: 100 lists of 1,000 held
 * PostgreSQL for seconds where one list costs milliseconds (BENCHMARKS.md "Database cost per call").
 */
export const MAX_WHERE_LIST_VALUES = 1000;
/**
 * Most values the matching operators — `overlaps` and `contains`, on array and json columns — take in
 * one `where`, all together (a json operand counts every value in it, at any depth). Postgres
 * compares each of them with the elements of every row scanned: one `overlaps` of 1,000 values took
 * 2.7 s over 100,000 rows, a json `contains` of 10,000 passed the 8 s deadline; 100 take ≈ 0.3 s.
 */
export const MAX_WHERE_MATCH_VALUES = 100;
/** Most groups one aggregate returns. */
export const MAX_GROUPS = 1000;

/** The Postgres schema holding a project's collection tables: `app_<project uuid hex>`. */
export function projectSchemaName(projectId: string): string {
  const hex = projectId.replace(/-/g, "").toLowerCase();
  if (!/^[0-9a-f]{32}$/.test(hex)) throw invalidInput("invalid project id");
  return `app_${hex}`;
}

/**
 * The bytes of the project's collection tables (rows, TOAST and indexes) in its own schema plus the
 * bytes its stored events count (its `app_event_bytes` rows, at most 16; src/events/service.ts):
 * what the billing view reports as `storage_bytes` and the storage quota (storage-quota.ts) is
 * checked against. The catalog and the counter only (a size per table, a sum per project), never
 * the rows.
 */
/**
 * What `storageBytes` sums, apart: the app's tables (`tables`) and its stored events (`events`). The
 * storage quota refuses row writes on the tables alone (src/data/storage-quota.ts).
 */
export const storageParts = (projectId: string): SQL =>
  sql`select (select coalesce(sum(pg_total_relation_size(c.oid)), 0) from pg_class c
      join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = ${projectSchemaName(projectId)} and c.relkind = 'r') as tables,
    (select coalesce(sum(b.bytes), 0) from app_event_bytes b where b.project_id = ${projectId}::uuid) as events`;

export const storageBytes = (projectId: string): SQL =>
  sql`select (select coalesce(sum(pg_total_relation_size(c.oid)), 0) from pg_class c
      join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = ${projectSchemaName(projectId)} and c.relkind = 'r')
    + (select coalesce(sum(b.bytes), 0) from app_event_bytes b where b.project_id = ${projectId}::uuid)
    as bytes`;

/** `"app_…"."<collection>"` */
export const tableRef = (meta: Pick<CollectionMeta, "projectId" | "name">): SQL =>
  sql`${sql.identifier(projectSchemaName(meta.projectId))}.${sql.identifier(meta.name)}`;

// Hot-path statements (row reads) are rebuilt per call and rendered by drizzle per call, a walk over
// every nested chunk. Parameterless pieces are therefore rendered once, by the same Pg dialect the
// drivers use, into one raw chunk: the final SQL text and parameters are unchanged.
const dialect = new PgDialect();

/** A parameterless fragment rendered to one raw chunk (same text drizzle would produce). */
function frozen(fragment: SQL): SQL {
  const { sql: text, params } = dialect.sqlToQuery(fragment);
  if (params.length) throw new Error("frozen SQL fragment must not carry parameters");
  return sql.raw(text);
}

/**
 * The same statement as one flat chunk list (text, parameter, text, …), which drivers render in one
 * cheap pass instead of walking the nested tree with drizzle's `is()` checks. Only text, nested
 * `SQL`, identifiers and primitive parameters are flattened; anything else returns `query` as is.
 */
export function flat(query: SQL): SQL {
  const chunks: unknown[] = [];
  let text = "";
  const walk = (node: SQL): boolean => {
    if ((node as unknown as { shouldInlineParams: boolean }).shouldInlineParams) return false;
    for (const chunk of node.queryChunks as unknown[]) {
      if (chunk instanceof StringChunk) text += chunk.value.join("");
      else if (chunk instanceof SQL) {
        if (!walk(chunk)) return false;
      } else if (chunk instanceof Name) text += dialect.escapeName(chunk.value);
      else if (typeof chunk === "string" || typeof chunk === "number" || typeof chunk === "boolean") {
        chunks.push(new StringChunk(text), chunk);
        text = "";
      } else if (chunk !== undefined) return false;
    }
    return true;
  };
  if (!walk(query)) return query;
  chunks.push(new StringChunk(text));
  return new SQL(chunks as SQL["queryChunks"]);
}

/** `t."<column>"` — every row query aliases the table as `t`. */
export const col = (name: string): SQL => sql.raw(`t.${dialect.escapeName(name)}`);

// ─── DDL ────────────────────────────────────────────────────────────────────────────────────────

/** FNV-1a (32 bits) of `text`, as 8 hex digits: a short, stable stand-in for a long name part. */
function fnv1a(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0).toString(16).padStart(8, "0");
}

/** Postgres' identifier length: a longer name is cut to it. */
const MAX_IDENTIFIER_LENGTH = 63;

/**
 * The name of one of a collection table's own indexes or constraints: `_<table>:<tag>` (tags:
 * `pkey`, `created`, `owner`, `<column>:key`, `<column>:hnsw`). Left to Postgres they were
 * `<table>_pkey`, `<table>_created_at_id_idx`, `<table>_<column>_key`, … in the schema the
 * collection tables share, so a collection later created under such a name failed ("relation
 * already exists", answered 409 "collection … already exists"). No collection name starts with `_`
 * and no name holds `:` (columns.ts), so no table can meet these and no two tables' names meet
 * (`:` ends the table's part). A name past Postgres' 63 characters, which it would cut (two long
 * column names could then meet), takes a hash of the tag instead.
 */
function internalName(table: string, tag: string): ReturnType<typeof sql.identifier> {
  const name = `_${table}:${tag}`;
  return sql.identifier(name.length <= MAX_IDENTIFIER_LENGTH ? name : `_${table}:${fnv1a(tag)}`);
}

function columnDefinition(meta: Pick<CollectionMeta, "name">, column: ColumnSpec): SQL {
  const parts: SQL[] = [sql`${sql.identifier(column.name)} ${sql.raw(pgType(column))}`];
  if (column.required) parts.push(sql`NOT NULL`);
  if (column.default !== undefined && column.default !== null)
    parts.push(sql`DEFAULT ${defaultLiteral(column)}`);
  if (column.unique) parts.push(sql`CONSTRAINT ${internalName(meta.name, `${column.name}:key`)} UNIQUE`);
  return sql.join(parts, sql` `);
}

const vectorIndex = (meta: CollectionMeta, column: ColumnSpec): SQL =>
  sql`CREATE INDEX ${internalName(meta.name, `${column.name}:hnsw`)} ON ${tableRef(meta)} USING hnsw (${sql.identifier(column.name)} vector_cosine_ops)`;

/** Statements creating a collection's table (and the project schema) with its indexes. */
export function createTableStatements(meta: CollectionMeta): SQL[] {
  const table = tableRef(meta);
  const columns = [
    sql`id uuid CONSTRAINT ${internalName(meta.name, "pkey")} PRIMARY KEY`,
    ...meta.columns.map((column) => columnDefinition(meta, column)),
    sql`owner_id uuid`,
    sql`created_at timestamptz NOT NULL DEFAULT now()`,
    sql`updated_at timestamptz NOT NULL DEFAULT now()`,
    sql`deleted_at timestamptz`,
  ];
  return [
    sql`CREATE SCHEMA IF NOT EXISTS ${sql.identifier(projectSchemaName(meta.projectId))}`,
    sql`CREATE TABLE ${table} (${sql.join(columns, sql`, `)})`,
    // Partial indexes: every row query filters `deleted_at IS NULL`.
    sql`CREATE INDEX ${internalName(meta.name, "created")} ON ${table} (created_at, id) WHERE deleted_at IS NULL`,
    sql`CREATE INDEX ${internalName(meta.name, "owner")} ON ${table} (owner_id, created_at, id) WHERE deleted_at IS NULL`,
    ...meta.columns.filter((c) => c.type === "vector").map((c) => vectorIndex(meta, c)),
  ];
}

/** Statements applying an alteration (drops first, then adds, in one ALTER TABLE). */
export function alterTableStatements(meta: CollectionMeta, change: AlterCollection): SQL[] {
  const actions = [
    ...(change.drop_columns ?? []).map((name) => sql`DROP COLUMN ${sql.identifier(name)}`),
    ...(change.add_columns ?? []).map((column) => sql`ADD COLUMN ${columnDefinition(meta, column)}`),
  ];
  if (!actions.length) return [];
  return [
    sql`ALTER TABLE ${tableRef(meta)} ${sql.join(actions, sql`, `)}`,
    ...(change.add_columns ?? []).filter((c) => c.type === "vector").map((c) => vectorIndex(meta, c)),
  ];
}

/** Statement dropping a collection's table. */
export const dropTableStatement = (meta: CollectionMeta): SQL => sql`DROP TABLE IF EXISTS ${tableRef(meta)}`;

// ─── row JSON ───────────────────────────────────────────────────────────────────────────────────

const SAFE_INT = "9007199254740991";

/**
 * An integer-valued expression as JSON that JavaScript reads exactly: a number within ±(2^53 − 1),
 * else its decimal text (a JSON number beyond that would be rounded by every client's parser).
 */
function exactIntegerJson(expr: SQL): SQL {
  return sql`CASE WHEN ${expr} BETWEEN ${sql.raw(`-${SAFE_INT}`)} AND ${sql.raw(SAFE_INT)} THEN to_json(${expr}) ELSE to_json(${expr}::text) END`;
}

/** The JSON-ready output expression of a column (bigints exact, element by element in arrays; vectors as arrays). */
function outputExpression(column: Column): SQL {
  const ref = col(column.name);
  if (column.type === "bigint") return exactIntegerJson(ref);
  if (column.type === "bigint[]") {
    const elements = sql`SELECT coalesce(json_agg(${exactIntegerJson(sql.raw("u.e"))} ORDER BY u.n), '[]'::json) FROM unnest(${ref}) WITH ORDINALITY AS u(e, n)`;
    return sql`CASE WHEN ${ref} IS NULL THEN NULL ELSE (${elements}) END`;
  }
  if (column.type === "vector") return sql`${ref}::real[]`;
  return ref;
}

/** Key order of a row: id, the user columns, then owner and timestamps. */
export function rowColumns(meta: CollectionMeta): Column[] {
  return [
    { name: "id", type: "uuid" },
    ...meta.columns,
    { name: "owner_id", type: "uuid" },
    { name: "created_at", type: "timestamp" },
    { name: "updated_at", type: "timestamp" },
  ];
}

function rowSelectList(meta: CollectionMeta, extra: SQL[] = []): SQL {
  return sql.join(
    [...rowColumns(meta).map((c) => sql`${outputExpression(c)} AS ${sql.identifier(c.name)}`), ...extra],
    sql`, `,
  );
}

/**
 * `SELECT row_to_json(_r) AS row FROM <source> AS t CROSS JOIN LATERAL (SELECT <columns>) AS _r`.
 * The lateral row is named bare in `row_to_json`, where a column of the same name wins over (or is
 * ambiguous with) the alias: `_r` cannot be a column name (names start with a letter, columns.ts),
 * whereas `r` was — a collection with a column `r` failed every read and write (42702). `t` is only
 * ever written qualified (`t."<column>"`), so any column name is safe next to it.
 */
function rowsFrom(meta: CollectionMeta, source: SQL, extra: SQL[] = []): SQL {
  return sql`SELECT row_to_json(_r) AS row FROM ${source} AS t CROSS JOIN LATERAL (SELECT ${rowSelectList(meta, extra)}) AS _r`;
}

// Row reads rebuild the same SELECT for every call; build it once per metadata object (immutable).
const selectCache = new WeakMap<CollectionMeta, SQL>();
function selectRows(meta: CollectionMeta): SQL {
  let select = selectCache.get(meta);
  if (!select) {
    select = frozen(rowsFrom(meta, tableRef(meta)));
    selectCache.set(meta, select);
  }
  return select;
}

const whereClause = (conditions: SQL[]): SQL =>
  conditions.length ? sql` WHERE ${sql.join(conditions, sql` AND `)}` : sql``;

/** Rows not soft-deleted. */
export const notDeleted = sql`t.deleted_at IS NULL`;
/** Rows owned by an end user. */
export const ownedBy = (userId: string): SQL => sql`t.owner_id = ${userId}::uuid`;

// ─── where ──────────────────────────────────────────────────────────────────────────────────────

function operatorCondition(column: Column, op: string, value: unknown): SQL {
  const ref = col(column.name);
  const element = arrayElementType(column.type);
  switch (op) {
    case "eq":
      return sql`${ref} = ${bind(column, value)}`;
    case "neq":
      // NULL counts as "not equal": neq is the complement of eq.
      return sql`${ref} IS DISTINCT FROM ${bind(column, value)}`;
    case "gt":
      return sql`${ref} > ${bind(column, value)}`;
    case "gte":
      return sql`${ref} >= ${bind(column, value)}`;
    case "lt":
      return sql`${ref} < ${bind(column, value)}`;
    case "lte":
      return sql`${ref} <= ${bind(column, value)}`;
    case "in":
      return sql`${ref} = ANY(${bindList(column.type, value as unknown[])})`;
    case "nin":
      return sql`(${ref} IS NULL OR ${ref} <> ALL(${bindList(column.type, value as unknown[])}))`;
    case "like":
      return sql`${ref} LIKE ${value as string}::text`;
    case "ilike":
      return sql`${ref} ILIKE ${value as string}::text`;
    case "starts_with":
      return sql`starts_with(${ref}, ${value as string}::text)`;
    case "is_null":
      return value ? sql`${ref} IS NULL` : sql`${ref} IS NOT NULL`;
    case "contains":
      // One element alone is the one-element array (schemas.ts `containsSchema`).
      if (element) return sql`${ref} @> ${bindList(element, Array.isArray(value) ? value : [value])}`;
      return sql`${ref} @> ${JSON.stringify(value)}::jsonb`;
    case "overlaps":
      return sql`${ref} && ${bindList(element as ColumnType, value as unknown[])}`;
    case "has_key":
      return sql`jsonb_exists(${ref}, ${value as string}::text)`;
  }
  throw invalidInput(`where.${column.name}: unknown operator "${op}"`);
}

interface WhereState {
  columns: Map<string, Column>;
  conditions: number;
  /** `like` / `ilike` pattern characters so far: matching costs grow with each pattern's length. */
  patternChars: number;
  /** List operands' values so far (`in`, `nin`, `overlaps`, `contains`). */
  listValues: number;
  /** `overlaps` / `contains` operands' values so far: each is compared with every row's elements. */
  matchValues: number;
}

/** Values in a json operand at any depth (every array item and object member, nested ones too). */
function jsonValueCount(value: unknown): number {
  let count = 0;
  const stack: unknown[] = [value];
  for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
    if (typeof node !== "object" || node === null) continue;
    const members = Array.isArray(node) ? node : Object.values(node);
    count += members.length;
    for (const member of members) stack.push(member);
  }
  return count;
}

/** How many values a list operator's operand holds; 0 for the other operators. */
function operandValues(column: Column, op: string, operand: unknown): number {
  if (op === "in" || op === "nin" || op === "overlaps") return (operand as unknown[]).length;
  if (op !== "contains") return 0;
  if (column.type === "json") return Math.max(1, jsonValueCount(operand));
  return Array.isArray(operand) ? operand.length : 1;
}

/** Count one condition's costs against the `where`'s budgets; throws the first one it passes. */
function chargeCondition(
  state: WhereState,
  column: Column,
  op: string,
  operand: unknown,
  path: string,
): void {
  if (++state.conditions > MAX_WHERE_CONDITIONS) {
    throw invalidInput(`${path}: more than ${MAX_WHERE_CONDITIONS} conditions`);
  }
  const at = `${path}.${column.name}.${op}`;
  if (op === "like" || op === "ilike") {
    state.patternChars += (operand as string).length;
    if (state.patternChars > MAX_WHERE_PATTERN_CHARS) {
      throw invalidInput(
        `where: like / ilike patterns of one where are at most ${MAX_WHERE_PATTERN_CHARS} characters in total`,
      );
    }
  }
  const values = operandValues(column, op, operand);
  state.listValues += values;
  if (state.listValues > MAX_WHERE_LIST_VALUES) {
    throw invalidInput(
      `${at}: in / nin / overlaps / contains lists of one where hold at most ${MAX_WHERE_LIST_VALUES} values in total; filter with fewer values or split the call`,
    );
  }
  if (op === "overlaps" || op === "contains") {
    state.matchValues += values;
    if (state.matchValues > MAX_WHERE_MATCH_VALUES) {
      throw invalidInput(
        `${at}: overlaps / contains take at most ${MAX_WHERE_MATCH_VALUES} values in one where, all together (a json value counts every value in it); filter with fewer values or split the call`,
      );
    }
  }
}

/** The list operators whose operand's values count against {@link MAX_WHERE_LIST_VALUES}. */
const LIST_OPERATORS = new Set(["in", "nin", "overlaps", "contains"]);

/**
 * The condition and list-value budgets of a raw `where`, counted before the schema parses it: the
 * schema walks every condition of a 1 MiB `where` (27,000 of them: 17 ms of Worker CPU, 88 ms when
 * each was invalid and valibot built an issue per condition) before compiling refused the 101st
 * (BENCHMARKS.md "Worst-case CPU per request"). Counted the way {@link compileWhere} counts, in the
 * same order, so the message and path are the ones it would give; it checks every budget again
 * with the column types. Recursive: run after the depth check (schemas.ts `whereDepthProblem`).
 * Null when within the budgets (or not an object: the schema says what is wrong).
 */
export function whereBudgetProblem(where: unknown): string | null {
  const state = { conditions: 0, listValues: 0 };
  const visit = (node: unknown, path: string): string | null => {
    if (!isPlainObject(node)) return null;
    for (const [key, value] of Object.entries(node)) {
      if (value === undefined) continue;
      if (key === "and" || key === "or") {
        if (!Array.isArray(value)) continue;
        for (let i = 0; i < value.length; i++) {
          const problem = visit(value[i], `${path}.${key}.${i}`);
          if (problem) return problem;
        }
        continue;
      }
      if (key === "not") {
        const problem = visit(value, `${path}.not`);
        if (problem) return problem;
        continue;
      }
      const operators = isPlainObject(value) ? Object.entries(value) : [["eq", value] as const];
      for (const [op, operand] of operators) {
        if (operand === undefined) continue;
        if (++state.conditions > MAX_WHERE_CONDITIONS)
          return `${path}: more than ${MAX_WHERE_CONDITIONS} conditions`;
        if (LIST_OPERATORS.has(op) && Array.isArray(operand)) state.listValues += operand.length;
        if (state.listValues > MAX_WHERE_LIST_VALUES)
          return `${path}.${key}.${op}: in / nin / overlaps / contains lists of one where hold at most ${MAX_WHERE_LIST_VALUES} values in total; filter with fewer values or split the call`;
      }
    }
    return null;
  };
  return visit(where, "where");
}

function compileNode(where: Where, state: WhereState, depth: number, path: string): SQL {
  if (depth > MAX_WHERE_DEPTH)
    throw invalidInput(`${path}: filters nest deeper than ${MAX_WHERE_DEPTH} levels`);
  const parts: SQL[] = [];
  for (const [key, value] of Object.entries(where)) {
    if (value === undefined) continue;
    if (key === "and" || key === "or") {
      const list = (value as Where[]).map((w, i) => compileNode(w, state, depth + 1, `${path}.${key}.${i}`));
      parts.push(sql`(${sql.join(list, key === "and" ? sql` AND ` : sql` OR `)})`);
      continue;
    }
    if (key === "not") {
      parts.push(sql`NOT COALESCE(${compileNode(value as Where, state, depth + 1, `${path}.not`)}, false)`);
      continue;
    }
    const column = state.columns.get(key);
    if (!column) throw invalidInput(`${path}: unknown column "${key}"`);
    const operators: [string, unknown][] = isPlainObject(value)
      ? Object.entries(value).filter(([, v]) => v !== undefined)
      : [["eq", value]];
    for (const [op, operand] of operators) {
      if (!operatorsFor(column).includes(op) || (op === "eq" && !acceptsBareValue(column))) {
        throw invalidInput(
          `${path}.${key}: operator "${op}" is not available for ${column.type} column ${key}`,
        );
      }
      chargeCondition(state, column, op, operand, path);
      parts.push(operatorCondition(column, op, operand));
    }
  }
  return parts.length ? sql`(${sql.join(parts, sql` AND `)})` : sql`TRUE`;
}

/** Compile a validated `where` into a condition on alias `t`. */
export function compileWhere(meta: CollectionMeta, where: Where): SQL {
  const columns = new Map<string, Column>(visibleColumns(meta).map((c) => [c.name, c]));
  const state = { columns, conditions: 0, patternChars: 0, listValues: 0, matchValues: 0 };
  return compileNode(where, state, 0, "where");
}

// ─── order + keyset ─────────────────────────────────────────────────────────────────────────────

/** A parsed `"<column> asc|desc"`. */
export interface Order {
  column: Column;
  desc: boolean;
  /** Canonical signature carried by cursors. */
  signature: string;
}

export const DEFAULT_ORDER = "created_at desc";

/** Parse an order string against the collection's orderable columns. */
export function parseOrder(meta: CollectionMeta, order: string = DEFAULT_ORDER): Order {
  const match = /^([a-z][a-z0-9_]*)(?:\s+(asc|desc))?$/i.exec(order.trim());
  const column = match && visibleColumns(meta).find((c) => c.name === match[1]);
  if (!match || !column || !ORDERABLE_TYPES.includes(column.type)) {
    throw invalidInput(`order: expected "<column> asc|desc" over a sortable column, got "${order}"`);
  }
  const desc = (match[2] ?? "asc").toLowerCase() === "desc";
  const serverNotNull = column.name === "id" || column.name === "created_at" || column.name === "updated_at";
  return {
    column: { ...column, required: serverNotNull || Boolean((column as ColumnSpec).required) },
    desc,
    signature: `${column.name} ${desc ? "desc" : "asc"}`,
  };
}

/** ORDER BY: the column (NULLs sort as the greatest value, Postgres' default) then id. */
export function orderBy(order: Order): SQL {
  const dir = order.desc ? "DESC" : "ASC";
  if (order.column.name === "id") return sql.raw(`t.id ${dir}`);
  return sql.raw(`t.${dialect.escapeName(order.column.name)} ${dir}, t.id ${dir}`);
}

/** The keyset condition "after this position" for an order, NULL-safe. */
export function keysetCondition(order: Order, position: CursorPosition): SQL {
  const { column, desc } = order;
  if (position.value !== null && !isValidValue(column.type, position.value)) {
    throw invalidInput("cursor: not a cursor returned by this collection");
  }
  const id = sql`${position.id}::uuid`;
  const cmp = sql.raw(desc ? "<" : ">");
  if (column.name === "id") return sql`t.id ${cmp} ${id}`;
  const ref = col(column.name);
  if (column.required) {
    return sql`(${ref}, t.id) ${cmp} (${bind(column, position.value)}, ${id})`;
  }
  // NULL is the greatest value: last in ascending order, first in descending order.
  if (position.value === null) {
    return desc
      ? sql`((${ref} IS NULL AND t.id < ${id}) OR ${ref} IS NOT NULL)`
      : sql`(${ref} IS NULL AND t.id > ${id})`;
  }
  const value = bind(column, position.value);
  return desc
    ? sql`(${ref} < ${value} OR (${ref} = ${value} AND t.id < ${id}))`
    : sql`(${ref} > ${value} OR (${ref} = ${value} AND t.id > ${id}) OR ${ref} IS NULL)`;
}

// ─── row statements ─────────────────────────────────────────────────────────────────────────────

/** A page of rows: conditions ANDed, ordered, `limit` rows (callers ask for one extra). */
export function selectPage(meta: CollectionMeta, conditions: SQL[], order: Order, limit: number): SQL {
  return flat(sql`${selectRows(meta)}${whereClause(conditions)} ORDER BY ${orderBy(order)} LIMIT ${limit}`);
}

/** One row by id under the given conditions. */
export function selectById(meta: CollectionMeta, id: string, conditions: SQL[]): SQL {
  return flat(sql`${selectRows(meta)}${whereClause([sql`t.id = ${id}::uuid`, ...conditions])}`);
}

/** INSERT … RETURNING the row JSON. `values` holds validated writable columns only. */
export function insertRow(
  meta: CollectionMeta,
  id: string,
  ownerId: string | null,
  values: Record<string, unknown>,
): SQL {
  const byName = new Map(meta.columns.map((c) => [c.name, c]));
  const names = Object.keys(values).filter((name) => byName.has(name));
  const columns = [sql`id`, sql`owner_id`, ...names.map((n) => sql.identifier(n))];
  const params = [
    sql`${id}::uuid`,
    ownerId === null ? sql`NULL` : sql`${ownerId}::uuid`,
    ...names.map((n) => bind(byName.get(n) as ColumnSpec, values[n])),
  ];
  const write = sql`INSERT INTO ${tableRef(meta)} (${sql.join(columns, sql`, `)}) VALUES (${sql.join(params, sql`, `)}) RETURNING *`;
  return sql`WITH w AS (${write}) ${rowsFrom(meta, sql`w`)}`;
}

/** UPDATE (merge patch + updated_at) … RETURNING the row JSON. */
export function updateRow(
  meta: CollectionMeta,
  id: string,
  patch: Record<string, unknown>,
  conditions: SQL[],
): SQL {
  const byName = new Map(meta.columns.map((c) => [c.name, c]));
  const sets = Object.keys(patch)
    .filter((name) => byName.has(name) && patch[name] !== undefined)
    .map((name) => sql`${sql.identifier(name)} = ${bind(byName.get(name) as ColumnSpec, patch[name])}`);
  sets.push(sql`updated_at = now()`);
  const write = sql`UPDATE ${tableRef(meta)} AS t SET ${sql.join(sets, sql`, `)}${whereClause([sql`t.id = ${id}::uuid`, ...conditions])} RETURNING t.*`;
  return sql`WITH w AS (${write}) ${rowsFrom(meta, sql`w`)}`;
}

/** Soft delete: stamp `deleted_at`; returns the id when a row matched. */
export function softDeleteRow(meta: CollectionMeta, id: string, conditions: SQL[]): SQL {
  return sql`UPDATE ${tableRef(meta)} AS t SET deleted_at = now()${whereClause([sql`t.id = ${id}::uuid`, ...conditions])} RETURNING t.id`;
}

/** Hard delete; returns the id when a row matched. */
export function hardDeleteRow(meta: CollectionMeta, id: string, conditions: SQL[]): SQL {
  return sql`DELETE FROM ${tableRef(meta)} AS t${whereClause([sql`t.id = ${id}::uuid`, ...conditions])} RETURNING t.id`;
}

/** Result key of a metric: `count`, `count_<column>`, `<fn>_<column>`. */
export const metricKey = (metric: Metric): string =>
  metric.column ? `${metric.fn}_${metric.column}` : metric.fn;

/** A visible column's type (server-managed ones included). */
const typeOf = (meta: CollectionMeta, name: string): ColumnType | undefined =>
  visibleColumns(meta).find((c) => c.name === name)?.type;

/**
 * A metric's SQL. Postgres has no `min`/`max` over `boolean` or `uuid`: booleans use `bool_and` /
 * `bool_or` (false < true), uuids compare as their canonical text bytewise (collation "C", the
 * order of `uuid_cmp`). Bigint results are sent exact ({@link exactIntegerJson}).
 */
function metricExpression(meta: CollectionMeta, metric: Metric): SQL {
  if (metric.fn === "count") return metric.column ? sql`count(${col(metric.column)})` : sql`count(*)`;
  const ref = col(metric.column as string);
  const type = typeOf(meta, metric.column as string);
  if (type === "boolean") return sql`${sql.raw(metric.fn === "min" ? "bool_and" : "bool_or")}(${ref})`;
  if (type === "uuid") return sql`${sql.raw(metric.fn)}(${ref}::text COLLATE "C")::uuid`;
  const value = sql`${sql.raw(metric.fn)}(${ref})`;
  return type === "bigint" && metric.fn !== "avg" ? exactIntegerJson(value) : value;
}

/**
 * Aggregate: one JSON object per group with the metric keys first, then the group columns; groups
 * ordered by the group columns.
 */
export function aggregateRows(
  meta: CollectionMeta,
  metrics: Metric[],
  groupBy: string[],
  conditions: SQL[],
): SQL {
  const pairs = [
    ...metrics.map((m) => sql`${metricKey(m)}::text, ${metricExpression(meta, m)}`),
    ...groupBy.map(
      (name) =>
        sql`${name}::text, ${typeOf(meta, name) === "bigint" ? exactIntegerJson(col(name)) : col(name)}`,
    ),
  ];
  const groups = groupBy.map((name) => col(name));
  const grouping = groups.length
    ? sql` GROUP BY ${sql.join(groups, sql`, `)} ORDER BY ${sql.join(groups, sql`, `)} LIMIT ${MAX_GROUPS}`
    : sql``;
  return sql`SELECT json_build_object(${sql.join(pairs, sql`, `)}) AS row FROM ${tableRef(meta)} AS t${whereClause(conditions)}${grouping}`;
}

/** Nearest rows by cosine distance to `vector` on `column`, with `distance` in each row (null for a stored zero vector: its cosine distance is undefined, and it sorts last). */
export function nearestRows(
  meta: CollectionMeta,
  column: ColumnSpec,
  vector: number[],
  conditions: SQL[],
  limit: number,
): SQL {
  const distance = sql`${col(column.name)} <=> ${bind(column, vector)}`;
  return sql`${rowsFrom(meta, tableRef(meta), [sql`NULLIF((${distance})::float8, 'NaN') AS distance`])}${whereClause(
    [sql`${col(column.name)} IS NOT NULL`, ...conditions],
  )} ORDER BY ${distance} LIMIT ${limit}`;
}
