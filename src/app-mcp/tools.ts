/**
 * Tool generation for an app's MCP endpoint: a pure function of the app's metadata (exposed
 * collections and functions) and the caller's scope. No I/O. Input schemas are the data layer's
 * valibot operation schemas (the same ones that validate the call), converted to JSON Schema.
 */
import * as v from "valibot";
import type { CollectionMeta } from "../data/columns.ts";
import { operationSchemas, operatorsFor, toolInputSchema, visibleColumns } from "../data/schemas.ts";
import type { Actor } from "../data/service.ts";
import type { FunctionMeta } from "../functions/definition.ts";
import { functionArgumentsSchema, functionToolDescription } from "../functions/invoke.ts";
import type { ToolDefinition } from "../mcp/server.ts";

/** The credential scope a tool list is generated for (the data service's actor scopes). */
export type Scope = Actor["scope"];

/** What an app's tool surface is generated from (only what the developer exposed). */
export interface AppMeta {
  projectId: string;
  projectName: string;
  metaRev: number;
  collections: CollectionMeta[];
  functions: FunctionMeta[];
}

export const COLLECTION_OPS = [
  "list",
  "get",
  "find",
  "insert",
  "update",
  "delete",
  "aggregate",
  "find_nearest",
] as const;
export type CollectionOp = (typeof COLLECTION_OPS)[number];

/** What a generated tool does when called. */
export type ToolBinding =
  | { kind: "collection"; op: CollectionOp; collection: CollectionMeta }
  | { kind: "function"; fn: FunctionMeta }
  | { kind: "list_collections" }
  | { kind: "whoami" };

/**
 * A tool and what it runs. The call's arguments are validated where they are executed (the data
 * service, the function execution path) by the same schema `definition.inputSchema` came from.
 */
export interface AppTool {
  definition: ToolDefinition;
  binding: ToolBinding;
}

/** `<app>_fn_<name>` must fit MCP's 64 characters with 40-character function names. */
const MAX_PREFIX_LENGTH = 20;

/**
 * The `<app>` prefix of the meta and function tools, from the project name: lowercase, runs of
 * anything but `[a-z0-9]` become `_`, at most 20 characters, `app` when nothing is left.
 */
export function appToolPrefix(projectName: string): string {
  const cleaned = projectName
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "_")
    .replace(/^_+|_+$/g, "")
    .slice(0, MAX_PREFIX_LENGTH)
    .replace(/_+$/, "");
  if (!cleaned) return "app";
  return /^[0-9]/.test(cleaned) ? `app_${cleaned}`.slice(0, MAX_PREFIX_LENGTH) : cleaned;
}

const typeLabel = (c: { type: string; dimensions?: number }) =>
  c.type === "vector" ? `vector(${c.dimensions})` : c.type;

function columnLines(meta: CollectionMeta): string {
  const lines = meta.columns.map((c) => {
    const flags = [typeLabel(c), c.required ? "required" : null, c.unique ? "unique" : null]
      .filter(Boolean)
      .join(", ");
    return `- ${c.name} (${flags})${c.description ? `: ${c.description}` : ""}`;
  });
  lines.push("- id, owner_id, created_at, updated_at: server-managed, set automatically, never input");
  return lines.join("\n");
}

function policyLine(meta: CollectionMeta, scope: Scope): string {
  if (scope === "developer") return "Scope: developer — operates across all rows (no per-user scoping).";
  const read =
    meta.access.read === "owner"
      ? "reads return only the signed-in user's rows"
      : "reads return every row (public read)";
  const write =
    meta.access.write === "owner"
      ? "inserts are stamped as the signed-in user's; updates and deletes only touch their own rows"
      : "writes are reserved to the developer (end users cannot insert, update or delete)";
  return `Scope: end user — ${read}; ${write}.`;
}

function operatorLines(meta: CollectionMeta): string {
  return visibleColumns(meta)
    .map((c) => `- ${c.name}: ${operatorsFor(c.type).join(", ")}`)
    .join("\n");
}

const vectorColumn = (meta: CollectionMeta) => meta.columns.find((c) => c.type === "vector");

