/**
 * Operation input schemas built from a collection's column metadata: list, get, insert, update,
 * delete, find (typed per-column `where`), aggregate and nearest. The data service validates every
 * call with them, and the app MCP converts the same schemas to JSON Schema (`toolInputSchema`) —
 * one definition for validation and for what an agent is shown.
 */
import { toJsonSchema } from "@valibot/to-json-schema";
import * as v from "valibot";
import { isPlainObject } from "../mcp/jsonrpc.ts";
import {
  arrayElementType,
  type CollectionMeta,
  type ColumnSpec,
  type ColumnType,
  MAX_LIST_VALUES,
  NUMERIC_TYPES,
  ORDERABLE_TYPES,
  SERVER_COLUMNS,
  VISIBLE_SERVER_COLUMNS,
  valueSchema,
} from "./columns.ts";

/** Rows per page: default and maximum for list / find. */
export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 200;
/** Rows returned by nearest: default and maximum. */
export const DEFAULT_NEAREST_LIMIT = 10;
export const MAX_NEAREST_LIMIT = 100;
/** Most metrics and group columns in one aggregate. */
export const MAX_METRICS = 20;
export const MAX_GROUP_BY = 5;
/** Deepest nesting of `and` / `or` / `not` in a `where` (the top level is 0). */
export const MAX_WHERE_DEPTH = 8;

/**
 * The `where` nesting check, iterative so that a filter nested thousands deep is refused before the
 * recursive schema (and the recursive compiler) would overflow the stack on it. Null when fine.
 */
export function whereDepthProblem(where: unknown, root = "where"): string | null {
  const stack: Array<{ node: unknown; path: string; depth: number }> = [
    { node: where, path: root, depth: 0 },
  ];
  for (let frame = stack.pop(); frame !== undefined; frame = stack.pop()) {
    const { node, path, depth } = frame;
    if (typeof node !== "object" || node === null || Array.isArray(node)) continue;
    if (depth > MAX_WHERE_DEPTH) return `${path}: filters nest deeper than ${MAX_WHERE_DEPTH} levels`;
    const { and, or, not } = node as Record<string, unknown>;
    for (const [key, list] of [
      ["and", and],
      ["or", or],
    ] as const) {
      if (!Array.isArray(list)) continue;
      for (let i = 0; i < list.length; i++) {
        stack.push({ node: list[i], path: `${path}.${key}.${i}`, depth: depth + 1 });
      }
    }
    if (not !== undefined) stack.push({ node: not, path: `${path}.not`, depth: depth + 1 });
  }
  return null;
}

/** A parsed `where`: column filters plus `and` / `or` / `not`. */
export type Where = { [column: string]: unknown } & { and?: Where[]; or?: Where[]; not?: Where };

export interface ListInput {
  limit?: number;
  cursor?: string | null;
}
export interface GetInput {
  id: string;
}
export type InsertInput = Record<string, unknown>;
export interface UpdateInput {
  id: string;
  patch: Record<string, unknown>;
}
export interface DeleteInput {
  id: string;
  hard?: boolean;
}
export interface FindInput extends ListInput {
  where?: Where;
  order?: string;
}
export interface Metric {
  fn: "count" | "sum" | "avg" | "min" | "max";
  column?: string;
}
export interface AggregateInput {
  metrics: Metric[];
  group_by?: string[];
  where?: Where;
}
export interface NearestInput {
  vector: number[];
  limit?: number;
  where?: Where;
  column?: string;
}

type Schema<T> = v.GenericSchema<unknown, T>;

/** The schemas of one collection's operations (`nearest` only when it has a vector column). */
export interface OperationSchemas {
  list: Schema<ListInput>;
  get: Schema<GetInput>;
  insert: Schema<InsertInput>;
  /** The merge patch alone (REST `PATCH …/rows/:id` body). */
  patch: Schema<Record<string, unknown>>;
  update: Schema<UpdateInput>;
  delete: Schema<DeleteInput>;
  find: Schema<FindInput>;
  aggregate: Schema<AggregateInput>;
  nearest?: Schema<NearestInput>;
  /** The `where` filter on its own. */
  where: Schema<Where>;
}

