/**
 * The app MCP endpoint end to end, through the official MCP SDK client: exposure, live generation,
 * both scopes and their policy, kill switch, auth modes, hostname addressing, functions, metering.
 */

import { env } from "cloudflare:workers";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { beforeAll, describe, expect, inject, it, vi } from "vitest";
import { RECIPES_COLUMNS, WELCOME_EMAIL_MCP } from "../../fixtures.ts";
import {
  api,
  apiJson,
  endUserHeaders,
  expectError,
  signupDeveloper,
  signupUser,
  type TestDeveloper,
  type TestUser,
} from "../helpers.ts";
import { HAS_VECTOR, needsPgvector, vectorColumns, vectorValues } from "../pgvector.ts";
import { connectClient, resultJson } from "./mcp-client.ts";

const RECIPES = {
  name: "recipes",
  columns: vectorColumns(RECIPES_COLUMNS),
  access: { read: "owner", write: "owner" },
};

async function setupApp(): Promise<{ dev: TestDeveloper; alice: TestUser; bob: TestUser; url: string }> {
  const dev = await signupDeveloper();
  const admin = `/v1/admin/projects/${dev.projectId}`;
  for (const json of [RECIPES, { name: "audit_log", columns: [{ name: "event", type: "text" }] }]) {
    const res = await apiJson(`${admin}/collections`, { token: dev.token, json });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }
  const alice = await signupUser(dev.projectId, dev.clientKey);
  const bob = await signupUser(dev.projectId, dev.clientKey);
  return { dev, alice, bob, url: `http://local/app/${dev.projectId}/mcp` };
}

const expose = (dev: TestDeveloper, json: unknown) =>
  apiJson(`/v1/admin/projects/${dev.projectId}/app-mcp/exposure`, { method: "PUT", token: dev.token, json });
const configure = (dev: TestDeveloper, json: unknown) =>
  apiJson(`/v1/admin/projects/${dev.projectId}/app-mcp/config`, { method: "PATCH", token: dev.token, json });
const devHeaders = (dev: TestDeveloper) => ({ authorization: `Bearer ${dev.token}` });
const toolNames = async (url: string, headers: Record<string, string>) => {
  const client = await connectClient(url, headers);
  const { tools } = await client.listTools();
  await client.close();
  return tools.map((t) => t.name);
};

const PREFIX = "my_first_project";
const RECIPE_TOOLS = ["list", "get", "find", "insert", "update", "delete", "aggregate"].map(
  (op) => `recipes_${op}`,
);

