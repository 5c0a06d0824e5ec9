/**
 * The definitions of an app's tools (src/app-mcp/tools.ts names and binds them): title,
 * description, input schema and annotations, as `tools/list` shows them. Input schemas are the data
 * layer's valibot operation schemas (the same ones that validate the call), converted to JSON
 * Schema (src/app-mcp/input-schema.ts). Pure. The Worker imports this module on an isolate's first
 * `tools/list` (src/app-mcp/surface.ts), not for `tools/call` or the REST routes, which need none of it.
 */
import type * as v from "valibot";
import { type CollectionMeta, NUMERIC_TYPES } from "../data/columns.ts";
import { type OperationSchemas, operationSchemas } from "../data/schemas.ts";
import type { FunctionMeta } from "../functions/definition.ts";
import { functionArgumentsSchema, functionToolDescription } from "../functions/invoke.ts";
import { WeightedLru } from "../mcp/lru.ts";
import type { ToolDefinition } from "../mcp/server.ts";
import { advertisedInputSchema } from "./input-schema.ts";
import {
  type AppMeta,
  type AppTool,
  buildAppTools,
  type CollectionOp,
  NO_INPUT,
  readOnlyReason,
  type Scope,
  vectorColumn,
} from "./tools.ts";

const typeLabel = (c: { type: string; dimensions?: number }) =>
  c.type === "vector" ? `vector(${c.dimensions})` : c.type;

/** `title (text, required): Dish name; calories (integer); …` — a collection's columns on one line. */
function columnList(meta: CollectionMeta): string {
  return meta.columns
    .map((c) => {
      const flags = [typeLabel(c), c.required ? "required" : null, c.unique ? "unique" : null]
        .filter(Boolean)
        .join(", ");
      return `${c.name} (${flags})${c.description ? `: ${c.description}` : ""}`;
    })
    .join("; ");
}

const SERVER_MANAGED = "id, owner_id, created_at, updated_at (server-managed, never input)";

/** The developer scope's policy, the same for every collection (said once, not per tool). */
const DEVELOPER_SCOPE =
  "Developer scope: every tool reads and writes all rows (no per-user scoping); a written row keeps its owner.";

/**
 * What a read returns for this scope: nothing for the developer, whose scope is the same for every
 * collection and said once, in `<app>_list_collections` ({@link DEVELOPER_SCOPE}).
 */
function readPolicy(meta: CollectionMeta, scope: Scope): string {
  if (scope === "developer") return "";
  return meta.access.read === "owner"
    ? "Only the signed-in user's own rows (read policy: owner)."
    : "Every row (read policy: public).";
}

/** What a write may touch for this scope (only asked for tools this scope is shown; see readPolicy). */
function writePolicy(op: "insert" | "update" | "delete", scope: Scope): string {
  if (scope === "developer") return "";
  return op === "insert"
    ? "The row is stamped as the signed-in user's (owner_id)."
    : "Only the signed-in user's own rows (write policy: owner).";
}

/**
 * How a collection is reachable from this scope, for `<app>_list_collections`: the columns once,
 * what reads return and, when the scope cannot write, that it is read-only and why (the developer
 * reads and writes every collection alike: {@link DEVELOPER_SCOPE} says so once).
 */
function collectionSummary(meta: CollectionMeta, scope: Scope): string {
  if (scope === "developer") return `- ${meta.name}: ${columnList(meta)}`;
  const read = meta.access.read === "owner" ? "your own rows only" : "every row";
  const reason = readOnlyReason(meta, scope);
  const write = reason
    ? `READ-ONLY here (${reason})`
    : "read/write (writes stamped as yours, touch your rows only)";
  return `- ${meta.name} [${write}; reads: ${read}]: ${columnList(meta)}`;
}

/** A filter for the find example, on the collection's own columns (a text match and a bound). */
function exampleWhere(meta: CollectionMeta): string {
  const text = meta.columns.find((c) => c.type === "text");
  const numeric = meta.columns.find((c) => NUMERIC_TYPES.includes(c.type));
  const parts = [
    numeric ? `"${numeric.name}": {"lt": 200}` : null,
    text ? `"${text.name}": {"ilike": "%cake%"}` : null,
  ].filter(Boolean);
  return parts.length ? `{${parts.join(", ")}}` : `{"created_at": {"gte": "2026-01-01T00:00:00Z"}}`;
}