/** The value schema with the column's description attached (shown in tool input schemas). */
function describedValue(column: ColumnSpec): v.GenericSchema {
  const base = valueSchema(column.type, column.dimensions);
  const description =
    column.description ?? `${column.type}${column.type === "vector" ? `(${column.dimensions})` : ""}`;
  return v.pipe(base, v.description(description));
}

const idSchema = v.pipe(v.string(), v.uuid("Expected a row id (uuid)"), v.description("Row id"));

const limitSchema = (max: number, fallback: number) =>
  v.optional(
    v.pipe(
      v.number(),
      v.integer(),
      v.minValue(1, `limit must be 1 to ${max}`),
      v.maxValue(max, `limit must be 1 to ${max}`),
      v.description(`Maximum rows to return (1–${max}, default ${fallback})`),
    ),
  );

const cursorSchema = v.optional(
  v.nullable(
    v.pipe(v.string(), v.description("next_cursor from the previous page; omit for the first page")),
  ),
);

/** Every column a row carries (server-managed first), as `{name, type}`. */
export function visibleColumns(meta: CollectionMeta): Pick<ColumnSpec, "name" | "type" | "dimensions">[] {
  return [...VISIBLE_SERVER_COLUMNS, ...meta.columns];
}

/** `<column> asc|desc` for every orderable column. */
export function orderOptions(meta: CollectionMeta): string[] {
  return visibleColumns(meta)
    .filter((c) => ORDERABLE_TYPES.includes(c.type))
    .flatMap((c) => [`${c.name} asc`, `${c.name} desc`]);
}

function strictRowObject(
  entries: Record<string, v.GenericSchema>,
  writable: string[],
): v.GenericSchema<unknown, Record<string, unknown>> {
  const allowed = writable.length ? writable.join(", ") : "(none)";
  return v.strictObject(entries, (issue) => {
    if (issue.expected === "never") {
      const key = String(issue.input);
      return (SERVER_COLUMNS as readonly string[]).includes(key)
        ? `"${key}" is server-managed and cannot be set; writable columns: ${allowed}`
        : `unknown column "${key}"; writable columns: ${allowed}`;
    }
    if (issue.input === undefined && issue.expected?.startsWith('"')) return "required column is missing";
    return `Expected an object of column values (writable columns: ${allowed})`;
  }) as v.GenericSchema<unknown, Record<string, unknown>>;
}

function insertSchema(meta: CollectionMeta): v.GenericSchema<unknown, Record<string, unknown>> {
  const entries: Record<string, v.GenericSchema> = {};
  for (const column of meta.columns) {
    const value = describedValue(column);
    const hasDefault = column.default !== undefined && column.default !== null;
    if (column.required && !hasDefault) entries[column.name] = value;
    else if (column.required) entries[column.name] = v.optional(value);
    else entries[column.name] = v.optional(v.nullable(value));
  }
  return strictRowObject(
    entries,
    meta.columns.map((c) => c.name),
  );
}

function patchSchema(meta: CollectionMeta): v.GenericSchema<unknown, Record<string, unknown>> {
  const entries: Record<string, v.GenericSchema> = {};
  for (const column of meta.columns) {
    const value = describedValue(column);
    entries[column.name] = column.required ? v.optional(value) : v.optional(v.nullable(value));
  }
  return strictRowObject(
    entries,
    meta.columns.map((c) => c.name),
  );
}

const ops = (entries: Record<string, v.GenericSchema>) =>
  v.strictObject(Object.fromEntries(Object.entries(entries).map(([k, s]) => [k, v.optional(s)])), (issue) =>
    issue.expected === "never"
      ? `unknown operator "${String(issue.input)}"; allowed: ${Object.keys(entries).join(", ")}`
      : `Expected a value or an object of operators (${Object.keys(entries).join(", ")})`,
  );

const isNullOp = v.pipe(v.boolean(), v.description("true: the column is null; false: it is not"));

/** Operators each column type supports in `where` (issue 4). */
export function operatorsFor(type: ColumnType): string[] {
  if (arrayElementType(type)) return ["contains", "overlaps", "is_null"];
  switch (type) {
    case "text":
      return ["eq", "neq", "in", "nin", "like", "ilike", "starts_with", "is_null"];
    case "integer":
    case "bigint":
    case "number":
    case "timestamp":
    case "date":
      return ["eq", "neq", "gt", "gte", "lt", "lte", "in", "nin", "is_null"];
    case "boolean":
      return ["eq", "neq", "is_null"];
    case "uuid":
      return ["eq", "neq", "in", "nin", "is_null"];
    case "json":
      return ["contains", "has_key", "is_null"];
    case "vector":
      return ["is_null"];
  }
  return [];
}

