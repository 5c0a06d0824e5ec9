/**
 * Black-box conformance to the public contract (DESIGN.md and seed 004), written from those two
 * documents only: routes, status codes, wire shapes and tool inputs/results as documented, through
 * the Worker's real wiring and the official MCP SDK client. One developer and project shared by
 * every case; other suites cover each area in depth, this file checks what they leave out (the
 * list is in docs/contract-audit.md, "second audit").
 */
import { beforeAll, describe, expect, inject, it, vi } from "vitest";
import { RECIPES_COLUMNS, WELCOME_EMAIL_MCP } from "../fixtures.ts";
import { connectClient, resultJson } from "./app-mcp/mcp-client.ts";
import { apiJson, endUserHeaders, expectError, type TestUser, uniqueEmail } from "./helpers.ts";
import { HAS_VECTOR, vectorColumns, vectorValues } from "./pgvector.ts";

/** This file's own address, so the sign-up limits per address never meet another file's. */
const IP = { "cf-connecting-ip": "198.51.100.41" };
const PREFIX = "contract_app";

let token: string;
let projectId: string;
let clientKey: string;
let alice: TestUser;
let bob: TestUser;
let url: string;
const admin = (path = "") => `/v1/admin/projects/${projectId}${path}`;
const rows = (collection: string, path = "") => `/v1/projects/${projectId}/collections/${collection}${path}`;
const dev = () => ({ authorization: `Bearer ${token}` });
const asUser = (u: TestUser) => endUserHeaders(clientKey, u.sessionToken);

/**
 * The billing usage once the earlier cases' metering is written: counts are flushed in the
 * background a window after a call (src/usage/metering.ts), so a read right after other calls can
 * miss some. Settled when two reads half a second apart (two flush windows) agree.
 */
async function settledUsage(): Promise<Record<string, number>> {
  const read = async () => JSON.stringify((await apiJson(admin("/billing"), { token })).body.usage);
  let last = await read();
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    const now = await read();
    if (now === last) return JSON.parse(now);
    last = now;
  }
}