/** The metrics of the aggregate example: a count, and a sum over the first numeric column. */
function exampleMetrics(meta: CollectionMeta): { input: string; output: string } {
  const numeric = meta.columns.find((c) => NUMERIC_TYPES.includes(c.type));
  return numeric
    ? {
        input: `[{"fn": "count"}, {"fn": "sum", "column": "${numeric.name}"}]`,
        output: `{"count": 2, "sum_${numeric.name}": 690, …group columns}`,
      }
    : { input: `[{"fn": "count"}]`, output: `{"count": 2, …group columns}` };
}

/**
 * A tool's description: what it does, one example where the input has structure, what it returns
 * and the policy this scope meets. The columns are in `<app>_list_collections` and `_insert`, and
 * every column's type and operators in the input schemas, so descriptions do not repeat them.
 */
function describe(op: CollectionOp, meta: CollectionMeta, scope: Scope): string {
  return describeOp(op, meta, scope).trimEnd();
}

function describeOp(op: CollectionOp, meta: CollectionMeta, scope: Scope): string {
  const c = meta.name;
  const page = 'Returns {"rows": [...], "next_cursor": string|null}; more: pass it as cursor.';
  switch (op) {
    case "list":
      return `Page through rows of ${c}, newest first. ${page} ${readPolicy(meta, scope)}`;
    case "get":
      return `One row of ${c} by id (not_found when absent, deleted or not visible to you). ${readPolicy(meta, scope)}`;
    case "find":
      return `Query ${c} by column (each column's operators are in the schema), e.g. {"where": ${exampleWhere(meta)}, "limit": 20}. ${page} ${readPolicy(meta, scope)}`;
    case "insert":
      return `Insert a row into ${c} (its columns are the input; id, owner_id and the timestamps are the server's). Returns the row with its id. ${writePolicy(op, scope)}`;
    case "update":
      return `Merge-patch a row of ${c}: {"id", "patch": {<columns to change>}}; null clears an optional column. Returns the row. ${writePolicy(op, scope)}`;
    case "delete":
      return scope === "developer"
        ? `Soft-delete a row of ${c} by id (gone from every read); "hard": true removes it for good. Returns {"id", "deleted": true, "hard"}. ${writePolicy(op, scope)}`
        : `Soft-delete a row of ${c} by id (gone from every read). Returns {"id", "deleted": true, "hard": false}. ${writePolicy(op, scope)}`;
    case "aggregate": {
      const metrics = exampleMetrics(meta);
      return `count / sum / avg / min / max over ${c}, optionally grouped and filtered, e.g. {"metrics": ${metrics.input}, "group_by": [...]}. Returns {"rows": [${metrics.output}]}. ${readPolicy(meta, scope)}`;
    }
    case "find_nearest": {
      const vector = vectorColumn(meta);
      return `Vector similarity search over ${c}.${vector?.name} (cosine distance; smaller is closer): {"vector": [${vector?.dimensions} numbers], "limit": 10, "where": {…}}. Returns {"rows": [{…row, "distance": 0.01}]}, closest first (a row whose vector is all zeros has "distance": null and comes last). ${readPolicy(meta, scope)}`;
    }
  }
}

const TITLES: Record<CollectionOp, string> = {
  list: "List",
  get: "Get",
  find: "Find",
  insert: "Insert into",
  update: "Update",
  delete: "Delete from",
  aggregate: "Aggregate",
  find_nearest: "Nearest in",
};

/**
 * Tool annotations, with what MCP defines as the default or as meaningless left out:
 * `destructiveHint` and `idempotentHint` only mean something when `readOnlyHint` is false, and
 * default to true and false. `readOnlyHint` stays explicit (hosts key their confirmation prompts on
 * it); `openWorldHint` defaults to true, so false is said.
 */
