import { describe, expect, it } from "vitest";
import { toolDefinition } from "../../../src/app-mcp/definitions.ts";
import { type AppMeta, buildAppTools } from "../../../src/app-mcp/tools.ts";
import type { CollectionMeta } from "../../../src/data/columns.ts";
import { internCollection } from "../../../src/data/service.ts";

const PROJECT = "7d0c8f1e-5b8a-4c1e-9f3a-2b6d4e8a1c01";
const notes = (columns: CollectionMeta["columns"]): CollectionMeta => ({
  projectId: PROJECT,
  name: "notes",
  columns,
  access: { read: "public", write: "owner" },
});
const app = (collection: CollectionMeta, metaRev: number): AppMeta => ({
  projectId: PROJECT,
  projectName: "Notes",
  metaRev,
  collections: [collection],
  functions: [],
});
/** The `notes_find` definition of `meta` (developer scope). */
function findDefinition(meta: AppMeta) {
  const tool = buildAppTools(meta, "developer").find((t) => t.name.endsWith("notes_find"));
  if (!tool) throw new Error("no notes_find");
  return toolDefinition(tool, meta, "developer");
}

describe("collection tool definitions across meta_rev changes", () => {
  it("interns metadata read back from its JSON copy (the KV path) to the same object", () => {
    const columns = [{ name: "body", type: "text" as const }];
    const first = internCollection(JSON.parse(JSON.stringify(notes(columns))));
    expect(internCollection(JSON.parse(JSON.stringify(notes(columns))))).toBe(first);
    expect(internCollection(notes([...columns, { name: "n", type: "integer" }]))).not.toBe(first);
  });

  it("reuses an unchanged collection's definitions at a new rev, and builds a changed one's", () => {
    const columns = [{ name: "body", type: "text" as const }];
    const before = findDefinition(app(internCollection(notes(columns)), 1));
    const after = findDefinition(app(internCollection(notes(structuredClone(columns))), 2));
    expect(after.inputSchema).toBe(before.inputSchema);
    const changed = findDefinition(
      app(internCollection(notes([...columns, { name: "n", type: "integer" }])), 3),
    );
    expect(changed.inputSchema).not.toBe(before.inputSchema);
    expect(JSON.stringify(changed.inputSchema)).toContain('"n"');
  });
});
