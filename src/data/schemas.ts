/**
 * Operation input schemas built from a collection's column metadata: list, get, insert, update,
 * delete, find (typed per-column `where`), aggregate and nearest. The data service validates every
 * call with them, and the app MCP converts the same schemas to JSON Schema (src/app-mcp/input-schema.ts) —
 * one definition for validation and for what an agent is shown.
 */
import * as v from "valibot";
import { isPlainObject } from "../mcp/jsonrpc.ts";
import { WeightedLru } from "../mcp/lru.ts";
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
  wellFormedText,
} from "./columns.ts";

/**
 * Valibot actions the JSON Schema conversion of these schemas leaves out (its `ignoreActions`):
 * refinements JSON Schema cannot state, such as a timestamp's year range (columns.ts). The
 * advertised schema is then a little wider than the server's, which still checks them.
 */
export const SERVER_ONLY_ACTIONS = ["check"];

/** Rows per page: default and maximum for list / find. */
export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 200;
/** Rows returned by nearest: default and maximum. */
export const DEFAULT_NEAREST_LIMIT = 10;
export const MAX_NEAREST_LIMIT = 100;
/** Most metrics and group columns in one aggregate. */
export const MAX_METRICS = 20;
export const MAX_GROUP_BY = 5;
/**
 * Longest `like` / `ilike` pattern. Postgres matches a pattern against a value in up to (value
 * length × pattern length) steps: one 100,000-character pattern held the database for 49 s on one
 * 200,000-character row. Search patterns are short; this keeps one condition's cost near a scan.
 */
export const MAX_PATTERN_LENGTH = 256;
/** Deepest nesting of `and` / `or` / `not` in a `where` (the top level is 0). */
export const MAX_WHERE_DEPTH = 8;

/** A node of the `where` walk: its path is rebuilt from the parents only when a message needs it. */
interface WhereFrame {
  node: unknown;
  depth: number;
  parent: WhereFrame | null;
  /** The path step from the parent (`and.0`, `or.3`, `not`), or the root's name. */
  step: string | number;
  list?: "and" | "or";
}

function framePath(frame: WhereFrame): string {
  const steps: Array<string | number> = [];
  for (let at: WhereFrame | null = frame; at !== null; at = at.parent) {
    steps.push(at.step);
    if (at.list) steps.push(at.list);
  }
  return steps.reverse().join(".");
}

/**
 * The `where` nesting check, iterative so that a filter nested thousands deep is refused before the
 * recursive schema (and the recursive compiler) would overflow the stack on it. Null when fine.
 * Paths are only spelled out for the message (a ≈ 1 MiB `where` has ≈ 27,000 nodes).
 */
