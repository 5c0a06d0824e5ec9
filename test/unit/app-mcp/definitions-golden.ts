/**
 * The apps whose tool definitions test/unit/app-mcp/definitions-golden.test.ts pins byte for byte
 * (fixtures/definitions.golden.json, written from the definitions before their conversion was
 * restructured for CPU, BENCHMARKS.md "CPU on the heaviest requests (session 11)"): every column
 * type, descriptions, required / unique / default columns, two vector columns of different sizes,
 * a collection with no text or numeric column, and functions with and without a declared schema.
 * `node test/unit/app-mcp/definitions-golden.ts` prints the current definitions (the fixture is that
 * output as `npx biome format --write` lays it out; the test compares JSON text, not layout).
 */
import { appToolDefinitions } from "../../../src/app-mcp/definitions.ts";
import type { AppMeta } from "../../../src/app-mcp/tools.ts";
import { COLUMN_TYPES, type CollectionMeta } from "../../../src/data/columns.ts";
import { RECIPES_COLUMNS, WELCOME_EMAIL_MCP } from "../../fixtures.ts";

const every: CollectionMeta = {
  projectId: "p1",
  name: "every",
  columns: COLUMN_TYPES.map((type, i) => ({
    name: `c_${type.replace("[]", "_list")}`,
    type,
    ...(type === "vector" ? { dimensions: 3 } : {}),
    ...(i % 2 ? { description: `Column ${i} of "every"` } : {}),
    ...(i % 3 === 0 && type !== "vector" ? { required: true } : {}),
    ...(type === "text" ? { unique: true } : {}),
    ...(type === "integer" ? { default: 7 } : {}),
  })),
  access: { read: "owner", write: "owner" },
};
const vectors: CollectionMeta = {
  projectId: "p1",
  name: "vectors",
  columns: [
    { name: "a", type: "vector", dimensions: 2, description: "first" },
    { name: "b", type: "vector", dimensions: 5 },
    { name: "flag", type: "boolean" },
  ],
  access: { read: "public", write: "developer" },
};
const recipes: CollectionMeta = {
  projectId: "p1",
  name: "recipes",
  columns: RECIPES_COLUMNS,
  access: { read: "public", write: "owner" },
};

export const GOLDEN_APP: AppMeta = {
  projectId: "p1",
  projectName: "Golden",
  metaRev: 1,
  collections: [every, recipes, vectors],
  functions: [
    { name: "send_welcome_email", version: 2, url: "https://fn.example/welcome", mcp: WELCOME_EMAIL_MCP },
    { name: "ping", version: 1, url: "https://fn.example/ping", mcp: null },
  ],
};

/** Both scopes' definitions of {@link GOLDEN_APP}. */
export const goldenDefinitions = () => ({
  developer: appToolDefinitions(GOLDEN_APP, "developer"),
  end_user: appToolDefinitions(GOLDEN_APP, "end_user"),
});

if (import.meta.url === `file://${process.argv[1]}`) {
  process.stdout.write(`${JSON.stringify(goldenDefinitions(), null, 2)}\n`);
}
