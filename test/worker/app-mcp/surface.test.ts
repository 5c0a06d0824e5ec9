/**
 * The per-scope tool surface end to end (issue 15): through the official MCP SDK client, every tool a
 * scope is shown has an input that succeeds for that scope, and what the policy would refuse is not
 * shown at all (write tools on developer-write collections, `hard` for end users); called anyway, the
 * data service refuses them as it refuses the SDK route.
 */

import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { beforeAll, describe, expect, it } from "vitest";
import { RECIPES_COLUMNS } from "../../fixtures.ts";
import {
  apiJson,
  endUserHeaders,
  signupDeveloper,
  signupUser,
  type TestDeveloper,
  type TestUser,
} from "../helpers.ts";
import { vectorColumns, vectorValues } from "../pgvector.ts";
import { connectClient, resultJson } from "./mcp-client.ts";

const PREFIX = "my_first_project";

/** recipes: owner/owner with a vector; notes: public/developer; diary: owner/developer (was owner/owner). */
const COLLECTIONS = [
  { name: "recipes", columns: vectorColumns(RECIPES_COLUMNS), access: { read: "owner", write: "owner" } },
  {
    name: "notes",
    columns: [{ name: "body", type: "text" }],
    access: { read: "public", write: "developer" },
  },
  { name: "diary", columns: [{ name: "entry", type: "text" }], access: { read: "owner", write: "owner" } },
];
const ROW: Record<string, Record<string, unknown>> = {
  recipes: vectorValues({ title: "Soup", calories: 120, tags: ["hot"], embedding: [1, 0, 0] }),
  notes: { body: "hello" },
  diary: { entry: "day one" },
};
const PATCH: Record<string, Record<string, unknown>> = {
  recipes: { calories: 130 },
  notes: { body: "hello again" },
  diary: { entry: "day one, edited" },
};