/** Whether a bare value in `where` means `eq` for this type (scalars only). */
export const acceptsBareValue = (type: ColumnType): boolean => operatorsFor(type).includes("eq");

function filterSchema(
  column: Pick<ColumnSpec, "name" | "type" | "dimensions" | "description">,
): v.GenericSchema {
  const value = valueSchema(column.type, column.dimensions);
  const list = v.pipe(v.array(value), v.maxLength(MAX_LIST_VALUES));
  const entries: Record<string, v.GenericSchema> = {};
  for (const op of operatorsFor(column.type)) {
    if (op === "is_null") entries[op] = isNullOp;
    else if (op === "in" || op === "nin") entries[op] = list;
    else if (op === "like" || op === "ilike" || op === "starts_with" || op === "has_key")
      entries[op] = v.string();
    else if (op === "contains" && column.type === "json") entries[op] = v.unknown();
    else entries[op] = value; // eq, neq, gt…, and array contains / overlaps (value is the array)
  }
  const operators = ops(entries);
  const label = column.description ? `${column.description} — ` : "";
  const doc = acceptsBareValue(column.type)
    ? `${label}${column.type}: a value (equals) or {${Object.keys(entries).join(", ")}}`
    : `${label}${column.type}: {${Object.keys(entries).join(", ")}}`;
  const schema = acceptsBareValue(column.type)
    ? v.union([value, operators], (issue) => {
        const input = issue.input;
        if (isPlainObject(input)) {
          // An operator object: report what is wrong inside it, not "expected (value | Object)".
          const inner = v.safeParse(operators, input);
          if (!inner.success) {
            const first = inner.issues[0];
            const path = first.expected === "never" ? null : v.getDotPath(first);
            return path ? `${path}: ${first.message}` : first.message;
          }
        }
        return `Expected a ${column.type} value or an object of operators (${Object.keys(entries).join(", ")})`;
      })
    : operators;
  return v.pipe(schema, v.description(doc));
}

function whereSchema(meta: CollectionMeta): Schema<Where> {
  let object: v.GenericSchema;
  const where: Schema<Where> = v.lazy(() => object) as Schema<Where>;
  const entries: Record<string, v.GenericSchema> = {};
  for (const column of visibleColumns(meta)) entries[column.name] = v.optional(filterSchema(column));
  entries.and = v.optional(v.pipe(v.array(where), v.minLength(1), v.description("All of these filters")));
  entries.or = v.optional(v.pipe(v.array(where), v.minLength(1), v.description("Any of these filters")));
  entries.not = v.optional(v.pipe(where, v.description("Rows NOT matching this filter")));
  const columns = visibleColumns(meta).map((c) => c.name);
  object = v.pipe(
    v.strictObject(entries, (issue) =>
      issue.expected === "never"
        ? `unknown column "${String(issue.input)}" in where; columns: ${columns.join(", ")} (or and/or/not)`
        : "Expected an object of column filters",
    ),
    v.description("Per-column filters (combined with AND); and / or / not combine nested filters"),
  );
  return where;
}