async function signupEndUser(): Promise<TestUser> {
  const email = uniqueEmail("contract");
  const password = "correct horse battery";
  const res = await apiJson("/v1/auth/signup", { apiKey: clientKey, headers: IP, json: { email, password } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  expect(res.body).toEqual(
    expect.objectContaining({
      session_token: expect.any(String),
      user: expect.objectContaining({ id: expect.any(String), email }),
    }),
  );
  return { userId: res.body.user.id, email, password, sessionToken: res.body.session_token };
}

beforeAll(async () => {
  const email = uniqueEmail("contract-dev");
  const signup = await apiJson("/v1/developers/signup", {
    headers: IP,
    json: { email, project_name: "Contract App" },
  });
  expect(signup.status, JSON.stringify(signup.body)).toBe(201);
  expect(signup.body).toMatchObject({
    developer: { id: expect.any(String), email },
    token: expect.any(String),
    project: { id: expect.any(String), name: "Contract App" },
    client_key: expect.any(String),
  });
  ({ token, client_key: clientKey } = signup.body);
  projectId = signup.body.project.id;
  url = `http://local/app/${projectId}/mcp`;

  const recipes = {
    name: "recipes",
    columns: vectorColumns(RECIPES_COLUMNS),
    access: { read: "owner", write: "owner" },
  };
  const created = await apiJson(admin("/collections"), { token, json: recipes });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  expect(created.body).toMatchObject(recipes);
  const board = {
    name: "board",
    columns: [{ name: "msg", type: "text", required: true }],
    access: { read: "public", write: "owner" },
  };
  expect((await apiJson(admin("/collections"), { token, json: board })).status).toBe(201);
  const exposed = await apiJson(admin("/app-mcp/exposure"), {
    method: "PUT",
    token,
    json: { collections: ["recipes", "board"] },
  });
  expect(exposed.status).toBe(200);
  alice = await signupEndUser();
  bob = await signupEndUser();
});

describe("public contract", () => {
  it("documents each tool's input exactly as DESIGN.md lists it", async () => {
    const client = await connectClient(url, asUser(alice));
    const tools = new Map((await client.listTools()).tools.map((t) => [t.name, t.inputSchema]));
    await client.close();
    const props = (name: string) => Object.keys(tools.get(name)?.properties ?? {}).sort();
    expect(props("recipes_list")).toEqual(["cursor", "limit"]);
    expect(props("recipes_find")).toEqual(["cursor", "limit", "order", "where"]);
    expect(props("recipes_get")).toEqual(["id"]);
    expect(tools.get("recipes_get")?.required).toEqual(["id"]);
    expect(props("recipes_update")).toEqual(["id", "patch"]);
    expect(tools.get("recipes_update")?.required?.sort()).toEqual(["id", "patch"]);
    expect(props("recipes_aggregate")).toEqual(["group_by", "metrics", "where"]);
    expect(tools.get("recipes_aggregate")?.required).toEqual(["metrics"]);
    // Server-managed columns never appear as input; text → string, integer → whole number, array → array.
    const insert = tools.get("recipes_insert")!;
    expect(Object.keys(insert.properties!).sort()).toEqual(
      vectorColumns(RECIPES_COLUMNS)
        .map((c) => c.name)
        .sort(),
    );
    expect(insert.properties).toMatchObject({
      title: { type: "string" },
      calories: { type: "integer" },
      tags: { type: "array" },
    });
    if (HAS_VECTOR) {
      expect(props("recipes_find_nearest")).toEqual(["limit", "vector", "where"]);
      expect(tools.get("recipes_find_nearest")?.required).toEqual(["vector"]);
    } else expect(tools.has("recipes_find_nearest")).toBe(false);
    expect(tools.has("board_find_nearest")).toBe(false);

    const asDev = await connectClient(url, dev());
    const devTools = new Map((await asDev.listTools()).tools.map((t) => [t.name, t.inputSchema]));
    await asDev.close();
    expect(Object.keys(devTools.get("recipes_delete")?.properties ?? {}).sort()).toEqual(["hard", "id"]);
    expect(devTools.has("recipes_find_nearest")).toBe(false);
  });

  it("runs every collection tool with the documented results, newest first", async () => {
    const client = await connectClient(url, asUser(alice));
    const call = async (name: string, args: Record<string, unknown>) => {
      const result = await client.callTool({ name, arguments: args });
      expect(result.isError, JSON.stringify(result)).toBe(false);
      return resultJson(result);
    };
    const inserted = [];
    for (const [title, calories] of [
      ["Cake", 540],
      ["Soup", 150],
      ["Salad", 120],
    ] as const) {
      inserted.push(
        await call("recipes_insert", vectorValues({ title, calories, embedding: [calories, 1, 0] })),
      );
    }
    expect(inserted[0]).toMatchObject({
      id: expect.any(String),
      title: "Cake",
      owner_id: alice.userId,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const first = await call("recipes_list", { limit: 2 });
    expect(first.rows.map((r: { title: string }) => r.title)).toEqual(["Salad", "Soup"]);
    expect(first.next_cursor).toEqual(expect.any(String));
    const second = await call("recipes_list", { limit: 2, cursor: first.next_cursor });
    expect(second).toEqual({ rows: [inserted[0]], next_cursor: null });

    const found = await call("recipes_find", {
      where: { calories: { lt: 200 }, title: { ilike: "%s%" } },
      order: "created_at desc",
      limit: 20,
    });
    expect(found.rows.map((r: { title: string }) => r.title)).toEqual(["Salad", "Soup"]);
    const firstFind = await call("recipes_find", { limit: 1 });
    expect(firstFind.rows[0].title).toBe("Salad");
    expect(firstFind.next_cursor).toEqual(expect.any(String));

    expect(await call("recipes_get", { id: inserted[1].id })).toEqual(inserted[1]);
    const updated = await call("recipes_update", { id: inserted[1].id, patch: { calories: 160 } });
    expect(updated).toMatchObject({ id: inserted[1].id, title: "Soup", calories: 160 });

    const agg = await call("recipes_aggregate", {
      metrics: [{ fn: "count" }, { fn: "sum", column: "calories" }],
      group_by: ["title"],
      where: { title: { in: ["Cake", "Soup"] } },
    });
    expect(agg.rows).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ count: 1, sum_calories: 540, title: "Cake" }),
        expect.objectContaining({ count: 1, sum_calories: 160, title: "Soup" }),
      ]),
    );
    expect(agg.rows).toHaveLength(2);

    if (HAS_VECTOR) {
      const near = await call("recipes_find_nearest", { vector: [120, 1, 0], limit: 1 });
      expect(near.rows).toEqual([expect.objectContaining({ title: "Salad", distance: expect.any(Number) })]);
    }

    const deleted = await call("recipes_delete", { id: inserted[2].id });
    expect(deleted).toMatchObject({ id: inserted[2].id, deleted: true, hard: false });
    const gone = await client.callTool({ name: "recipes_get", arguments: { id: inserted[2].id } });
    expect(gone.isError).toBe(true);
    // The REST route answers the same rows (one data service): newest first, soft delete honoured.
    const rest = await apiJson(rows("recipes", "/rows?limit=1"), { headers: asUser(alice) });
    expect(rest.body).toEqual({ rows: [updated], next_cursor: expect.any(String) });
    expectError(await apiJson(rows("recipes", `/rows/${inserted[2].id}`), { headers: asUser(alice) }), 404);
    await client.close();

    // Developer scope: hard delete removes the row; the developer sees the soft-deleted row nowhere either.
    const asDev = await connectClient(url, dev());
    const hard = resultJson(
      await asDev.callTool({ name: "recipes_delete", arguments: { id: inserted[0].id, hard: true } }),
    );
    expect(hard).toMatchObject({ id: inserted[0].id, deleted: true, hard: true });
    const all = resultJson(await asDev.callTool({ name: "recipes_list", arguments: {} }));
    expect(all.rows.map((r: { id: string }) => r.id)).toEqual([inserted[1].id]);
    await asDev.close();
  });

  it("applies the public read policy on MCP and REST alike; writes stay the owner's", async () => {
    const asAlice = await connectClient(url, asUser(alice));
    const note = resultJson(await asAlice.callTool({ name: "board_insert", arguments: { msg: "hello" } }));
    expect(note.owner_id).toBe(alice.userId);
    await asAlice.close();

    const asBob = await connectClient(url, asUser(bob));
    const listed = resultJson(await asBob.callTool({ name: "board_list", arguments: {} }));
    expect(listed.rows.map((r: { id: string }) => r.id)).toContain(note.id);
    expect(resultJson(await asBob.callTool({ name: "board_get", arguments: { id: note.id } }))).toEqual(note);
    const edit = await asBob.callTool({
      name: "board_update",
      arguments: { id: note.id, patch: { msg: "x" } },
    });
    expect(edit.isError).toBe(true);
    const del = await asBob.callTool({ name: "board_delete", arguments: { id: note.id } });
    expect(del.isError).toBe(true);
    await asBob.close();

    const rest = await apiJson(rows("board", `/rows/${note.id}`), { headers: asUser(bob) });
    expect(rest).toEqual({ status: 200, body: note });
    const restEdit = await apiJson(rows("board", `/rows/${note.id}`), {
      method: "PATCH",
      headers: asUser(bob),
      json: { msg: "x" },
    });
    expect(restEdit.status).toBe(403);
  });

  it("indexes functions in list_collections and counts function tool calls as agent tool calls", async () => {
    const echo = inject("echoUrl");
    const typed = await apiJson(admin("/functions/deploy"), {
      token,
      json: { name: "send_welcome_email", url: `${echo}/welcome`, mcp: WELCOME_EMAIL_MCP },
    });
    expect(typed.status, JSON.stringify(typed.body)).toBe(201);
    const plain = await apiJson(admin("/functions/deploy"), {
      token,
      json: { name: "ping", url: `${echo}/ping` },
    });
    expect(plain.status).toBe(201);
    const exposed = await apiJson(admin("/app-mcp/exposure"), {
      method: "PUT",
      token,
      json: { functions: ["send_welcome_email", "ping"] },
    });
    expect(exposed.body).toEqual({
      collections: ["recipes", "board"],
      functions: ["send_welcome_email", "ping"],
    });

    expect((await apiJson(admin("/billing"), { token })).body).toMatchObject({
      period: expect.stringMatching(/^\d{4}-\d\d$/),
      usage: {},
    });
    const before = { usage: await settledUsage() };
    const client = await connectClient(url, asUser(alice));
    const index = resultJson(await client.callTool({ name: `${PREFIX}_list_collections`, arguments: {} }));
    expect(JSON.stringify(index)).toContain(`${PREFIX}_fn_send_welcome_email`);
    expect(JSON.stringify(index)).toContain(`${PREFIX}_fn_ping`);
    const tools = new Map((await client.listTools()).tools.map((t) => [t.name, t]));
    const generic = tools.get(`${PREFIX}_fn_ping`)!;
    expect(Object.keys(generic.inputSchema.properties!).sort()).toEqual(["body", "query"]);
    const ok = await client.callTool({ name: `${PREFIX}_fn_ping`, arguments: { body: { a: 1 } } });
    expect(ok.isError).toBe(false);
    const bad = await client.callTool({ name: `${PREFIX}_fn_send_welcome_email`, arguments: {} });
    expect(bad.isError).toBe(true);
    await client.close();
    // list_collections + one function call succeeded; the refused call does not count.
    await vi.waitFor(async () => {
      const after = (await apiJson(admin("/billing"), { token })).body;
      expect(after.usage.agent_tool_calls - (before.usage.agent_tool_calls ?? 0)).toBe(2);
    });

    // `[]` hides every function again; the collections stay.
    const hidden = await apiJson(admin("/app-mcp/exposure"), {
      method: "PUT",
      token,
      json: { functions: [] },
    });
    expect(hidden.body).toEqual({ collections: ["recipes", "board"], functions: [] });
    const after = await connectClient(url, asUser(alice));
    const names = (await after.listTools()).tools.map((t) => t.name);
    await after.close();
    expect(names.some((n) => n.includes("_fn_"))).toBe(false);
    expect(names).toContain("recipes_list");
  });

  it("reports MAU and storage next to agent tool calls (seed 004: metering)", async () => {
    // Alice and Bob signed up and called the app this month; the developer is no end user.
    await vi.waitFor(async () => {
      const { usage } = (await apiJson(admin("/billing"), { token })).body;
      expect(usage.mau).toBe(2);
    });
    const { usage } = (await apiJson(admin("/billing"), { token })).body;
    expect(usage.storage_bytes).toBeGreaterThan(0);
    const past = await apiJson(admin("/billing?period=2001-01"), { token });
    expect(past.body.usage.mau).toBe(0);
    expect(past.body.usage.storage_bytes).toBeUndefined();
  });

  it("answers a JSON-RPC batch of 101 on the platform MCP with one -32600 and runs nothing", async () => {
    const projects = async () => (await apiJson("/v1/admin/projects", { token })).body.projects.length;
    const before = await projects();
    const create = (id: number) => ({
      jsonrpc: "2.0",
      id,
      method: "tools/call",
      params: { name: "amba_projects_create", arguments: { name: `batch ${id}` } },
    });
    const batch = (n: number) =>
      apiJson("/mcp", {
        headers: { ...dev(), accept: "application/json, text/event-stream" },
        json: Array.from({ length: n }, (_, i) => create(i)),
      });
    const refused = await batch(101);
    expect(refused.body).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32600 } });
    expect(await projects()).toBe(before);
    const one = await batch(1);
    expect(one.body).toHaveLength(1);
    expect(await projects()).toBe(before + 1);
  });
});