describe("app MCP endpoint", () => {
  let dev: TestDeveloper;
  let alice: TestUser;
  let bob: TestUser;
  let url: string;

  beforeAll(async () => {
    ({ dev, alice, bob, url } = await setupApp());
  });

  it("exposes nothing but the meta tools until the developer opts in", async () => {
    expect(await toolNames(url, devHeaders(dev))).toEqual([`${PREFIX}_list_collections`, `${PREFIX}_whoami`]);
  });

  it("generates typed tools for exposed collections only, live on the next tools/list", async () => {
    expect((await expose(dev, { collections: ["recipes"] })).status).toBe(200);
    const developer = await toolNames(url, devHeaders(dev));
    expect(developer).toEqual([`${PREFIX}_list_collections`, `${PREFIX}_whoami`, ...RECIPE_TOOLS]);
    expect(developer.some((n) => n.startsWith("audit_log"))).toBe(false);

    const user = await toolNames(url, endUserHeaders(dev.clientKey, alice.sessionToken));
    expect(user).toEqual([
      `${PREFIX}_list_collections`,
      `${PREFIX}_whoami`,
      ...RECIPE_TOOLS,
      ...(HAS_VECTOR ? ["recipes_find_nearest"] : []),
    ]);

    // Alter the collection: the insert tool's schema follows on the very next tools/list.
    const altered = await apiJson(`/v1/admin/projects/${dev.projectId}/collections/recipes`, {
      method: "PATCH",
      token: dev.token,
      json: { add_columns: [{ name: "servings", type: "integer", description: "People served" }] },
    });
    expect(altered.status, JSON.stringify(altered.body)).toBe(200);
    const client = await connectClient(url, devHeaders(dev));
    const { tools } = await client.listTools();
    const insert = tools.find((t) => t.name === "recipes_insert")!;
    expect(insert.inputSchema.properties).toHaveProperty("servings");
    expect(insert.inputSchema.required).toEqual(["title"]);
    await client.close();
  });

  it("inserts a row and finds it back, typed, end to end (developer scope)", async () => {
    const client = await connectClient(url, devHeaders(dev));
    const inserted = await client.callTool({
      name: "recipes_insert",
      arguments: vectorValues({
        title: "Birthday Cake",
        calories: 540,
        tags: ["dessert"],
        embedding: [0.1, 0.9, 0.2],
      }),
    });
    expect(inserted.isError).toBe(false);
    const row = resultJson(inserted);
    expect(row).toMatchObject({ title: "Birthday Cake", calories: 540, tags: ["dessert"], owner_id: null });
    expect(inserted.structuredContent).toEqual(row);

    const found = await client.callTool({
      name: "recipes_find",
      arguments: {
        where: { calories: { gt: 500 }, title: { ilike: "%cake%" } },
        order: "created_at desc",
        limit: 20,
      },
    });
    expect(resultJson(found)).toEqual({ rows: [row], next_cursor: null });
    await client.close();
  });

  it("returns next_cursor from the first page and walks every row once", async () => {
    const client = await connectClient(url, devHeaders(dev));
    for (let i = 0; i < 5; i++) {
      await client.callTool({ name: "recipes_insert", arguments: { title: `Soup ${i}`, calories: 100 + i } });
    }
    const seen: string[] = [];
    let cursor: string | null | undefined;
    let pages = 0;
    do {
      const page = resultJson(
        await client.callTool({ name: "recipes_list", arguments: { limit: 2, cursor } }),
      );
      if (pages === 0) expect(page.next_cursor).toEqual(expect.any(String));
      seen.push(...page.rows.map((r: { id: string }) => r.id));
      cursor = page.next_cursor;
      pages++;
    } while (cursor);
    expect(seen.length).toBe(6);
    expect(new Set(seen).size).toBe(6);
    expect(pages).toBe(3);
    await client.close();
  });

  it("aggregates with metrics and group by", async () => {
    const client = await connectClient(url, devHeaders(dev));
    const result = resultJson(
      await client.callTool({
        name: "recipes_aggregate",
        arguments: {
          metrics: [{ fn: "count" }, { fn: "sum", column: "calories" }],
          where: { title: { starts_with: "Soup" } },
        },
      }),
    );
    expect(result).toEqual({ rows: [{ count: 5, sum_calories: 510 }] });
    await client.close();
  });

  it("enforces the owner policy on the end-user scope through every tool", async () => {
    const asAlice = await connectClient(url, endUserHeaders(dev.clientKey, alice.sessionToken));
    const asBob = await connectClient(url, endUserHeaders(dev.clientKey, bob.sessionToken));

    const mine = resultJson(
      await asAlice.callTool({
        name: "recipes_insert",
        arguments: vectorValues({ title: "Alice's pie", embedding: [1, 0, 0] }),
      }),
    );
    expect(mine.owner_id).toBe(alice.userId);

    // Alice sees only her row (the developer's rows are not hers); Bob sees nothing of hers.
    const aliceList = resultJson(await asAlice.callTool({ name: "recipes_list", arguments: {} }));
    expect(aliceList.rows.map((r: { id: string }) => r.id)).toEqual([mine.id]);
    const bobFind = resultJson(
      await asBob.callTool({ name: "recipes_find", arguments: { where: { id: mine.id } } }),
    );
    expect(bobFind.rows).toEqual([]);
    const bobGet = await asBob.callTool({ name: "recipes_get", arguments: { id: mine.id } });
    expect(bobGet.isError).toBe(true);
    expect(resultJson(bobGet).error.code).toBe("not_found");
    const bobUpdate = await asBob.callTool({
      name: "recipes_update",
      arguments: { id: mine.id, patch: { title: "x" } },
    });
    expect(bobUpdate.isError).toBe(true);
    const bobDelete = await asBob.callTool({ name: "recipes_delete", arguments: { id: mine.id } });
    expect(bobDelete.isError).toBe(true);
    const bobCount = resultJson(
      await asBob.callTool({ name: "recipes_aggregate", arguments: { metrics: [{ fn: "count" }] } }),
    );
    expect(bobCount.rows).toEqual([{ count: 0 }]);

    // Her own row: hard delete refused on the end-user scope, soft delete allowed.
    const hard = await asAlice.callTool({ name: "recipes_delete", arguments: { id: mine.id, hard: true } });
    expect(hard.isError).toBe(true);
    const soft = resultJson(await asAlice.callTool({ name: "recipes_delete", arguments: { id: mine.id } }));
    expect(soft).toEqual({ id: mine.id, deleted: true, hard: false });
    await asAlice.close();
    await asBob.close();
  });

  it("enforces the owner policy on find_nearest: distances over the caller's own rows only", async (ctx) => {
    needsPgvector(ctx);
    const asAlice = await connectClient(url, endUserHeaders(dev.clientKey, alice.sessionToken));
    const asBob = await connectClient(url, endUserHeaders(dev.clientKey, bob.sessionToken));
    const mine = resultJson(
      await asAlice.callTool({
        name: "recipes_insert",
        arguments: { title: "Alice's tart", embedding: [1, 0, 0] },
      }),
    );
    const nearest = resultJson(
      await asBob.callTool({ name: "recipes_find_nearest", arguments: { vector: [1, 0, 0], limit: 5 } }),
    );
    expect(nearest.rows).toEqual([]);
    const aliceNearest = resultJson(
      await asAlice.callTool({ name: "recipes_find_nearest", arguments: { vector: [1, 0, 0] } }),
    );
    expect(aliceNearest.rows[0]).toMatchObject({ id: mine.id, distance: expect.any(Number) });
    expect(aliceNearest.rows[0].distance).toBeCloseTo(0, 5);
    await asAlice.close();
    await asBob.close();
  });

  it("answers whoami per scope", async () => {
    const asDev = await connectClient(url, devHeaders(dev));
    expect(resultJson(await asDev.callTool({ name: `${PREFIX}_whoami`, arguments: {} }))).toMatchObject({
      app: { id: dev.projectId, tool_prefix: PREFIX },
      scope: "developer",
    });
    await asDev.close();
    const asAlice = await connectClient(url, endUserHeaders(dev.clientKey, alice.sessionToken));
    expect(resultJson(await asAlice.callTool({ name: `${PREFIX}_whoami`, arguments: {} }))).toMatchObject({
      scope: "end_user",
      user: { id: alice.userId, email: alice.email },
    });
    const index = resultJson(await asAlice.callTool({ name: `${PREFIX}_list_collections`, arguments: {} }));
    expect(index.collections.map((c: { name: string }) => c.name)).toEqual(["recipes"]);
    expect(index.collections[0].tools.includes("recipes_find_nearest")).toBe(HAS_VECTOR);
    await asAlice.close();
  });

  it("reports bad arguments as tool errors an agent can act on, and unknown tools as -32602", async () => {
    const client = await connectClient(url, devHeaders(dev));
    const bad = await client.callTool({
      name: "recipes_insert",
      arguments: { title: "x", calories: "many", id: "y" },
    });
    expect(bad.isError).toBe(true);
    expect(resultJson(bad).error.code).toBe("invalid_input");
    await expect(client.callTool({ name: "audit_log_list", arguments: {} })).rejects.toSatisfy(
      (err: unknown) => err instanceof McpError && err.code === -32602,
    );
    await client.close();
  });
});