function aggregateSchema(meta: CollectionMeta, where: Schema<Where>): Schema<AggregateInput> {
  const all = visibleColumns(meta);
  const countable = all.filter((c) => c.type !== "vector").map((c) => c.name);
  const numeric = all.filter((c) => NUMERIC_TYPES.includes(c.type)).map((c) => c.name);
  const orderable = all.filter((c) => ORDERABLE_TYPES.includes(c.type)).map((c) => c.name);
  const variants: v.StrictObjectSchema<v.ObjectEntries, undefined>[] = [
    v.strictObject({
      fn: v.literal("count"),
      column: v.optional(v.pipe(v.picklist(countable), v.description("count non-null values of a column"))),
    }),
  ];
  if (numeric.length) {
    for (const fn of ["sum", "avg"] as const) {
      variants.push(v.strictObject({ fn: v.literal(fn), column: v.picklist(numeric) }));
    }
  }
  for (const fn of ["min", "max"] as const)
    variants.push(v.strictObject({ fn: v.literal(fn), column: v.picklist(orderable) }));
  const fns = numeric.length ? "count, sum, avg, min, max" : "count, min, max";
  return v.strictObject({
    metrics: v.pipe(
      v.array(
        v.variant(
          "fn",
          variants as unknown as v.VariantOptions<"fn">,
          `Expected a metric {fn: ${fns}, column?}`,
        ),
      ),
      v.minLength(1, "give at least one metric"),
      v.maxLength(MAX_METRICS),
      v.description(`Metrics; result keys: count, or <fn>_<column> (e.g. sum_${numeric[0] ?? "column"})`),
    ),
    group_by: v.optional(
      v.pipe(v.array(v.picklist(orderable)), v.maxLength(MAX_GROUP_BY), v.description("Columns to group by")),
    ),
    where: v.optional(where),
  }) as unknown as Schema<AggregateInput>;
}

function nearestSchema(meta: CollectionMeta, where: Schema<Where>): Schema<NearestInput> | undefined {
  const vectors = meta.columns.filter((c) => c.type === "vector");
  const first = vectors[0];
  if (!first) return undefined;
  const sameDims = vectors.every((c) => c.dimensions === first.dimensions);
  const entries: Record<string, v.GenericSchema> = {
    vector: v.pipe(
      sameDims ? valueSchema("vector", first.dimensions) : v.array(v.number()),
      v.description(
        sameDims
          ? `Query vector (${first.dimensions} numbers); rows are ordered by cosine distance to it`
          : "Query vector (as many numbers as the column's dimensions)",
      ),
    ),
    limit: limitSchema(MAX_NEAREST_LIMIT, DEFAULT_NEAREST_LIMIT),
    where: v.optional(where),
  };
  if (vectors.length > 1) {
    entries.column = v.optional(
      v.pipe(
        v.picklist(vectors.map((c) => c.name)),
        v.description(`Vector column to search (default ${first.name})`),
      ),
    );
  }
  return v.strictObject(entries) as unknown as Schema<NearestInput>;
}

/** Build every operation schema of a collection from its column metadata. */
export function buildOperationSchemas(meta: CollectionMeta): OperationSchemas {
  const where = whereSchema(meta);
  const patch = patchSchema(meta);
  const order = orderOptions(meta);
  const schemas: OperationSchemas = {
    list: v.strictObject({ limit: limitSchema(MAX_LIMIT, DEFAULT_LIMIT), cursor: cursorSchema }),
    get: v.strictObject({ id: idSchema }),
    insert: insertSchema(meta),
    patch,
    update: v.strictObject({
      id: idSchema,
      patch: v.pipe(patch, v.description("Columns to change (merge patch); null clears a column")),
    }),
    delete: v.strictObject({
      id: idSchema,
      hard: v.optional(v.pipe(v.boolean(), v.description("Remove the row for good (developer scope only)"))),
    }),
    find: v.strictObject({
      where: v.optional(where),
      order: v.optional(
        v.pipe(v.picklist(order), v.description('"<column> asc|desc"; default "created_at desc"')),
      ),
      limit: limitSchema(MAX_LIMIT, DEFAULT_LIMIT),
      cursor: cursorSchema,
    }),
    aggregate: aggregateSchema(meta, where),
    where,
  };
  const nearest = nearestSchema(meta, where);
  if (nearest) schemas.nearest = nearest;
  return schemas;
}

const cache = new WeakMap<CollectionMeta, OperationSchemas>();

/** `buildOperationSchemas`, memoized per metadata object (metadata is immutable once loaded). */
export function operationSchemas(meta: CollectionMeta): OperationSchemas {
  let schemas = cache.get(meta);
  if (!schemas) {
    schemas = buildOperationSchemas(meta);
    cache.set(meta, schemas);
  }
  return schemas;
}

/** JSON Schema (draft-07) of an operation schema, for an MCP tool's `inputSchema`. */
export function toolInputSchema(schema: v.GenericSchema): Record<string, unknown> {
  return toJsonSchema(schema) as Record<string, unknown>;
}
