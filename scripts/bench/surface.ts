/**
 * `npm run bench -- surface`: the size of an app's `tools/list` answer as exposed collections grow —
 * 1, 10, 100 and 1,000 copies of DESIGN.md's `recipes` collection (owner/owner) — per scope, in
 * bytes per collection and as a ratio to the figure recorded before issue 15 (the
 * seven-times-repeated column list and the `$ref` where schema): the unpaged `result`, and every
 * page as served (the JSON-RPC responses of the app MCP's handler options: up to 100 tools a
 * page within `TOOLS_PAGE_WEIGHT`, pre-serialised), which is what issue 11's "total bytes for all
 * pages ≤ 40 %" is about. Then each tool's size for one collection, and the `recipes_find` input
 * schema shaped each way considered for the recursive `where`.
 */
import { toJsonSchema } from "@valibot/to-json-schema";
import type * as v from "valibot";
import {
  appToolDefinitions as definitions,
  definitionWeight,
  toolDefinition,
} from "../../src/app-mcp/definitions.ts";
import { TOOLS_PAGE_SIZE, TOOLS_PAGE_WEIGHT } from "../../src/app-mcp/handlers.ts";
import { advertisedInputSchema } from "../../src/app-mcp/input-schema.ts";
import { type AppMeta, buildAppTools, type Scope } from "../../src/app-mcp/tools.ts";
import type { CollectionMeta, ColumnSpec } from "../../src/data/columns.ts";
import { operationSchemas, SERVER_ONLY_ACTIONS } from "../../src/data/schemas.ts";
import { createMcpHandlers, dispatchText, type ToolList } from "../../src/mcp/index.ts";

const COLUMNS: ColumnSpec[] = [
  { name: "title", type: "text", required: true, description: "Dish name" },
  { name: "calories", type: "integer" },
  { name: "tags", type: "text[]" },
  { name: "embedding", type: "vector", dimensions: 3 },
];

/** Bytes per collection measured on the generator before issue 15 (same command, same metadata). */
const BEFORE: Record<Scope, number> = { developer: 19_879, end_user: 26_874 };
/** Issue 11: all pages at most this share of {@link BEFORE} per collection. */
const GOAL = 0.4;

function app(count: number): AppMeta {
  const collections: CollectionMeta[] = Array.from({ length: count }, (_, i) => ({
    projectId: "p1",
    name: `recipes_${String(i).padStart(4, "0")}`,
    columns: COLUMNS,
    access: { read: "owner", write: "owner" },
  }));
  return { projectId: "p1", projectName: "Recipe Box", metaRev: 1, collections, functions: [] };
}

const resultBytes = (meta: AppMeta, scope: Scope) =>
  Buffer.byteLength(JSON.stringify({ tools: definitions(meta, scope) }));

/** The app's tools as the Worker's surface lists them: built per page, weighed from the metadata. */
function toolList(meta: AppMeta, scope: Scope): ToolList {
  const tools = buildAppTools(meta, scope);
  return {
    length: tools.length,
    slice: (start, end) => tools.slice(start, end).map((tool) => toolDefinition(tool, meta, scope)),
    weight: (index) => definitionWeight(tools[index]!, meta),
  };
}

/** Every `tools/list` page of `list` as served (2025-06-18), as the byte count of each response. */
async function pageBytes(list: ToolList): Promise<number[]> {
  const handlers = createMcpHandlers<null>({
    serverInfo: { name: "amba-app-mcp", version: "bench" },
    toolsPageSize: TOOLS_PAGE_SIZE,
    toolsPageWeight: TOOLS_PAGE_WEIGHT,
    rawToolPages: true,
    tools: { list: () => list, call: async () => ({ value: null }) },
  });
  const sizes: number[] = [];
  let cursor: string | undefined;
  do {
    const params = cursor === undefined ? {} : { cursor };
    const text = (await dispatchText(
      JSON.stringify({ jsonrpc: "2.0", id: sizes.length + 1, method: "tools/list", params }),
      handlers,
      null,
      { transport: { protocolVersion: "2025-06-18" } },
    )) as string;
    sizes.push(Buffer.byteLength(text));
    cursor = (JSON.parse(text) as { result: { nextCursor?: string } }).result.nextCursor;
  } while (cursor !== undefined);
  return sizes;
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const fmt = (n: number) => Math.round(n).toLocaleString("en");
const rows: string[] = [];
for (const scope of ["developer", "end_user"] as const) {
  const empty = resultBytes(app(0), scope);
  const emptyPages = sum(await pageBytes(toolList(app(0), scope)));
  for (const count of [1, 10, 100, 1000]) {
    const total = resultBytes(app(count), scope);
    const pages = await pageBytes(toolList(app(count), scope));
    const perCollection = (total - empty) / count;
    const perCollectionPaged = (sum(pages) - emptyPages) / count;
    const ratio = perCollectionPaged / BEFORE[scope];
    rows.push(
      `| ${scope} | ${count} | ${fmt(total)} | ${fmt(perCollection)} | ${pages.length} | ${fmt(sum(pages))} | ${fmt(perCollectionPaged)} | ${ratio.toFixed(3)} ${ratio <= GOAL ? "✔" : "✘"} |`,
    );
  }
}
console.log(
  "| scope | collections | unpaged result bytes | per collection | pages | all pages, bytes | per collection | × before (goal ≤ 0.40) |",
);
console.log("|---|---|---|---|---|---|---|---|");
for (const row of rows) console.log(row);

// Where one collection's bytes go: each tool, serialized, per scope.
const one = app(1);
const perTool = (scope: Scope) =>
  new Map(definitions(one, scope).map((d) => [d.name, Buffer.byteLength(JSON.stringify(d))]));
const cell = (bytes: number | undefined) => (bytes === undefined ? "—" : fmt(bytes));
const developer = perTool("developer");
const endUser = perTool("end_user");
console.log("\n| tool (1 collection) | developer bytes | end user bytes |");
console.log("|---|---|---|");
for (const name of new Set([...developer.keys(), ...endUser.keys()]))
  console.log(`| ${name} | ${cell(developer.get(name))} | ${cell(endUser.get(name))} |`);

// The recursive where filter, each way considered (recipes_find's whole input schema, bytes).
const schemas = operationSchemas(app(1).collections[0]!);
const whereObject = (schemas.where as v.LazySchema<v.GenericSchema>).getter(undefined);
const named = toJsonSchema(schemas.find, {
  definitions: { where: whereObject },
  ignoreActions: SERVER_ONLY_ACTIONS,
}) as {
  properties: Record<string, unknown>;
  $defs: { where: unknown };
};
const topInlineNestedRef = { ...named, properties: { ...named.properties, where: named.$defs.where } };
const variants: [string, unknown][] = [
  [
    "`$ref` to `#/$defs/0` (converter default)",
    toJsonSchema(schemas.find, { ignoreActions: SERVER_ONLY_ACTIONS }),
  ],
  ["top level inline, nested and/or/not `$ref` `#/$defs/where`", topInlineNestedRef],
  [
    "inline depth 1, nested operands open objects (shipped)",
    advertisedInputSchema(schemas.find, { where: schemas.where }),
  ],
  ["inline depth 2, then open", advertisedInputSchema(schemas.find, { where: schemas.where, whereDepth: 2 })],
  ["inline depth 3, then open", advertisedInputSchema(schemas.find, { where: schemas.where, whereDepth: 3 })],
];
console.log("\n| recipes_find inputSchema | bytes |");
console.log("|---|---|");
for (const [label, json] of variants)
  console.log(`| ${label} | ${Buffer.byteLength(JSON.stringify(json)).toLocaleString("en")} |`);
