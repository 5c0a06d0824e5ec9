import { describe, expect, it } from "vitest";
import { appToolDefinitions, INDEX_COLLECTIONS, toolDefinition } from "../../../src/app-mcp/definitions.ts";
import { type AppMeta, appToolPrefix, buildAppTools, readOnlyReason } from "../../../src/app-mcp/tools.ts";
import type { CollectionMeta } from "../../../src/data/columns.ts";
import { RECIPES_COLUMNS, WELCOME_EMAIL_MCP } from "../../fixtures.ts";

const recipes: CollectionMeta = {
  projectId: "p1",
  name: "recipes",
  columns: RECIPES_COLUMNS,
  access: { read: "owner", write: "owner" },
};
const notes: CollectionMeta = {
  projectId: "p1",
  name: "notes",
  columns: [{ name: "body", type: "text" }],
  access: { read: "public", write: "developer" },
};
const meta: AppMeta = {
  projectId: "p1",
  projectName: "Recipe Box!",
  metaRev: 7,
  collections: [recipes, notes],
  functions: [
    {
      name: "send_welcome_email",
      version: 2,
      url: "https://fn.example/welcome",
      mcp: WELCOME_EMAIL_MCP,
    },
    { name: "ping", version: 1, url: "https://fn.example/ping", mcp: null },
  ],
};

const names = (scope: "developer" | "end_user") => buildAppTools(meta, scope).map((t) => t.name);

