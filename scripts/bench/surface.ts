/**
 * `npm run bench -- surface`: the size of an app's `tools/list` answer (the JSON-RPC `result`,
 * serialized) as exposed collections grow — 1, 10, 100 and 1,000 copies of DESIGN.md's `recipes`
 * collection (owner/owner) — per scope, in bytes per collection, and as a ratio to the figure
 * recorded before issue 15 (the seven-times-repeated column list and the `$ref` where schema).
 * Then the `recipes_find` input schema shaped each way considered for the recursive `where`.
 */
import { toJsonSchema } from "@valibot/to-json-schema";
import type * as v from "valibot";
import { advertisedInputSchema } from "../../src/app-mcp/input-schema.ts";
import { type AppMeta, buildAppTools, type Scope } from "../../src/app-mcp/tools.ts";
import type { CollectionMeta, ColumnSpec } from "../../src/data/columns.ts";
import { operationSchemas } from "../../src/data/schemas.ts";

const COLUMNS: ColumnSpec[] = [
  { name: "title", type: "text", required: true, description: "Dish name" },
  { name: "calories", type: "integer" },
  { name: "tags", type: "text[]" },
  { name: "embedding", type: "vector", dimensions: 3 },
];

/** Bytes per collection measured on the generator before issue 15 (same command, same metadata). */
const BEFORE: Record<Scope, number> = { developer: 19_879, end_user: 26_874 };

function app(count: number): AppMeta {
  const collections: CollectionMeta[] = Array.from({ length: count }, (_, i) => ({
    projectId: "p1",
    name: `recipes_${String(i).padStart(4, "0")}`,
    columns: COLUMNS,
    access: { read: "owner", write: "owner" },
  }));
  return { projectId: "p1", projectName: "Recipe Box", metaRev: 1, collections, functions: [] };
}

const bytes = (meta: AppMeta, scope: Scope) =>
  Buffer.byteLength(JSON.stringify({ tools: buildAppTools(meta, scope).map((t) => t.definition) }));

const rows: string[] = [];
for (const scope of ["developer", "end_user"] as const) {
  const empty = bytes(app(0), scope);
  for (const count of [1, 10, 100, 1000]) {
    const total = bytes(app(count), scope);
    const perCollection = (total - empty) / count;
    const ratio = BEFORE[scope] ? (perCollection / BEFORE[scope]).toFixed(2) : "—";
    rows.push(
      `| ${scope} | ${count} | ${total.toLocaleString("en")} | ${Math.round(perCollection).toLocaleString("en")} | ${ratio} |`,
    );
  }
}
console.log("| scope | collections | tools/list bytes | bytes per collection | × before |");
console.log("|---|---|---|---|---|");
for (const row of rows) console.log(row);

// The recursive where filter, each way considered (recipes_find's whole input schema, bytes).
const schemas = operationSchemas(app(1).collections[0]!);
const whereObject = (schemas.where as v.LazySchema<v.GenericSchema>).getter(undefined);
const named = toJsonSchema(schemas.find, { definitions: { where: whereObject } }) as {
  properties: Record<string, unknown>;
  $defs: { where: unknown };
};
const topInlineNestedRef = { ...named, properties: { ...named.properties, where: named.$defs.where } };
const variants: [string, unknown][] = [
  ["before: `$ref` to `#/$defs/0` (converter default)", toJsonSchema(schemas.find)],
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
