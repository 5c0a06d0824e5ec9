/**
 * Collection definitions: column specs, name rules, access policy and the server-managed columns.
 * Pure data + valibot schemas; everything else in src/data (DDL, queries, operation schemas) is
 * derived from a `CollectionMeta` built from these.
 */
import * as v from "valibot";
import { conflict, invalidInput } from "../errors.ts";

/** Scalar column types (also usable as array element types, except `json`). */
export const SCALAR_TYPES = [
  "text",
  "integer",
  "bigint",
  "number",
  "boolean",
  "timestamp",
  "date",
  "json",
  "uuid",
] as const;
export type ScalarType = (typeof SCALAR_TYPES)[number];

/** Element types an array column may have (`text[]`, `integer[]`, …). */
export const ARRAY_ELEMENT_TYPES = [
  "text",
  "integer",
  "bigint",
  "number",
  "boolean",
  "timestamp",
  "date",
  "uuid",
] as const;
export type ArrayElementType = (typeof ARRAY_ELEMENT_TYPES)[number];
export type ArrayType = `${ArrayElementType}[]`;

/** Every column type a collection may declare. */
export const COLUMN_TYPES = [
  ...SCALAR_TYPES,
  ...ARRAY_ELEMENT_TYPES.map((t) => `${t}[]` as ArrayType),
  "vector",
] as const;
export type ColumnType = ScalarType | ArrayType | "vector";

/** Largest `vector` dimension: the HNSW index limit of pgvector. */
export const MAX_VECTOR_DIMENSIONS = 2000;
/** Most user columns one collection may have. */
export const MAX_COLUMNS = 100;
/** Longest tool-name suffix an app MCP generates per collection (`_find_nearest`). */
const LONGEST_TOOL_SUFFIX = "_find_nearest";
/** MCP tool names are limited to 64 characters, so `<collection>_find_nearest` must fit. */
export const MAX_COLLECTION_NAME_LENGTH = 64 - LONGEST_TOOL_SUFFIX.length;
/** Postgres identifiers are truncated past 63 bytes. */
export const MAX_COLUMN_NAME_LENGTH = 63;

/** A user-declared column. `default` is a value of the column's type (rendered as a literal). */
export interface ColumnSpec {
  name: string;
  type: ColumnType;
  required?: boolean;
  default?: unknown;
  unique?: boolean;
  description?: string;
  /** `vector` only: number of dimensions. */
  dimensions?: number;
}

/** Who may read / write rows of a collection from the end-user scope. */
export interface Access {
  read: "public" | "owner";
  write: "owner" | "developer";
}

/**
 * Default policy: read owner, write owner — the safe choice. An end user sees and changes only the
 * rows they created until the developer deliberately opens reads to everyone (`read: "public"`).
 */
export const DEFAULT_ACCESS: Access = { read: "owner", write: "owner" };

/** What the data layer needs to know about one collection. */
export interface CollectionMeta {
  projectId: string;
  name: string;
  columns: ColumnSpec[];
  access: Access;
}

/** Columns every collection table has, stamped by the server and never accepted as input. */
export const SERVER_COLUMNS = ["id", "created_at", "updated_at", "deleted_at", "owner_id"] as const;
export type ServerColumn = (typeof SERVER_COLUMNS)[number];

/** Server-managed columns visible in rows, filters and order (`deleted_at` never is). */
export const VISIBLE_SERVER_COLUMNS: readonly { name: string; type: ColumnType }[] = [
  { name: "id", type: "uuid" },
  { name: "owner_id", type: "uuid" },
  { name: "created_at", type: "timestamp" },
  { name: "updated_at", type: "timestamp" },
];

/**
 * Postgres reserved key words (plus the `where` combinators, which are among them) and names the
 * data layer itself puts next to column values (`distance` in nearest results).
 */