describe("app MCP configuration", () => {
  it("meters successful tool calls only", async () => {
    const { dev, url } = await setupApp();
    await expose(dev, { collections: ["recipes"] });
    const client = await connectClient(url, devHeaders(dev));
    await client.callTool({ name: "recipes_insert", arguments: { title: "ok" } });
    await client.callTool({ name: "recipes_list", arguments: {} });
    await client.callTool({ name: "recipes_insert", arguments: { nope: 1 } });
    await client.close();
    // Metering runs after the response (waitUntil).
    await vi.waitFor(async () => {
      const billing = await apiJson(`/v1/admin/projects/${dev.projectId}/billing`, { token: dev.token });
      expect(billing.body.usage.agent_tool_calls).toBe(2);
    });
  });

  it("honours the kill switch and the auth modes", async () => {
    const { dev, alice, url } = await setupApp();
    const user = endUserHeaders(dev.clientKey, alice.sessionToken);
    expect((await configure(dev, { enabled: false })).status).toBe(200);
    await expect(connectClient(url, devHeaders(dev))).rejects.toThrow(/403|disabled/);

    await configure(dev, { enabled: true, auth_mode: "client_only" });
    await expect(connectClient(url, devHeaders(dev))).rejects.toThrow(/403|client_only/);
    expect(await toolNames(url, user)).toContain(`${PREFIX}_whoami`);

    await configure(dev, { auth_mode: "developer_only" });
    await expect(connectClient(url, user)).rejects.toThrow(/403|developer_only/);
    expect(await toolNames(url, devHeaders(dev))).toContain(`${PREFIX}_whoami`);
  });

  it("serves the same surface on <slug>.mcp.amba.host/mcp", async () => {
    const { dev, alice, url } = await setupApp();
    await expose(dev, { collections: ["recipes"] });
    const slug = `app-${crypto.randomUUID().slice(0, 8)}`;
    expect((await configure(dev, { slug })).status).toBe(200);
    const hostUrl = `http://${slug}.mcp.amba.host/mcp`;
    const user = endUserHeaders(dev.clientKey, alice.sessionToken);
    const byHost = await toolNames(hostUrl, devHeaders(dev));
    expect(byHost).toEqual(await toolNames(url, devHeaders(dev)));
    expect(await toolNames(hostUrl, user)).toEqual(await toolNames(url, user));
    // Same auth (seed 004): the same end user and rows, the kill switch and the auth mode.
    const viaHost = await connectClient(hostUrl, user);
    const row = resultJson(
      await viaHost.callTool({ name: "recipes_insert", arguments: { title: "Host pie" } }),
    );
    expect(row.owner_id).toBe(alice.userId);
    await viaHost.close();
    const viaPath = await connectClient(url, user);
    const found = resultJson(await viaPath.callTool({ name: "recipes_get", arguments: { id: row.id } }));
    expect(found).toEqual(row);
    await viaPath.close();
    await configure(dev, { auth_mode: "client_only" });
    await expect(connectClient(hostUrl, devHeaders(dev))).rejects.toThrow(/403|client_only/);
    await configure(dev, { enabled: false });
    await expect(connectClient(hostUrl, user)).rejects.toThrow(/403|disabled/);
    expect((await api(hostUrl, { json: { jsonrpc: "2.0", id: 1, method: "tools/list" } })).status).toBe(401);
    const unknown = await api("http://nobody-here.mcp.amba.host/mcp", {
      headers: devHeaders(dev),
      json: { jsonrpc: "2.0", id: 1, method: "tools/list" },
    });
    expect(unknown.status).toBe(404);
  });

  it("refuses missing credentials with 401 JSON and GET with 405", async () => {
    const { url } = await setupApp();
    const anonymous = await apiJson(url, { json: { jsonrpc: "2.0", id: 1, method: "tools/list" } });
    expectError(anonymous, 401);
    const get = await api(url, { method: "GET" });
    expect(get.status).toBe(405);
  });

  it("turns an exposed function into <app>_fn_<name> on the end-user scope, through the one execution path", async () => {
    const { dev, alice, url } = await setupApp();
    const echo = inject("echoUrl");
    const deployed = await apiJson(`/v1/admin/projects/${dev.projectId}/functions/deploy`, {
      token: dev.token,
      json: {
        name: "send_welcome_email",
        url: `${echo}/welcome`,
        mcp: WELCOME_EMAIL_MCP,
      },
    });
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(201);
    await expose(dev, { functions: ["send_welcome_email"] });
    const tool = `${PREFIX}_fn_send_welcome_email`;
    expect(await toolNames(url, devHeaders(dev))).not.toContain(tool);

    const client = await connectClient(url, endUserHeaders(dev.clientKey, alice.sessionToken));
    const { tools } = await client.listTools();
    expect(tools.find((t) => t.name === tool)).toMatchObject({
      description: expect.stringContaining("Send the branded welcome email"),
      inputSchema: { required: ["user_id"] },
    });
    const called = await client.callTool({
      name: tool,
      arguments: { user_id: alice.userId, template: "short" },
    });
    expect(called.isError).toBe(false);
    const { status, body: echoed } = resultJson(called);
    expect(status).toBe(200);
    expect(echoed.body).toEqual({ user_id: alice.userId, template: "short" });
    expect(echoed.headers["x-amba-user-id"]).toBe(alice.userId);
    expect(echoed.headers["x-api-key"]).toBeUndefined();
    expect(echoed.headers.authorization).toBeUndefined();

    const invalid = await client.callTool({ name: tool, arguments: { template: "long" } });
    expect(invalid.isError).toBe(true);
    await client.close();

    // Live generation (seed 004): a redeploy without a schema is the generic {body?, query?} tool on
    // the next tools/list, described as such; promoting version 1 restores its typed input.
    const fnAdmin = `/v1/admin/projects/${dev.projectId}/functions`;
    const redeployed = await apiJson(`${fnAdmin}/deploy`, {
      token: dev.token,
      json: { name: "send_welcome_email", url: `${echo}/welcome` },
    });
    expect(redeployed.status).toBe(201);
    const fnTool = async () => {
      const c = await connectClient(url, endUserHeaders(dev.clientKey, alice.sessionToken));
      const found = (await c.listTools()).tools.find((t) => t.name === tool)!;
      await c.close();
      return found;
    };
    const generic = await fnTool();
    expect(Object.keys(generic.inputSchema.properties!).sort()).toEqual(["body", "query"]);
    expect(generic.inputSchema.required ?? []).toEqual([]);
    expect(generic.description).toMatch(/no input schema/);
    const promoted = await apiJson(`${fnAdmin}/send_welcome_email/promote`, {
      token: dev.token,
      json: { version: 1 },
    });
    expect(promoted.status).toBe(200);
    expect((await fnTool()).inputSchema).toMatchObject({ required: ["user_id"] });
  });
});