export function whereDepthProblem(where: unknown, root = "where"): string | null {
  const stack: WhereFrame[] = [{ node: where, depth: 0, parent: null, step: root }];
  for (let frame = stack.pop(); frame !== undefined; frame = stack.pop()) {
    const { node, depth } = frame;
    if (typeof node !== "object" || node === null || Array.isArray(node)) continue;
    if (depth > MAX_WHERE_DEPTH)
      return `${framePath(frame)}: filters nest deeper than ${MAX_WHERE_DEPTH} levels`;
    const { and, or, not } = node as Record<string, unknown>;
    for (const [key, list] of [
      ["and", and],
      ["or", or],
    ] as const) {
      if (!Array.isArray(list)) continue;
      for (let i = 0; i < list.length; i++) {
        stack.push({ node: list[i], depth: depth + 1, parent: frame, step: i, list: key });
      }
    }
    if (not !== undefined) stack.push({ node: not, depth: depth + 1, parent: frame, step: "not" });
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

/**
 * The value schema with the developer's column description attached (shown in tool input schemas).
 * Without one nothing is added: the JSON type, bounds and lengths already say what the column holds.
 */
function describedValue(column: ColumnSpec): v.GenericSchema {
  const base = sharedValue(column.type, column.dimensions);
  return column.description ? v.pipe(base, v.description(column.description)) : base;
}

/**
 * `valueSchema` per type, shared by every column alike (valibot schemas are immutable; insert and
 * patch built one per column each). Vectors, whose schema carries their size, are built per column,
 * so the map holds at most one schema per column type, whatever tenants declare.
 */
const sharedValues = new Map<ColumnType, v.GenericSchema>();

function sharedValue(type: ColumnType, dimensions: number | undefined): v.GenericSchema {
  if (type === "vector") return valueSchema(type, dimensions);
  let schema = sharedValues.get(type);
  if (!schema) {
    schema = valueSchema(type);
    sharedValues.set(type, schema);
  }
  return schema;
}

const idSchema = v.pipe(v.string(), v.uuid("Expected a row id (uuid)"));

const limitSchema = (max: number, fallback: number) =>
  v.optional(
    v.pipe(
      v.number(),
      v.integer(),
      v.minValue(1, `limit must be 1 to ${max}`),
      v.maxValue(max, `limit must be 1 to ${max}`),
      v.description(`Rows to return (default ${fallback})`),
    ),
  );

const cursorSchema = v.optional(
  v.nullable(v.pipe(v.string(), v.description("next_cursor of the previous page"))),
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

/**
 * Operators of the server-managed columns: only those that can select something. `id` and the
 * timestamps are never null, `neq` / `nin` are `not: {…}`, and an exact timestamp is `gte` + `lte`,
 * so nothing is lost — and the find tool's schema does not carry four columns of dead operators.
 */
const SERVER_COLUMN_OPERATORS: Record<string, string[]> = {
  id: ["eq", "in"],
  owner_id: ["eq", "in", "is_null"],
  created_at: ["gt", "gte", "lt", "lte"],
  updated_at: ["gt", "gte", "lt", "lte"],
};

/** Operators a column supports in `where` (issue 4): by type, narrower for server-managed columns. */
export function operatorsFor(column: Pick<ColumnSpec, "name" | "type">): string[] {
  const server = SERVER_COLUMN_OPERATORS[column.name];
  if (server) return server;
  const { type } = column;
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

/** Whether a bare value in `where` means `eq` for this column (scalars only). */
export const acceptsBareValue = (column: Pick<ColumnSpec, "name" | "type">): boolean =>
  operatorsFor(column).includes("eq");

/**
 * An array column's `contains`: the elements the array must all hold, or one element alone
 * (`{"tags": {"contains": "vegan"}}` reads as it is meant; the SQL takes it as `["vegan"]`).
 */
function containsSchema(type: ColumnType, array: v.GenericSchema): v.GenericSchema {
  const element = arrayElementType(type);
  return element ? v.union([array, valueSchema(element)]) : array;
}

const patternSchema = v.pipe(
  v.string(),
  wellFormedText,
  v.maxLength(MAX_PATTERN_LENGTH, `patterns are at most ${MAX_PATTERN_LENGTH} characters`),
);

/**
 * Filter schemas by what they are built from — the type and its operators — shared by every column
 * alike (valibot schemas are immutable): a collection of 100 text columns builds one, not 100
 * (building them was most of `buildOperationSchemas`, ≈ 2–3 ms at 100 columns). Vectors (sized) are
 * built per column, as their values are, so the map holds a fixed set: the types × their operators.
 */
const sharedFilters = new Map<string, v.GenericSchema>();

function filterSchema(
  column: Pick<ColumnSpec, "name" | "type" | "dimensions" | "description">,
): v.GenericSchema {
  const operators = operatorsFor(column);
  const key = `${column.type} ${operators.join(",")}`;
  let schema = column.type === "vector" ? undefined : sharedFilters.get(key);
  if (!schema) {
    schema = operatorsSchema(column.type, column.dimensions, operators);
    if (column.type !== "vector") sharedFilters.set(key, schema);
  }
  // The operators are the schema's own properties; only the developer's words are added.
  return column.description ? v.pipe(schema, v.description(column.description)) : schema;
}

/** A column filter: a bare value (when the type has `eq`) or an object of these operators. */
function operatorsSchema(
  type: ColumnType,
  dimensions: number | undefined,
  operators: readonly string[],
): v.GenericSchema {
  const value = sharedValue(type, dimensions);
  const list = v.pipe(v.array(value), v.maxLength(MAX_LIST_VALUES));
  const entries: Record<string, v.GenericSchema> = {};
  for (const op of operators) {
    if (op === "is_null") entries[op] = v.boolean();
    else if (op === "in" || op === "nin") entries[op] = list;
    else if (op === "like" || op === "ilike") entries[op] = patternSchema;
    else if (op === "starts_with" || op === "has_key") entries[op] = v.pipe(v.string(), wellFormedText);
    else if (op === "contains" && type === "json") entries[op] = v.unknown();
    else if (op === "contains") entries[op] = containsSchema(type, value);
    else entries[op] = value; // eq, neq, gt…, and array overlaps (value is the array)
  }
  const operatorObject = ops(entries);
  // A bare value means `eq` (acceptsBareValue).
  return operators.includes("eq")
    ? v.union([value, operatorObject], (issue) => {
        const input = issue.input;
        if (isPlainObject(input)) {
          // An operator object: report what is wrong inside it, not "expected (value | Object)".
          const inner = v.safeParse(operatorObject, input);
          if (!inner.success) {
            const first = inner.issues[0];
            const path = first.expected === "never" ? null : v.getDotPath(first);
            return path ? `${path}: ${first.message}` : first.message;
          }
        }
        return `Expected a ${type} value or an object of operators (${Object.keys(entries).join(", ")})`;
      })
    : operatorObject;
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
    v.description(
      "Filters by column, ANDed: a value means eq, else {<operator>: operand} (is_null: true|false); and / or / not nest filters. Nulls match only is_null, neq, nin (not: the complement); like/ilike: % _ and \\ escapes",
    ),
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
      column: v.optional(v.pipe(v.picklist(countable), v.description("counts its non-null values"))),
    }),
  ];
  // One variant per column set (not per function): the same typing in half the advertised schema.
  if (numeric.length)
    variants.push(v.strictObject({ fn: v.picklist(["sum", "avg"]), column: v.picklist(numeric) }));
  variants.push(v.strictObject({ fn: v.picklist(["min", "max"]), column: v.picklist(orderable) }));
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
      patch: v.pipe(patch, v.description("Columns to change")),
    }),
    delete: v.strictObject({
      id: idSchema,
      hard: v.optional(v.pipe(v.boolean(), v.description("Remove the row for good"))),
    }),
    find: v.strictObject({
      where: v.optional(where),
      order: v.optional(
        v.pipe(v.picklist(order), v.description('default "created_at desc"; nulls last asc, first desc')),
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

/**
 * Columns whose operation schemas the isolate keeps (a collection weighs its columns plus the four
 * server-managed ones). The schemas are large — measured ≈ 12–19 KiB per column, 1.2 MiB for a
 * collection of 100 described columns — and a project may hold 1,000 collections: kept for every
 * loaded metadata object (a WeakMap, as before), one app's `tools/list` or a walk over its
 * collections held hundreds of megabytes in an isolate other tenants share. Least recently used
 * out; rebuilding costs ≈ 50 µs for a small collection.
 */
export const SCHEMA_CACHE_COLUMNS = 1000;

const cache = new WeightedLru<CollectionMeta, OperationSchemas>(
  SCHEMA_CACHE_COLUMNS,
  (_schemas, meta) => meta.columns.length + VISIBLE_SERVER_COLUMNS.length,
);

/** `buildOperationSchemas`, memoized per metadata object (metadata is immutable once loaded). */
export function operationSchemas(meta: CollectionMeta): OperationSchemas {
  let schemas = cache.get(meta);
  if (!schemas) {
    schemas = buildOperationSchemas(meta);
    cache.set(meta, schemas);
  }
  return schemas;
}