const RESERVED_WORDS = new Set([
  "all",
  "analyse",
  "analyze",
  "and",
  "any",
  "array",
  "as",
  "asc",
  "asymmetric",
  "authorization",
  "both",
  "case",
  "cast",
  "check",
  "collate",
  "column",
  "constraint",
  "create",
  "current_catalog",
  "current_date",
  "current_role",
  "current_time",
  "current_timestamp",
  "current_user",
  "default",
  "deferrable",
  "desc",
  "distinct",
  "do",
  "else",
  "end",
  "except",
  "false",
  "fetch",
  "for",
  "foreign",
  "from",
  "grant",
  "group",
  "having",
  "in",
  "initially",
  "intersect",
  "into",
  "lateral",
  "leading",
  "limit",
  "localtime",
  "localtimestamp",
  "not",
  "null",
  "offset",
  "on",
  "only",
  "or",
  "order",
  "placing",
  "primary",
  "references",
  "returning",
  "select",
  "session_user",
  "some",
  "symmetric",
  "system_user",
  "table",
  "then",
  "to",
  "trailing",
  "true",
  "union",
  "unique",
  "user",
  "using",
  "variadic",
  "when",
  "where",
  "window",
  "with",
  "distance",
]);

/** Postgres' system columns: every table has them, so a user column of that name fails in DDL. */
const SYSTEM_COLUMNS = new Set(["tableoid", "xmin", "cmin", "xmax", "cmax", "ctid"]);

const IDENTIFIER = /^[a-z][a-z0-9_]*$/;

/** Why `name` cannot be a collection / column name, or null when it can. */
export function nameProblem(name: string, kind: "collection" | "column"): string | null {
  const max = kind === "collection" ? MAX_COLLECTION_NAME_LENGTH : MAX_COLUMN_NAME_LENGTH;
  if (!IDENTIFIER.test(name)) {
    return `${kind} name must be a lowercase identifier (a-z, 0-9, _; starting with a letter)`;
  }
  if (name.length > max) return `${kind} name must be at most ${max} characters`;
  if ((SERVER_COLUMNS as readonly string[]).includes(name)) {
    return `"${name}" is a server-managed column name`;
  }
  if (RESERVED_WORDS.has(name)) return `"${name}" is a reserved word`;
  // Every plain object inherits `constructor`: a row, a where or a patch that leaves such a column
  // out still "has" it for `key in input` (valibot's object schemas) and for name lookups on object
  // maps, which turned every insert, find and aggregate of the collection into a 500.
  if (kind === "column" && name in Object.prototype)
    return `"${name}" is reserved (every JavaScript object has it)`;
  if (kind === "column" && SYSTEM_COLUMNS.has(name)) return `"${name}" is a Postgres system column name`;
  if (name.startsWith("pg_")) return `names starting with "pg_" are reserved`;
  return null;
}

const nameSchema = (kind: "collection" | "column") =>
  v.pipe(
    v.string(),
    v.check(
      (name) => nameProblem(name, kind) === null,
      (issue) => nameProblem(String(issue.input), kind) ?? "",
    ),
  );

/** The element type of an array column, or null. */
export const arrayElementType = (type: ColumnType): ArrayElementType | null =>
  type.endsWith("[]") ? (type.slice(0, -2) as ArrayElementType) : null;

/** Postgres type of a column (also the cast used for bound values). */
export function pgType(column: Pick<ColumnSpec, "type" | "dimensions">): string {
  const element = arrayElementType(column.type);
  if (element) return `${PG_SCALAR[element]}[]`;
  if (column.type === "vector") return `vector(${column.dimensions ?? 0})`;
  return PG_SCALAR[column.type as ScalarType];
}

const PG_SCALAR: Record<ScalarType, string> = {
  text: "text",
  integer: "integer",
  bigint: "bigint",
  number: "double precision",
  boolean: "boolean",
  timestamp: "timestamptz",
  date: "date",
  json: "jsonb",
  uuid: "uuid",
};

/**
 * Types a keyset `order`, `group_by` and `min` / `max` can use: every scalar but `json` (Postgres
 * has no `min`/`max` over `boolean` or `uuid`; the SQL compiler spells those itself).
 */