function describe(op: CollectionOp, meta: CollectionMeta, scope: Scope): string {
  const c = meta.name;
  const columns = `Columns of ${c}:\n${columnLines(meta)}`;
  const policy = policyLine(meta, scope);
  const page =
    'Returns {"rows": [...], "next_cursor": "…" | null}; pass next_cursor back as cursor for the next page (null when there are no more rows).';
  switch (op) {
    case "list":
      return `Page through rows of the ${c} collection, newest first (created_at desc). ${page} limit 1–200, default 20.\n${policy}\n${columns}`;
    case "get":
      return `Fetch one row of ${c} by id. Fails with not_found when the row does not exist, was deleted or is not visible to you.\n${policy}\n${columns}`;
    case "find":
      return `Query ${c} with a typed, per-column where filter. A bare value means eq; combine conditions with and / or / not, e.g. {"where": {"calories": {"lt": 200}, "title": {"ilike": "%cake%"}}, "order": "created_at desc", "limit": 20}. order is "<column> asc|desc" (default "created_at desc", id breaks ties). ${page}\nOperators per column:\n${operatorLines(meta)}\n${policy}\n${columns}`;
    case "insert":
      return `Insert a row into ${c}. Only writable columns are accepted (unknown or server-managed keys are rejected); returns the row with its id.\n${policy}\n${columns}`;
    case "update":
      return `Merge-patch a row of ${c} by id: {"id": "…", "patch": {<columns to change>}}. Columns not in patch keep their values; null clears an optional column. Returns the row.\n${policy}\n${columns}`;
    case "delete":
      return `Soft-delete a row of ${c} by id: it disappears from every read. "hard": true removes it for good (developer scope only). Returns {"id", "deleted": true, "hard"}.\n${policy}`;
    case "aggregate":
      return `count / sum / avg / min / max over ${c}, several at once, optionally grouped and filtered: {"metrics": [{"fn": "count"}, {"fn": "sum", "column": "calories"}], "group_by": ["…"], "where": {…}}. Returns {"rows": [{"count": 2, "sum_calories": 690, …group columns}]}; sum/avg need a numeric column.\n${policy}\n${columns}`;
    case "find_nearest": {
      const vector = vectorColumn(meta);
      return `Vector similarity search over ${c}.${vector?.name} (cosine distance; smaller is closer): {"vector": [${vector?.dimensions} numbers], "limit": 10, "where": {…}}. Returns {"rows": [{…row, "distance": 0.01}]}, closest first.\n${policy}\n${columns}`;
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

const READ_ONLY = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };

const ANNOTATIONS: Record<CollectionOp, Record<string, boolean>> = {
  list: READ_ONLY,
  get: READ_ONLY,
  find: READ_ONLY,
  aggregate: READ_ONLY,
  find_nearest: READ_ONLY,
  insert: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  update: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  delete: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
};

function collectionTools(meta: CollectionMeta, scope: Scope): AppTool[] {
  const schemas = operationSchemas(meta);
  const inputs: Partial<Record<CollectionOp, v.GenericSchema>> = {
    list: schemas.list,
    get: schemas.get,
    find: schemas.find,
    insert: schemas.insert,
    update: schemas.update,
    delete: schemas.delete,
    aggregate: schemas.aggregate,
  };
  // Vector search belongs to the end-user scope (seed 004, DESIGN.md).
  if (schemas.nearest && scope === "end_user") inputs.find_nearest = schemas.nearest;
  return COLLECTION_OPS.flatMap((op) => {
    const input = inputs[op];
    if (!input) return [];
    const definition: ToolDefinition = {
      name: `${meta.name}_${op}`,
      title: `${TITLES[op]} ${meta.name}`,
      description: describe(op, meta, scope),
      inputSchema: toolInputSchema(input),
      annotations: ANNOTATIONS[op],
    };
    return [{ definition, binding: { kind: "collection", op, collection: meta } }];
  });
}

function functionTool(prefix: string, fn: FunctionMeta): AppTool {
  const input = functionArgumentsSchema(fn);
  const description = functionToolDescription(fn);
  return {
    definition: {
      name: `${prefix}_fn_${fn.name}`,
      title: `Function ${fn.name}`,
      description,
      inputSchema: toolInputSchema(input),
      annotations: {
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: false,
        openWorldHint: true,
      },
    },
    binding: { kind: "function", fn },
  };
}

/** The meta tools take no arguments (unknown keys are refused). */
export const NO_INPUT = v.strictObject({});

/**
 * The app's tools for one scope, in a deterministic order: the two meta tools, then each exposed
 * collection's tools (collections by name, operations in a fixed order), then the function tools
 * (end-user scope only, by name).
 */
export function buildAppTools(meta: AppMeta, scope: Scope): AppTool[] {
  const prefix = appToolPrefix(meta.projectName);
  const tools: AppTool[] = [
    {
      definition: {
        name: `${prefix}_list_collections`,
        title: "List exposed collections and functions",
        description: `The index of what this app (${meta.projectName}) exposes to agents: each collection with its columns, access policy and tools, and each function with its tool.`,
        inputSchema: toolInputSchema(NO_INPUT),
        annotations: READ_ONLY,
      },
      binding: { kind: "list_collections" },
    },
    {
      definition: {
        name: `${prefix}_whoami`,
        title: "Who am I connected as",
        description: `Which app (${meta.projectName}) and which scope (developer or end user, and which user) this connection acts as.`,
        inputSchema: toolInputSchema(NO_INPUT),
        annotations: READ_ONLY,
      },
      binding: { kind: "whoami" },
    },
  ];
  const byName = <T extends { name: string }>(a: T, b: T) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  for (const collection of [...meta.collections].sort(byName))
    tools.push(...collectionTools(collection, scope));
  if (scope === "end_user") {
    for (const fn of [...meta.functions].sort(byName)) tools.push(functionTool(prefix, fn));
  }
  // Names could collide (a collection "<app>_fn_x" and a function "x_list"): the first one listed wins,
  // so a call always reaches the tool the list shows.
  const seen = new Set<string>();
  return tools.filter((t) => !seen.has(t.definition.name) && seen.add(t.definition.name));
}