const READ_ONLY = { readOnlyHint: true, openWorldHint: false };

const ANNOTATIONS: Record<CollectionOp, Record<string, boolean>> = {
  list: READ_ONLY,
  get: READ_ONLY,
  find: READ_ONLY,
  aggregate: READ_ONLY,
  find_nearest: READ_ONLY,
  insert: { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
  update: { readOnlyHint: false, idempotentHint: true, openWorldHint: false },
  delete: { readOnlyHint: false, idempotentHint: true, openWorldHint: false },
};

/** Inputs no call from this scope can use: `hard` deletes are the developer's. */
const REFUSED: Partial<Record<CollectionOp, Record<Scope, readonly string[]>>> = {
  delete: { developer: [], end_user: ["hard"] },
};

/** The data layer's schema behind a collection tool (`nearest` exists with a vector column only). */
function inputOf(op: CollectionOp, schemas: OperationSchemas): v.GenericSchema {
  if (op === "find_nearest") {
    if (!schemas.nearest)
      throw new Error("find_nearest is listed only for a collection with a vector column");
    return schemas.nearest;
  }
  return schemas[op];
}

/** The operations whose input has a `where` (the others' schemas never refer to it). */
const FILTERED: ReadonlySet<CollectionOp> = new Set(["find", "aggregate", "find_nearest"]);

type CollectionDefinition = Omit<ToolDefinition, "name">;

/**
 * Columns whose collection tool definitions the isolate keeps across `meta_rev` changes (a
 * collection weighs its columns plus four). Loaded metadata is interned by content
 * (src/data/service.ts), so a rev that leaves a collection as it was finds its definitions here:
 * after an exposure change, the first `tools/list` page of 15 collections of 100 columns rebuilt
 * ≈ 760 KB of JSON Schema: 71 ms of JS, 7–10 with this cache (BENCHMARKS.md "Worst-case CPU per
 * request"). Weight: ≈ 5 MiB of heap for 20 collections of 100 described columns in both scopes.
 */
export const DEFINITION_CACHE_COLUMNS = 2000;

const definitionCache = new WeightedLru<CollectionMeta, Map<string, CollectionDefinition>>(
  DEFINITION_CACHE_COLUMNS,
  (_definitions, meta) => meta.columns.length + 4,
);

/** A collection tool's definition but its name, built once per (interned metadata, op, scope). */
function collectionDefinition(op: CollectionOp, meta: CollectionMeta, scope: Scope): CollectionDefinition {
  let known = definitionCache.get(meta);
  if (!known) {
    known = new Map();
    definitionCache.set(meta, known);
  }
  const key = `${op}:${scope}`;
  let definition = known.get(key);
  if (!definition) {
    definition = buildCollectionDefinition(op, meta, scope);
    known.set(key, definition);
  }
  return definition;
}

function buildCollectionDefinition(
  op: CollectionOp,
  meta: CollectionMeta,
  scope: Scope,
): CollectionDefinition {
  const schemas = operationSchemas(meta);
  return {
    title: `${TITLES[op]} ${meta.name}`,
    description: describe(op, meta, scope),
    inputSchema: advertisedInputSchema(inputOf(op, schemas), {
      // Only to the operations that take a filter: the converter converts every definition it is
      // given, and a 100-column `where` converted for list, get, insert … was most of a page's cost.
      ...(FILTERED.has(op) ? { where: schemas.where } : {}),
      omit: REFUSED[op]?.[scope],
      plainTypes: op === "insert",
      // The typed per-column filter is shown once per collection, in find (seed 004); aggregate and
      // find_nearest take the same filter and point to it.
      ...(op === "find" ? {} : { whereDepth: 0, openWhere: `same shape as ${meta.name}_find's where` }),
    }),
    annotations: ANNOTATIONS[op],
  };
}

/** A function tool's definition but its name. */
function functionDefinition(fn: FunctionMeta) {
  return {
    title: `Function ${fn.name}`,
    description: functionToolDescription(fn),
    inputSchema: advertisedInputSchema(functionArgumentsSchema(fn)),
    annotations: {
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: false,
      openWorldHint: true,
    },
  };
}

/**
 * Collections whose columns `<app>_list_collections`' description lists; past them it says how many
 * more there are. The description is on the first `tools/list` page whatever the app's size: at
 * 1,000 collections the full index was ≈ 110 KB of it (the call's result still has every one, and
 * each collection's input schemas type its columns).
 */
export const INDEX_COLLECTIONS = 50;

/** `<app>_list_collections` carries each collection's columns once, and what this scope may do with it. */
function listCollectionsDescription(meta: AppMeta, scope: Scope): string {
  const index = `The index of what this app (${meta.projectName}) exposes to agents: returns each collection with its columns, access policy and tools, and each function with its tool.`;
  const intro = scope === "developer" ? `${index} ${DEVELOPER_SCOPE}` : index;
  if (!meta.collections.length) return intro;
  const byName = [...meta.collections].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const lines = byName.slice(0, INDEX_COLLECTIONS).map((c) => collectionSummary(c, scope));
  const more = byName.length - lines.length;
  if (more > 0) lines.push(`… and ${more} more: call this tool for every collection's columns and policy.`);
  return `${intro}\nCollections (every row also has ${SERVER_MANAGED}):\n${lines.join("\n")}`;
}

/** The definition `tools/list` shows for one of the app's tools (`meta` and `scope` as it was built for). */
export function toolDefinition(tool: AppTool, meta: AppMeta, scope: Scope): ToolDefinition {
  const { name, binding } = tool;
  switch (binding.kind) {
    case "list_collections":
      return {
        name,
        title: "List exposed collections and functions",
        description: listCollectionsDescription(meta, scope),
        inputSchema: advertisedInputSchema(NO_INPUT),
        annotations: READ_ONLY,
      };
    case "whoami":
      return {
        name,
        title: "Who am I connected as",
        description: `Which app (${meta.projectName}) and which scope (developer or end user, and which user) this connection acts as.`,
        inputSchema: advertisedInputSchema(NO_INPUT),
        annotations: READ_ONLY,
      };
    case "collection":
      return { name, ...collectionDefinition(binding.op, binding.collection, scope) };
    case "function":
      return { name, ...functionDefinition(binding.fn) };
  }
}

/** JSON characters of a function's declared input schema that weigh as much as a column. */
const SCHEMA_CHARS_PER_COLUMN = 80;

/**
 * What a tool's definition weighs against `TOOLS_PAGE_WEIGHT` (src/app-mcp/handlers.ts), in
 * columns, read from the metadata before the definition is built. Building one costs about the same
 * per column whatever the tool (each input schema types every column), plus about a column's worth
 * for the tool itself (measured: ≈ 10–13 µs of workerd JS a unit, from 4-column to 100-column
 * collections; BENCHMARKS.md "Worst-case CPU per request"). So: a collection tool its columns + 1;
 * a function tool 1 + its declared input schema at {@link SCHEMA_CHARS_PER_COLUMN} characters a
 * column (≈ what a column adds to a collection tool's schema); `<app>_list_collections` 1 + the
 * collections its description lists — a line of text per collection, not a schema: listing 50
 * collections of 100 columns cost about half of building one 100-column collection tool (Node).
 */
export function definitionWeight(tool: AppTool, meta: AppMeta): number {
  const { binding } = tool;
  switch (binding.kind) {
    case "collection":
      return binding.collection.columns.length + 1;
    case "function": {
      const declared = binding.fn.mcp?.input_schema;
      return 1 + (declared ? Math.ceil(JSON.stringify(declared).length / SCHEMA_CHARS_PER_COLUMN) : 0);
    }
    case "list_collections":
      return 1 + Math.min(meta.collections.length, INDEX_COLLECTIONS);
    case "whoami":
      return 1;
  }
}

/** Every tool definition of an app for one scope, in `buildAppTools` order (the console's preview, tests). */
export const appToolDefinitions = (meta: AppMeta, scope: Scope): ToolDefinition[] =>
  buildAppTools(meta, scope).map((tool) => toolDefinition(tool, meta, scope));