describe("app MCP protocol versions and caching", () => {
  const post = (url: string, headers: Record<string, string>, body: unknown, version?: string) =>
    apiJson(url, {
      headers: {
        ...headers,
        accept: "application/json, text/event-stream",
        ...(version ? { "mcp-protocol-version": version } : {}),
      },
      json: body,
    });

  it("negotiates every initialize version and answers the 2026-07-28 discover + per-request _meta", async () => {
    const { dev, url } = await setupApp();
    await expose(dev, { collections: ["recipes"] });
    const headers = devHeaders(dev);
    for (const version of ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]) {
      const init = await post(url, headers, {
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: version, capabilities: {}, clientInfo: { name: "t", version: "1" } },
      });
      expect(init.body.result.protocolVersion).toBe(version);
    }
    const meta = {
      "io.modelcontextprotocol/protocolVersion": "2026-07-28",
      "io.modelcontextprotocol/clientCapabilities": {},
    };
    const discover = await post(
      url,
      { ...headers, "mcp-method": "server/discover" },
      { jsonrpc: "2.0", id: 2, method: "server/discover", params: { _meta: meta } },
      "2026-07-28",
    );
    expect(discover.status).toBe(200);
    expect(discover.body.result.supportedVersions).toContain("2026-07-28");
    const list = await post(
      url,
      { ...headers, "mcp-method": "tools/list" },
      { jsonrpc: "2.0", id: 3, method: "tools/list", params: { _meta: meta } },
      "2026-07-28",
    );
    expect(list.body.result.tools.map((t: { name: string }) => t.name)).toContain("recipes_find");
    // Structured content only where the version has it.
    const call = (version: string) =>
      post(
        url,
        headers,
        { jsonrpc: "2.0", id: 4, method: "tools/call", params: { name: "recipes_list", arguments: {} } },
        version,
      );
    expect((await call("2025-03-26")).body.result.structuredContent).toBeUndefined();
    expect((await call("2025-06-18")).body.result.structuredContent).toEqual({ rows: [], next_cursor: null });
  });

  it("caches the generated surface in KV under the project's meta_rev", async () => {
    const { dev, url } = await setupApp();
    await expose(dev, { collections: ["recipes"] });
    await toolNames(url, devHeaders(dev));
    const project = await apiJson(`/v1/admin/projects/${dev.projectId}`, { token: dev.token });
    const rev = project.body.meta_rev;
    expect(rev).toEqual(expect.any(Number));
    // One value per project, its rev first (src/app-mcp/surface.ts).
    const key = `app-meta:v2:${dev.projectId}`;
    let stored: string | null = null;
    for (let i = 0; i < 20 && !stored; i++) {
      stored = await env.META_KV.get(key, "text");
      if (!stored) await new Promise((r) => setTimeout(r, 50));
    }
    const [storedRev, json] = [
      stored?.slice(0, stored.indexOf("\n")),
      stored?.slice(stored.indexOf("\n") + 1),
    ];
    expect(storedRev).toBe(String(rev));
    const cached = JSON.parse(json ?? "null") as { collections: { name: string }[] };
    expect(cached.collections.map((c) => c.name)).toEqual(["recipes"]);
  });
});
