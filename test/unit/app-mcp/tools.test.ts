import { describe, expect, it } from "vitest";
import { type AppMeta, appToolPrefix, buildAppTools } from "../../../src/app-mcp/tools.ts";
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

const names = (scope: "developer" | "end_user") => buildAppTools(meta, scope).map((t) => t.definition.name);

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
    const insert = buildAppTools(meta, "developer").find((t) => t.definition.name === "recipes_insert")!;
    const schema = insert.definition.inputSchema as {
      properties: Record<string, { type?: string; description?: string }>;
      required: string[];
      additionalProperties: boolean;
    };
    expect(Object.keys(schema.properties).sort()).toEqual(["calories", "embedding", "tags", "title"]);
    expect(schema.required).toEqual(["title"]);
    expect(schema.additionalProperties).toBe(false);
    expect(schema.properties.title).toMatchObject({ type: "string", description: "Dish name" });
    for (const managed of ["id", "created_at", "updated_at", "deleted_at", "owner_id"]) {
      expect(schema.properties).not.toHaveProperty(managed);
    }
  });

  it("exposes per-type operators in the find tool's where schema", () => {
    const find = buildAppTools(meta, "developer").find((t) => t.definition.name === "recipes_find")!;
    type Node = { $ref?: string; properties: Record<string, unknown> };
    const schema = find.definition.inputSchema as {
      properties: { where: Node };
      $defs?: Record<string, Node>;
    };
    // The where filter is recursive (and / or / not), so it is a $ref into $defs.
    const ref = schema.properties.where.$ref;
    const where = ref ? schema.$defs![ref.split("/").pop()!]! : schema.properties.where;
    const calories = JSON.stringify(where.properties.calories);
    expect(calories).toContain('"lt"');
    expect(calories).not.toContain('"ilike"');
    expect(JSON.stringify(where.properties.title)).toContain('"ilike"');
    expect(JSON.stringify(where.properties.tags)).toContain('"overlaps"');
    expect(find.definition.description).toContain("next_cursor");
    expect(find.definition.annotations).toMatchObject({ readOnlyHint: true });
  });

  it("describes the policy the caller's scope will meet", () => {
    const list = (scope: "developer" | "end_user", name: string) =>
      buildAppTools(meta, scope).find((t) => t.definition.name === name)!.definition.description!;
    expect(list("developer", "recipes_list")).toContain("all rows");
    expect(list("end_user", "recipes_list")).toContain("only the signed-in user's rows");
    expect(list("end_user", "notes_insert")).toContain("reserved to the developer");
  });

  it("types a function tool from its declared schema, and says so honestly when there is none", () => {
    const tools = buildAppTools(meta, "end_user");
    const typed = tools.find((t) => t.definition.name === "recipe_box_fn_send_welcome_email")!.definition;
    expect(typed.description).toContain("Send the branded welcome email to a user.");
    expect(typed.inputSchema).toMatchObject({
      type: "object",
      properties: { user_id: { type: "string" }, template: { enum: ["short", "full"] } },
      required: ["user_id"],
    });
    const generic = tools.find((t) => t.definition.name === "recipe_box_fn_ping")!.definition;
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
    const all = buildAppTools(longest, "end_user").map((t) => t.definition.name);
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
    const listed = tools.filter((t) => t.definition.name === "recipe_box_fn_x_list");
    expect(listed).toHaveLength(1);
    expect(listed[0]!.binding.kind).toBe("collection");
  });

  it("keeps every tool name within the MCP limits", () => {
    for (const scope of ["developer", "end_user"] as const) {
      for (const name of names(scope)) expect(name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
    }
  });
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