export const ORDERABLE_TYPES: readonly ColumnType[] = SCALAR_TYPES.filter((t) => t !== "json");
/** Types `sum` / `avg` accept. */
export const NUMERIC_TYPES: readonly ColumnType[] = ["integer", "bigint", "number"];

/** Most values in one array value or `in` / `nin` / array-operator list. */
export const MAX_LIST_VALUES = 1000;

const INT4_MIN = -2147483648;
const INT4_MAX = 2147483647;

const LONE_SURROGATE = /\p{Cs}/u;
/**
 * Text that is well-formed Unicode. A lone UTF-16 surrogate (`"\ud83d"`, half an emoji) has no UTF-8
 * form: the database driver's encoding turns it into U+FFFD, so a value stored, or an operand compared
 * (`starts_with: "\ud83d"` matched nothing), silently was not the one sent.
 */
export const wellFormedText = v.check<string, string>(
  (text) => !LONE_SURROGATE.test(text),
  "Expected well-formed Unicode text (a lone UTF-16 surrogate has no UTF-8 form)",
);

/** The JSON value schema of one (non-null) value of a column type. */
export function valueSchema(type: ColumnType, dimensions?: number): v.GenericSchema {
  const element = arrayElementType(type);
  if (element) return v.pipe(v.array(valueSchema(element)), v.maxLength(MAX_LIST_VALUES));
  switch (type) {
    case "text":
      return v.pipe(v.string(), wellFormedText);
    case "integer":
      return v.pipe(
        v.number(),
        v.integer("Expected a whole number"),
        v.minValue(INT4_MIN, "Expected a 32-bit integer"),
        v.maxValue(INT4_MAX, "Expected a 32-bit integer"),
      );
    case "bigint":
      return v.union(
        [
          v.pipe(v.number(), v.safeInteger()),
          v.pipe(v.string(), v.regex(/^-?\d{1,19}$/, "Expected a whole number (digits)")),
        ],
        "Expected a whole number",
      );
    case "number":
      return v.number();
    case "boolean":
      return v.boolean();
    case "timestamp":
      return v.pipe(
        v.string(),
        v.isoTimestamp("Expected an ISO 8601 timestamp like 2026-11-01T12:00:00Z"),
        v.check(
          timestampInRange,
          "Expected a timestamp from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z (UTC)",
        ),
      );
    case "date":
      return v.pipe(v.string(), v.isoDate("Expected a date like 2026-11-01"));
    case "uuid":
      return v.pipe(v.string(), v.uuid("Expected a uuid"));
    case "json":
      return v.unknown();
    case "vector":
      return v.pipe(
        v.array(v.number()),
        v.length(dimensions ?? 0, `Expected an array of ${dimensions} numbers`),
      );
  }
  throw new Error(`unknown column type ${type}`);
}

