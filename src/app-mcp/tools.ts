/**
 * Tool generation for an app's MCP endpoint: a pure function of the app's metadata (exposed
 * collections and functions) and the caller's scope. No I/O. This module names and binds the tools
 * (what `tools/call` needs); their definitions (descriptions and input schemas, what `tools/list`
 * shows) are built by src/app-mcp/definitions.ts, which the Worker imports on the first
 * `tools/list` only: the JSON Schema converter and the description builders are not needed to
 * answer a call.
 */
import * as v from "valibot";
import type { CollectionMeta } from "../data/columns.ts";
import type { Actor } from "../data/service.ts";
import type { FunctionMeta } from "../functions/definition.ts";

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
 * service, the function execution path) by the same schema its definition's `inputSchema` comes
 * from (`toolDefinition`, src/app-mcp/definitions.ts). Naming and binding is cheap, so a surface of
 * 1,000 collections names and binds its 7,000 tools at once; definitions (schemas and descriptions:
 * the costly part) are built per `tools/list` page, and a `tools/call` needs none.
 */
export interface AppTool {
  readonly name: string;
  readonly binding: ToolBinding;
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

/** Whether this scope may write the collection at all (end users: only under the owner write policy). */
export const canWrite = (meta: CollectionMeta, scope: Scope): boolean =>
  scope === "developer" || meta.access.write === "owner";

/**
 * Why this scope cannot write the collection, or `null` when it can: the one wording shared by
 * `<app>_list_collections`' description and its result (`read_only_reason`).
 */
export function readOnlyReason(meta: CollectionMeta, scope: Scope): string | null {
  if (canWrite(meta, scope)) return null;
  return `write policy: ${meta.access.write} — only the developer's credentials can write`;
}

/** The collection's vector column, if it has one (`find_nearest` exists only then). */
export const vectorColumn = (meta: CollectionMeta) => meta.columns.find((c) => c.type === "vector");

/** The operations this scope is shown: only those its policy can ever accept (issue 15). */
function listedOps(meta: CollectionMeta, scope: Scope, hasVector: boolean): CollectionOp[] {
  return COLLECTION_OPS.filter((op) => {
    if (op === "insert" || op === "update" || op === "delete") return canWrite(meta, scope);
    // Vector search belongs to the end-user scope (seed 004, DESIGN.md).
    if (op === "find_nearest") return hasVector && scope === "end_user";
    return true;
  });
}

function collectionTools(meta: CollectionMeta, scope: Scope): AppTool[] {
  return listedOps(meta, scope, vectorColumn(meta) !== undefined).map((op) => ({
    name: `${meta.name}_${op}`,
    binding: { kind: "collection", op, collection: meta },
  }));
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
    { name: `${prefix}_list_collections`, binding: { kind: "list_collections" } },
    { name: `${prefix}_whoami`, binding: { kind: "whoami" } },
  ];
  const byName = <T extends { name: string }>(a: T, b: T) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  for (const collection of [...meta.collections].sort(byName))
    tools.push(...collectionTools(collection, scope));
  if (scope === "end_user") {
    for (const fn of [...meta.functions].sort(byName))
      tools.push({ name: `${prefix}_fn_${fn.name}`, binding: { kind: "function", fn } });
  }
  // Names could collide (a collection "<app>_fn_x" and a function "x_list"): the first one listed wins,
  // so a call always reaches the tool the list shows.
  const seen = new Set<string>();
  return tools.filter((t) => !seen.has(t.name) && seen.add(t.name));
}