describe("app MCP surface per scope", () => {
  let dev: TestDeveloper;
  let alice: TestUser;
  let url: string;
  /** A row each collection has that the scope can see (for get / update / delete). */
  const visible: Record<string, Record<string, string>> = { developer: {}, end_user: {} };

  beforeAll(async () => {
    dev = await signupDeveloper();
    alice = await signupUser(dev.projectId, dev.clientKey);
    url = `http://local/app/${dev.projectId}/mcp`;
    const admin = `/v1/admin/projects/${dev.projectId}`;
    for (const json of COLLECTIONS) {
      const res = await apiJson(`${admin}/collections`, { token: dev.token, json });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
    }
    const exposed = await apiJson(`${admin}/app-mcp/exposure`, {
      method: "PUT",
      token: dev.token,
      json: { collections: ["recipes", "notes", "diary"] },
    });
    expect(exposed.status).toBe(200);
    // Alice writes her diary while its write policy is owner; then the developer takes writes over.
    const asAlice = await connectClient(url, endUserHeaders(dev.clientKey, alice.sessionToken));
    const entry = resultJson(await asAlice.callTool({ name: "diary_insert", arguments: ROW.diary! }));
    visible.end_user!.diary = entry.id;
    await asAlice.close();
    const patched = await apiJson(`${admin}/collections/diary`, {
      method: "PATCH",
      token: dev.token,
      json: { access: { read: "owner", write: "developer" } },
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    const asDev = await connectClient(url, { authorization: `Bearer ${dev.token}` });
    const note = resultJson(await asDev.callTool({ name: "notes_insert", arguments: ROW.notes! }));
    visible.end_user!.notes = note.id;
    await asDev.close();
  });

  /** A valid input for each listed tool, in an order where get/update see a row and delete comes last. */
  function inputFor(name: string, scope: "developer" | "end_user"): Record<string, unknown> {
    if (name.startsWith(`${PREFIX}_`)) return {};
    const [, collection, op] = /^(recipes|notes|diary)_(.+)$/.exec(name)!;
    const id = visible[scope]![collection!]!;
    switch (op) {
      case "list":
        return { limit: 5 };
      case "find":
        return { where: { created_at: { lte: new Date(Date.now() + 60_000).toISOString() } }, limit: 5 };
      case "aggregate":
        return { metrics: [{ fn: "count" }] };
      case "find_nearest":
        return { vector: [1, 0, 0], limit: 3 };
      case "insert":
        return ROW[collection!]!;
      case "get":
        return { id };
      case "update":
        return { id, patch: PATCH[collection!]! };
      case "delete":
        return { id };
    }
    throw new Error(`no input for ${name}`);
  }
  const rank = (name: string) => (name.endsWith("_insert") ? 0 : name.endsWith("_delete") ? 2 : 1);

  it.each([
    ["developer", () => ({ authorization: `Bearer ${dev.token}` })],
    ["end_user", () => endUserHeaders(dev.clientKey, alice.sessionToken)],
  ] as const)("every tool listed to the %s scope has an input that succeeds", async (scope, headers) => {
    const client = await connectClient(url, headers());
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    expect(names.length).toBeGreaterThan(2);
    for (const name of [...names].sort((a, b) => rank(a) - rank(b))) {
      const args = inputFor(name, scope);
      const result = await client.callTool({ name, arguments: args });
      expect(result.isError, `${name} ${JSON.stringify(result.content)}`).toBe(false);
      if (name.endsWith("_insert")) visible[scope]![name.slice(0, -"_insert".length)] = resultJson(result).id;
    }
    await client.close();
  });

  it("shows end users no write tools where writes are the developer's, and no hard delete", async () => {
    const client = await connectClient(url, endUserHeaders(dev.clientKey, alice.sessionToken));
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    for (const c of ["notes", "diary"]) {
      expect(names.filter((n) => n.startsWith(`${c}_`))).toEqual([
        `${c}_list`,
        `${c}_get`,
        `${c}_find`,
        `${c}_aggregate`,
      ]);
    }
    const del = tools.find((t) => t.name === "recipes_delete")!;
    expect(Object.keys(del.inputSchema.properties!)).toEqual(["id"]);
    const find = tools.find((t) => t.name === "recipes_find")!;
    const where = (find.inputSchema.properties!.where as { properties: Record<string, unknown> }).properties;
    expect(Object.keys(where)).toEqual(
      expect.arrayContaining(["title", "calories", "tags", "and", "or", "not"]),
    );
    const index = tools.find((t) => t.name === `${PREFIX}_list_collections`)!.description!;
    expect(index).toContain("- diary [READ-ONLY here (write policy: developer");
    expect(index).toContain("- notes [READ-ONLY here (write policy: developer");

    // Calling an unlisted write tool anyway reaches the data service's policy, as the SDK route
    // does (seed 004: the same enforcement path): a forbidden tool error, and nothing written.
    for (const [name, args] of [
      ["notes_insert", ROW.notes!],
      ["notes_update", { id: crypto.randomUUID(), patch: ROW.notes! }],
      ["diary_delete", { id: crypto.randomUUID() }],
    ] as const) {
      const refused = await client.callTool({ name, arguments: args });
      expect(refused.isError, name).toBe(true);
      expect(resultJson(refused).error.code, name).toBe("forbidden");
    }
    const notes = resultJson(await client.callTool({ name: "notes_list", arguments: {} }));
    expect(notes.rows.filter((r: { owner_id: string }) => r.owner_id === alice.userId)).toEqual([]);
    // A tool no scope has is still the protocol error.
    await expect(client.callTool({ name: "notes_find_nearest", arguments: {} })).rejects.toSatisfy(
      (err: unknown) => err instanceof McpError && err.code === -32602 && /Unknown tool/.test(err.message),
    );
    // hard is not offered; passed anyway, the data service still refuses it.
    const mine = resultJson(await client.callTool({ name: "recipes_insert", arguments: ROW.recipes! }));
    const hard = await client.callTool({ name: "recipes_delete", arguments: { id: mine.id, hard: true } });
    expect(hard.isError).toBe(true);
    expect(resultJson(hard).error.code).toBe("forbidden");
    await client.close();

    const asDev = await connectClient(url, { authorization: `Bearer ${dev.token}` });
    const devDelete = (await asDev.listTools()).tools.find((t) => t.name === "notes_delete")!;
    expect(Object.keys(devDelete.inputSchema.properties!)).toEqual(["id", "hard"]);
    await asDev.close();
  });

  it("says in <app>_list_collections' result what is read-only for the scope, and why", async () => {
    const readOnly = async (headers: Record<string, string>) => {
      const client = await connectClient(url, headers);
      const result = await client.callTool({ name: `${PREFIX}_list_collections`, arguments: {} });
      await client.close();
      expect(result.isError).toBe(false);
      const { collections } = resultJson(result) as {
        collections: {
          name: string;
          access: object;
          columns: unknown[];
          tools: string[];
          read_only: boolean;
        }[];
      };
      for (const c of collections)
        expect(Object.keys(c)).toEqual(expect.arrayContaining(["access", "columns", "tools"]));
      return Object.fromEntries(
        collections.map(({ name, read_only, ...rest }) => [
          name,
          { read_only, read_only_reason: (rest as { read_only_reason?: string }).read_only_reason },
        ]),
      );
    };
    const reason = "write policy: developer — only the developer's credentials can write";
    expect(await readOnly(endUserHeaders(dev.clientKey, alice.sessionToken))).toEqual({
      recipes: { read_only: false, read_only_reason: undefined },
      notes: { read_only: true, read_only_reason: reason },
      diary: { read_only: true, read_only_reason: reason },
    });
    expect(await readOnly({ authorization: `Bearer ${dev.token}` })).toEqual({
      recipes: { read_only: false, read_only_reason: undefined },
      notes: { read_only: false, read_only_reason: undefined },
      diary: { read_only: false, read_only_reason: undefined },
    });
  });
});