const TIMESTAMP_PARTS =
  /^(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?(?:Z| ?([+-])(\d\d):?(\d\d)?)$/;
const utcMs = (year: number, month: number, day: number): number =>
  new Date(0).setUTCFullYear(year, month - 1, day);
/** Microseconds of 0001-01-01T00:00:00Z and of 9999-12-31T23:59:59.999999Z. */
const FIRST_INSTANT = BigInt(utcMs(1, 1, 1)) * 1000n;
const LAST_INSTANT = BigInt(utcMs(10000, 1, 1)) * 1000n - 1n;

/**
 * Whether an ISO timestamp's instant (at Postgres' microsecond precision) lies in the years 0001–9999
 * UTC. Rows come back in UTC, and Postgres writes an instant outside those years as
 * `10000-01-01T04:59:59+00:00` or `0001-12-31T19:00:00+00:00 BC`, which no timestamp input accepts:
 * such a row's value could not be written back, nor its keyset cursor (the order value) read.
 * Only the first and last day can cross, through the offset or the rounding of the fraction.
 */
export function timestampInRange(text: string): boolean {
  const m = TIMESTAMP_PARTS.exec(text);
  if (!m || (m[1] !== "0001" && m[1] !== "9999")) return true;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as number[];
  const sign = m[8] === "-" ? -1 : 1;
  const offsetMinutes = m[8] ? sign * (Number(m[9]) * 60 + Number(m[10] ?? 0)) : 0;
  const local =
    utcMs(year as number, month as number, day as number) +
    (((hour as number) * 60 + (minute as number) - offsetMinutes) * 60 + (second as number)) * 1000;
  const fraction = Math.round(Number(`0.${m[7] ?? "0"}`) * 1e6);
  const micros = BigInt(local) * 1000n + BigInt(fraction);
  return micros >= FIRST_INSTANT && micros <= LAST_INSTANT;
}

/** True when `value` is a valid (non-null) value of the column type — {@link valueSchema}'s verdict. */
export const isValidValue = (type: ColumnType, value: unknown, dimensions?: number): boolean =>
  v.is(valueSchema(type, dimensions), value);

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Why a (name-valid) column spec is inconsistent, or null. */
export function columnProblem(column: ColumnSpec): string | null {
  if (column.type === "vector") {
    const d = column.dimensions;
    if (d === undefined) return `${column.name}: vector columns need "dimensions"`;
    if (!Number.isInteger(d) || d < 1 || d > MAX_VECTOR_DIMENSIONS) {
      return `${column.name}: dimensions must be an integer from 1 to ${MAX_VECTOR_DIMENSIONS}`;
    }
    if (column.unique) return `${column.name}: vector columns cannot be unique`;
  } else if (column.dimensions !== undefined) {
    return `${column.name}: "dimensions" only applies to vector columns`;
  }
  if (column.unique && column.type === "json") return `${column.name}: json columns cannot be unique`;
  if (column.default !== undefined && column.default !== null) {
    if (!isValidValue(column.type, column.default, column.dimensions)) {
      return `${column.name}: default is not a valid ${column.type} value`;
    }
    if (JSON.stringify(column.default).includes("\\u0000")) {
      return `${column.name}: default must not contain NUL characters`;
    }
  }
  return null;
}

/** `vector(N)`: DESIGN.md's name of the type, accepted as `{"type": "vector", "dimensions": N}`. */
const VECTOR_SPELLING = /^vector\((\d{1,5})\)$/;
const TYPE_MESSAGE = `type must be one of: ${COLUMN_TYPES.join(", ")} (or vector(N))`;

/**
 * A column whose type is spelled `vector(N)` as `{type: "vector", dimensions: N}` (stored and
 * returned in that one form); an issue when it also gives different `dimensions`.
 */
const expandVectorSpelling = v.rawTransform<Omit<ColumnSpec, "type"> & { type: string }, ColumnSpec>(
  ({ dataset, addIssue, NEVER }) => {
    const column = dataset.value;
    const spelled = VECTOR_SPELLING.exec(column.type);
    if (!spelled) return column as ColumnSpec;
    const dimensions = Number(spelled[1]);
    if (column.dimensions !== undefined && column.dimensions !== dimensions) {
      addIssue({ message: `type ${column.type} and "dimensions": ${column.dimensions} disagree` });
      return NEVER;
    }
    return { ...column, type: "vector", dimensions } as ColumnSpec;
  },
);

/** One column as declared by the developer. */
export const ColumnSpecSchema = v.pipe(
  v.strictObject({
    name: nameSchema("column"),
    type: v.union(
      [
        v.picklist(COLUMN_TYPES as unknown as ColumnType[]),
        v.pipe(v.string(), v.regex(VECTOR_SPELLING, TYPE_MESSAGE)),
      ],
      TYPE_MESSAGE,
    ),
    required: v.optional(v.boolean()),
    default: v.optional(v.unknown()),
    unique: v.optional(v.boolean()),
    description: v.optional(v.pipe(v.string(), v.maxLength(500))),
    dimensions: v.optional(v.pipe(v.number(), v.integer())),
  }),
  expandVectorSpelling,
  v.check(
    (column) => columnProblem(column as ColumnSpec) === null,
    (issue) => columnProblem(issue.input as ColumnSpec) ?? "",
  ),
  v.transform((column) => normalizeColumn(column as ColumnSpec)),
);

/** Drop absent / falsy-default fields so stored and returned specs are minimal and stable. */
export function normalizeColumn(column: ColumnSpec): ColumnSpec {
  const out: ColumnSpec = { name: column.name, type: column.type };
  if (column.required) out.required = true;
  if (column.default !== undefined && column.default !== null) out.default = column.default;
  if (column.unique) out.unique = true;
  if (column.description !== undefined) out.description = column.description;
  if (column.dimensions !== undefined) out.dimensions = column.dimensions;
  return out;
}

export const AccessSchema = v.strictObject({
  read: v.optional(v.picklist(["public", "owner"]), DEFAULT_ACCESS.read),
  write: v.optional(v.picklist(["owner", "developer"]), DEFAULT_ACCESS.write),
});

const duplicateName = (names: string[]): string | undefined =>
  names.find((name, i) => names.indexOf(name) !== i);

const columnListSchema = v.pipe(
  v.array(ColumnSpecSchema),
  v.maxLength(MAX_COLUMNS, `at most ${MAX_COLUMNS} columns`),
  v.check(
    (columns) => duplicateName(columns.map((c) => c.name)) === undefined,
    (issue) => `duplicate column "${duplicateName((issue.input as ColumnSpec[]).map((c) => c.name))}"`,
  ),
);

/** `POST /v1/admin/projects/:id/collections` body. */
export const CollectionDefinitionSchema = v.strictObject({
  name: nameSchema("collection"),
  columns: v.optional(columnListSchema, []),
  access: v.optional(AccessSchema, DEFAULT_ACCESS),
});
export type CollectionDefinition = v.InferOutput<typeof CollectionDefinitionSchema>;

/** `PATCH …/collections/:name` body: add / drop columns, change the policy. */
export const AlterCollectionSchema = v.pipe(
  v.strictObject({
    add_columns: v.optional(columnListSchema),
    drop_columns: v.optional(v.array(v.string())),
    access: v.optional(
      v.strictObject({
        read: v.optional(v.picklist(["public", "owner"])),
        write: v.optional(v.picklist(["owner", "developer"])),
      }),
    ),
  }),
  v.check(
    (body) => body.add_columns !== undefined || body.drop_columns !== undefined || body.access !== undefined,
    "nothing to change: give add_columns, drop_columns or access",
  ),
);
export type AlterCollection = v.InferOutput<typeof AlterCollectionSchema>;

/**
 * Apply an alteration to a collection's metadata, checking it against the current columns.
 * Returns the new metadata (the DDL is derived from the same alteration).
 */
export function alterMeta(meta: CollectionMeta, change: AlterCollection): CollectionMeta {
  const drop = change.drop_columns ?? [];
  const existing = new Set(meta.columns.map((c) => c.name));
  // Named twice, the ALTER failed as a column missing under a concurrent change (409 "retry").
  const twice = drop.find((name, i) => drop.indexOf(name) !== i);
  if (twice !== undefined) throw invalidInput(`drop_columns: "${twice}" is named more than once`);
  for (const name of drop) {
    if ((SERVER_COLUMNS as readonly string[]).includes(name)) {
      throw invalidInput(`"${name}" is a server-managed column and cannot be dropped`);
    }
    if (!existing.has(name)) throw invalidInput(`no column "${name}" to drop`);
  }
  const kept = meta.columns.filter((c) => !drop.includes(c.name));
  const keptNames = new Set(kept.map((c) => c.name));
  for (const column of change.add_columns ?? []) {
    if (keptNames.has(column.name)) throw conflict(`column "${column.name}" already exists`);
  }
  const columns = [...kept, ...(change.add_columns ?? [])];
  if (columns.length > MAX_COLUMNS) throw invalidInput(`at most ${MAX_COLUMNS} columns`);
  return {
    ...meta,
    columns,
    access: { ...meta.access, ...change.access },
  };
}