describe("buildAppTools", () => {
  it("lists the meta tools, then each collection's tools by name, deterministically", () => {
    expect(names("developer")).toEqual([
      "recipe_box_list_collections",
      "recipe_box_whoami",
      "notes_list",
      "notes_get",
      "notes_find",
      "notes_insert",
      "notes_update",
      "notes_delete",
      "notes_aggregate",
      "recipes_list",
      "recipes_get",
      "recipes_find",
      "recipes_insert",
      "recipes_update",
      "recipes_delete",
      "recipes_aggregate",
    ]);
    expect(names("developer")).toEqual(names("developer"));
  });

  it("adds find_nearest (vector collections) and function tools on the end-user scope only", () => {
    const endUser = names("end_user");
    expect(endUser).toContain("recipes_find_nearest");
    expect(endUser).not.toContain("notes_find_nearest");
    expect(endUser.slice(-2)).toEqual(["recipe_box_fn_ping", "recipe_box_fn_send_welcome_email"]);
    expect(names("developer").some((n) => n.includes("_fn_") || n.endsWith("_find_nearest"))).toBe(false);
  });

  it("types insert from writable columns only; server-managed columns never appear as input", () => {
    const insert = appToolDefinitions(meta, "developer").find((t) => t.name === "recipes_insert")!;
    const schema = insert.inputSchema as {
      properties: Record<string, { type?: string; description?: string }>;
      required: string[];
      additionalProperties: boolean;
    };
    expect(Object.keys(schema.properties).sort()).toEqual(["calories", "embedding", "tags", "title"]);
    expect(schema.required).toEqual(["title"]);
    expect(schema.additionalProperties).toBe(false);
    expect(schema.properties.title).toMatchObject({ type: "string", description: "Dish name" });
    // Seed 004: each column as its own type (an optional column may be left out; null is not shown).
    expect(schema.properties.calories).toMatchObject({ type: "integer" });
    expect(schema.properties.tags).toMatchObject({ type: "array", items: { type: "string" } });
    expect(schema.properties.embedding).toMatchObject({ type: "array", items: { type: "number" } });
    for (const managed of ["id", "created_at", "updated_at", "deleted_at", "owner_id"]) {
      expect(schema.properties).not.toHaveProperty(managed);
    }
  });

  it("lists the columns with their operators directly under the find tool's where, with no $ref", () => {
    const find = appToolDefinitions(meta, "developer").find((t) => t.name === "recipes_find")!;
    type Node = { type?: string; properties?: Record<string, Node>; items?: Node; description?: string };
    const schema = find.inputSchema as { properties: { where: Node } };
    const where = schema.properties.where.properties!;
    expect(Object.keys(where)).toEqual([
      "id",
      "owner_id",
      "created_at",
      "updated_at",
      "title",
      "calories",
      "tags",
      "embedding",
      "and",
      "or",
      "not",
    ]);
    const calories = JSON.stringify(where.calories);
    expect(calories).toContain('"lt"');
    expect(calories).not.toContain('"ilike"');
    expect(JSON.stringify(where.title)).toContain('"ilike"');
    expect(JSON.stringify(where.tags)).toContain('"overlaps"');
    // Nested filters are open objects: the advertised schema never refuses a deeper filter the server
    // accepts (the server validates it); no host has to resolve a reference.
    expect(where.and!.items).toEqual({ type: "object", description: "a where filter" });
    expect(where.not).toEqual({ type: "object", description: expect.stringContaining("NOT") });
    for (const tool of appToolDefinitions(meta, "end_user")) {
      expect(JSON.stringify(tool.inputSchema), tool.name).not.toMatch(/\$ref|\$defs|\$schema/);
    }
    expect(find.description).toContain("next_cursor");
    expect(find.annotations).toMatchObject({ readOnlyHint: true });
  });

  it("leaves operand bounds and unknown operators inside where to the server, and keeps them elsewhere", () => {
    const tools = appToolDefinitions(meta, "developer");
    const input = (name: string) => tools.find((t) => t.name === name)!.inputSchema;
    const where = (input("recipes_find") as { properties: { where: Record<string, unknown> } }).properties
      .where;
    const text = JSON.stringify(where);
    expect(text).not.toMatch(/"minimum"|"maximum"|"maxItems"|"pattern"/);
    // The filter is closed (unknown columns), its columns' operator objects are open.
    expect(where.additionalProperties).toBe(false);
    expect(text.match(/"additionalProperties"/g)).toHaveLength(1);
    expect(where).toMatchObject({
      properties: { calories: { anyOf: [{ type: "integer" }, { properties: { lt: { type: "integer" } } }] } },
    });
    // A value (insert, update) still carries the column's bounds.
    expect(JSON.stringify(input("recipes_insert"))).toContain('"maximum":2147483647');
    expect(JSON.stringify(input("recipes_update"))).toContain('"maximum":2147483647');
  });

  it("names and binds every tool without building a definition; a definition is built on request", () => {
    // A column type the schema builder refuses: naming and binding its tools builds nothing of it.
    const broken: CollectionMeta = {
      ...notes,
      name: "broken",
      columns: [{ name: "x", type: "bogus" as "text" }],
    };
    const withBroken = { ...meta, collections: [broken] };
    const tools = buildAppTools(withBroken, "developer");
    expect(tools.map((t) => t.name)).toContain("broken_find");
    const find = tools.find((t) => t.name === "broken_find")!;
    expect(find.binding).toMatchObject({ kind: "collection", op: "find" });
    expect(() => toolDefinition(find, withBroken, "developer")).toThrow(/unknown column type/);
    const list = buildAppTools(meta, "developer")[2]!;
    expect(toolDefinition(list, meta, "developer").name).toBe(list.name);
  });

  it("shows the typed filter once per collection: aggregate and find_nearest point to find's where", () => {
    const tools = appToolDefinitions(meta, "end_user");
    for (const name of ["recipes_aggregate", "recipes_find_nearest"]) {
      const schema = tools.find((t) => t.name === name)!.inputSchema as {
        properties: { where: unknown };
      };
      expect(schema.properties.where, name).toEqual({
        type: "object",
        description: "same shape as recipes_find's where",
      });
    }
  });

  it("carries each collection's columns in list_collections only (the input schemas type them)", () => {
    const tools = appToolDefinitions(meta, "developer");
    const carrying = tools
      .filter((t) => t.description!.includes("title (text, required): Dish name"))
      .map((t) => t.name);
    expect(carrying).toEqual(["recipe_box_list_collections"]);
    const index = tools[0]!.description!;
    expect(index).toContain("- notes: body (text)");
    expect(index).toContain(
      "- recipes: title (text, required): Dish name; calories (integer); tags (text[]); embedding (vector(3))",
    );
  });

  it("lists the first INDEX_COLLECTIONS collections' columns in the index, then how many more", () => {
    const many = (count: number): AppMeta => ({
      ...meta,
      collections: Array.from({ length: count }, (_, i) => ({
        ...notes,
        name: `n_${String(i).padStart(3, "0")}`,
      })),
    });
    const index = (count: number) => appToolDefinitions(many(count), "developer")[0]!.description!;
    expect(index(INDEX_COLLECTIONS)).not.toContain("more:");
    expect(index(INDEX_COLLECTIONS).match(/^- n_/gm)).toHaveLength(INDEX_COLLECTIONS);
    const capped = index(INDEX_COLLECTIONS + 7);
    expect(capped.match(/^- n_/gm)).toHaveLength(INDEX_COLLECTIONS);
    expect(capped).toContain(`- n_${String(INDEX_COLLECTIONS - 1).padStart(3, "0")}: body (text)`);
    expect(capped).toContain("… and 7 more: call this tool for every collection's columns");
  });

  it("builds the find and aggregate examples from the collection's own columns", () => {
    const description = (m: AppMeta, name: string) =>
      appToolDefinitions(m, "developer").find((t) => t.name === name)!.description!;
    expect(description(meta, "recipes_find")).toContain(
      '{"where": {"calories": {"lt": 200}, "title": {"ilike": "%cake%"}}',
    );
    expect(description(meta, "recipes_aggregate")).toContain('{"fn": "sum", "column": "calories"}');
    expect(description(meta, "notes_find")).toContain('{"where": {"body": {"ilike": "%cake%"}}');
    expect(description(meta, "notes_aggregate")).toContain('{"metrics": [{"fn": "count"}]');
    expect(description(meta, "notes_aggregate")).not.toContain("sum_");
  });

  it("describes the policy the caller's scope will meet", () => {
    const list = (scope: "developer" | "end_user", name: string) =>
      appToolDefinitions(meta, scope).find((t) => t.name === name)!.description!;
    // The developer's policy is the same for every collection: said once, in the index.
    expect(list("developer", "recipes_list")).not.toContain("rows.");
    expect(list("developer", "recipe_box_list_collections")).toContain(
      "Developer scope: every tool reads and writes all rows",
    );
    expect(list("end_user", "recipes_list")).toContain(
      "Only the signed-in user's own rows (read policy: owner)",
    );
    expect(list("end_user", "notes_list")).toContain("Every row (read policy: public)");
    expect(list("end_user", "recipes_insert")).toContain("stamped as the signed-in user's");
    const index = list("end_user", "recipe_box_list_collections");
    expect(index).toContain(
      "- notes [READ-ONLY here (write policy: developer — only the developer's credentials can write); reads: every row]: body (text)",
    );
    expect(index).toContain(
      "- recipes [read/write (writes stamped as yours, touch your rows only); reads: your own rows only]",
    );
  });
  it("says why a scope cannot write a collection, in the index's own words", () => {
    expect(readOnlyReason(notes, "end_user")).toBe(
      "write policy: developer — only the developer's credentials can write",
    );
    expect(readOnlyReason(recipes, "end_user")).toBeNull();
    expect(readOnlyReason(notes, "developer")).toBeNull();
    expect(readOnlyReason(recipes, "developer")).toBeNull();
    const index = appToolDefinitions(meta, "end_user")[0]!.description!;
    expect(index).toContain(`- notes [READ-ONLY here (${readOnlyReason(notes, "end_user")}); `);
  });

  it("types a function tool from its declared schema, and says so honestly when there is none", () => {
    const tools = appToolDefinitions(meta, "end_user");
    const typed = tools.find((t) => t.name === "recipe_box_fn_send_welcome_email")!;
    expect(typed.description).toContain("Send the branded welcome email to a user.");
    expect(typed.inputSchema).toMatchObject({
      type: "object",
      properties: { user_id: { type: "string" }, template: { enum: ["short", "full"] } },
      required: ["user_id"],
    });
    const generic = tools.find((t) => t.name === "recipe_box_fn_ping")!;
    expect(generic.description).toContain("declares no input schema");
    expect(Object.keys((generic.inputSchema as { properties: object }).properties).sort()).toEqual([
      "body",
      "query",
    ]);
  });

  it("keeps tool names within 64 characters for the longest project, collection and function names", () => {
    const longest: AppMeta = {
      ...meta,
      projectName: "P".repeat(100),
      collections: [{ ...recipes, name: "c".repeat(51) }],
      functions: [{ name: "f".repeat(40), version: 1, url: "https://fn.example", mcp: null }],
    };
    const all = appToolDefinitions(longest, "end_user").map((t) => t.name);
    expect(all).toContain(`${"c".repeat(51)}_find_nearest`);
    for (const name of all) expect(name.length, name).toBeLessThanOrEqual(64);
  });

  it("lists each tool name once even when a collection and a function would collide", () => {
    const clash: AppMeta = {
      ...meta,
      collections: [{ ...notes, name: "recipe_box_fn_x" }],
      functions: [{ name: "x_list", version: 1, url: "https://fn.example", mcp: null }],
    };
    const tools = buildAppTools(clash, "end_user");
    const listed = tools.filter((t) => t.name === "recipe_box_fn_x_list");
    expect(listed).toHaveLength(1);
    expect(listed[0]!.binding.kind).toBe("collection");
  });

  it("keeps every tool name within the MCP limits", () => {
    for (const scope of ["developer", "end_user"] as const) {
      for (const name of names(scope)) expect(name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
    }
  });
});

describe("buildAppTools per scope × access policy", () => {
  type Access = CollectionMeta["access"];
  type Scope = "developer" | "end_user";
  const only = (access: Access): AppMeta => ({
    ...meta,
    collections: [{ ...recipes, access }],
    functions: [],
  });
  const ALL = ["list", "get", "find", "insert", "update", "delete", "aggregate"];
  const READS = ["list", "get", "find", "aggregate"];
  const cases: [Access["read"], Access["write"], Scope, string[]][] = [
    ["owner", "owner", "developer", ALL],
    ["public", "owner", "developer", ALL],
    ["owner", "developer", "developer", ALL],
    ["public", "developer", "developer", ALL],
    ["owner", "owner", "end_user", [...ALL, "find_nearest"]],
    ["public", "owner", "end_user", [...ALL, "find_nearest"]],
    ["owner", "developer", "end_user", [...READS, "find_nearest"]],
    ["public", "developer", "end_user", [...READS, "find_nearest"]],
  ];

  it.each(cases)(
    "read %s, write %s, %s scope: lists exactly what the policy can accept",
    (read, write, scope, ops) => {
      const tools = appToolDefinitions(only({ read, write }), scope);
      expect(tools.map((t) => t.name)).toEqual([
        "recipe_box_list_collections",
        "recipe_box_whoami",
        ...ops.map((op) => `recipes_${op}`),
      ]);
      const del = tools.find((t) => t.name === "recipes_delete");
      const delInput = del?.inputSchema as
        | { properties: Record<string, unknown>; required: string[] }
        | undefined;
      if (scope === "developer") {
        expect(Object.keys(delInput!.properties)).toEqual(["id", "hard"]);
        expect(del!.description).toContain('"hard": true');
      } else if (write === "owner") {
        // The end user is refused a hard delete: neither the schema nor the description offers it.
        expect(Object.keys(delInput!.properties)).toEqual(["id"]);
        expect(delInput!.required).toEqual(["id"]);
        expect(del!.description).not.toContain("hard:");
        expect(del!.description).not.toContain('"hard": true');
      } else {
        expect(del).toBeUndefined();
      }
      const index = tools[0]!.description!;
      const readOnly = scope === "end_user" && write === "developer";
      expect(index.includes("- recipes [READ-ONLY here (write policy: developer"), index).toBe(readOnly);
    },
  );
});

describe("appToolPrefix", () => {
  it.each([
    ["Recipe Box!", "recipe_box"],
    ["My first project", "my_first_project"],
    ["  ", "app"],
    ["2048 Game", "app_2048_game"],
    ["Ünïcödé Café", "unicode_cafe"],
    ["a very long project name that goes on and on", "a_very_long_project"],
  ])("%j → %j", (name, prefix) => {
    expect(appToolPrefix(name)).toBe(prefix);
  });
});
