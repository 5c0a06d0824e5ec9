/**
 * Third conformance pass over seed 004 and DESIGN.md: the statements the other suites assert only
 * loosely (an error status matched by a regex alternative, a stored list instead of the tools it
 * produces) or only below the HTTP surface. One developer and project of its own, its own client
 * address; the checklist is in docs/contract-audit.md ("third audit").
 */
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { beforeAll, describe, expect, inject, it, vi } from "vitest";
import { RECIPES_COLUMNS, WELCOME_EMAIL_MCP } from "../fixtures.ts";
import { connectClient, resultJson } from "./app-mcp/mcp-client.ts";
import {
  api,
  apiJson,
  endUserHeaders,
  expectError,
  INITIALIZE,
  mcpPostHeaders,
  type TestUser,
  uniqueEmail,
} from "./helpers.ts";
import { HAS_VECTOR, vectorColumns, vectorValues } from "./pgvector.ts";

const IP = { "cf-connecting-ip": "198.51.100.42" };
const PREFIX = "seed_app";

let token: string;
let projectId: string;
let clientKey: string;
let alice: TestUser;
let url: string;
const admin = (path = "") => `/v1/admin/projects/${projectId}${path}`;
const dev = () => ({ authorization: `Bearer ${token}` });
const asAlice = () => endUserHeaders(clientKey, alice.sessionToken);
const configure = (json: unknown) => apiJson(admin("/app-mcp/config"), { method: "PATCH", token, json });
const expose = (json: unknown) => apiJson(admin("/app-mcp/exposure"), { method: "PUT", token, json });

/** A raw MCP `initialize` POST with these credentials (status and body as a client sees them). */
function initialize(headers: Record<string, string>) {
  const { authorization: _, ...rest } = mcpPostHeaders("x");
  return apiJson(url, {
    headers: { ...rest, ...headers },
    json: INITIALIZE,
  });
}

const toolsOf = async (headers: Record<string, string>) => {
  const client = await connectClient(url, headers);
  const { tools } = await client.listTools();
  await client.close();
  return new Map(tools.map((t) => [t.name, t]));
};

beforeAll(async () => {
  const signup = await apiJson("/v1/developers/signup", {
    headers: IP,
    json: { email: uniqueEmail("seed-dev"), project_name: "Seed App" },
  });
  expect(signup.status, JSON.stringify(signup.body)).toBe(201);
  ({ token, client_key: clientKey } = signup.body);
  projectId = signup.body.project.id;
  url = `http://local/app/${projectId}/mcp`;
  const recipes = { name: "recipes", columns: RECIPES_COLUMNS.filter((c) => c.type !== "vector") };
  expect((await apiJson(admin("/collections"), { token, json: recipes })).status).toBe(201);
  expect((await expose({ collections: ["recipes"] })).status).toBe(200);
  const email = uniqueEmail("seed-user");
  const user = await apiJson("/v1/auth/signup", {
    apiKey: clientKey,
    headers: IP,
    json: { email, password: "correct horse battery" },
  });
  expect(user.status).toBe(201);
  alice = { userId: user.body.user.id, email, password: "x", sessionToken: user.body.session_token };
});

/** A platform-MCP tool call's JSON result (the developer's token). */
async function platform(name: string, args: Record<string, unknown>) {
  const client = await connectClient("http://local/mcp", dev());
  const result = await client.callTool({ name, arguments: args });
  await client.close();
  return { isError: result.isError, json: resultJson(result) };
}

/** `agent_tool_calls` as amba_billing_status reports it, once two reads half a second apart agree. */
async function settledAgentToolCalls(): Promise<number> {
  const read = async () => (await platform("amba_billing_status", { project_id: projectId })).json.usage;
  let last = JSON.stringify(await read());
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    const now = JSON.stringify(await read());
    if (now === last) return JSON.parse(now).agent_tool_calls ?? 0;
    last = now;
  }
}

describe("seed 004, strictly", () => {
  it("meters successful tool calls only, as amba_billing_status shows", async () => {
    // The first tool calls of this file's project (the set-up made none).
    const client = await connectClient(url, asAlice());
    await client.listTools();
    const good = await client.callTool({ name: "recipes_insert", arguments: { title: "Counted" } });
    expect(good.isError).toBe(false);
    const bad = await client.callTool({
      name: "recipes_insert",
      arguments: { id: crypto.randomUUID(), title: "x" },
    });
    expect(bad.isError).toBe(true);
    const missing = await client.callTool({ name: "recipes_get", arguments: { id: crypto.randomUUID() } });
    expect(missing.isError).toBe(true);
    await expect(client.callTool({ name: "nope_list", arguments: {} })).rejects.toBeInstanceOf(McpError);
    await client.close();
    expect((await configure({ auth_mode: "developer_only" })).status).toBe(200);
    const call = await api(url, {
      headers: { ...mcpPostHeaders(alice.sessionToken), "x-api-key": clientKey },
      json: { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "recipes_list", arguments: {} } },
    });
    expect(call.status).toBe(403);
    expect((await configure({ auth_mode: "all" })).status).toBe(200);
    await vi.waitFor(async () => expect(await settledAgentToolCalls()).toBe(1), { timeout: 10_000 });
  });

  it("answers the kill switch and each refused auth mode with 403 and a JSON error, the allowed scope with 200", async () => {
    const refused = async (headers: Record<string, string>) => {
      const res = await initialize(headers);
      expectError(res, 403);
    };
    const allowed = async (headers: Record<string, string>) =>
      expect((await initialize(headers)).status).toBe(200);
    await allowed(dev());
    await allowed(asAlice());

    expect((await configure({ enabled: false })).body).toMatchObject({ enabled: false });
    await refused(dev());
    await refused(asAlice());
    // The kill switch is the agent surface's: the app's own SDK routes keep serving its users.
    const sdk = await apiJson(`/v1/projects/${projectId}/collections/recipes/rows`, { headers: asAlice() });
    expect(sdk.status).toBe(200);

    expect((await configure({ enabled: true, auth_mode: "client_only" })).status).toBe(200);
    await refused(dev());
    await allowed(asAlice());

    expect((await configure({ auth_mode: "developer_only" })).status).toBe(200);
    await refused(asAlice());
    await allowed(dev());

    expect((await configure({ auth_mode: "all" })).body).toMatchObject({ enabled: true, auth_mode: "all" });
    await allowed(dev());
    await allowed(asAlice());
  });

  it("pages find from its first page with next_cursor, newest first, every row once", async () => {
    const client = await connectClient(url, asAlice());
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const row = await client.callTool({
        name: "recipes_insert",
        arguments: { title: `Pie ${i}`, calories: 10 * i },
      });
      ids.push(resultJson(row).id);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const args: Record<string, unknown> = { where: { title: { like: "Pie %" } }, limit: 2 };
      if (cursor) args.cursor = cursor;
      const page = resultJson(await client.callTool({ name: "recipes_find", arguments: args }));
      if (pages === 0) expect(page.next_cursor).toEqual(expect.any(String));
      seen.push(...page.rows.map((r: { id: string }) => r.id));
      cursor = page.next_cursor;
      pages++;
    } while (cursor);
    await client.close();
    expect(seen).toEqual([...ids].reverse());
    // DESIGN.md: ids are time-ordered uuids — later inserts sort later.
    expect([...ids].sort()).toEqual(ids);
    expect(pages).toBe(3);
  });

  it("hides every collection tool on the next tools/list when the collections list is []", async () => {
    expect([...(await toolsOf(dev())).keys()]).toContain("recipes_find");
    expect((await expose({ collections: [] })).body).toEqual({ collections: [], functions: [] });
    expect([...(await toolsOf(dev())).keys()]).toEqual([`${PREFIX}_list_collections`, `${PREFIX}_whoami`]);
    expect([...(await toolsOf(asAlice())).keys()]).toEqual([
      `${PREFIX}_list_collections`,
      `${PREFIX}_whoami`,
    ]);
    expect((await expose({ collections: ["recipes"] })).status).toBe(200);
    expect([...(await toolsOf(dev())).keys()]).toContain("recipes_find");
  });

  it("passes a schema-less function tool's query and body to the function, on the end-user scope only", async () => {
    const echo = inject("echoUrl");
    const deployed = await apiJson(admin("/functions/deploy"), {
      token,
      json: { name: "lookup", url: `${echo}/lookup` },
    });
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(201);
    expect((await expose({ functions: ["lookup"] })).status).toBe(200);
    const tool = `${PREFIX}_fn_lookup`;

    const listed = (await toolsOf(asAlice())).get(tool)!;
    expect(Object.keys(listed.inputSchema.properties!).sort()).toEqual(["body", "query"]);
    expect(listed.inputSchema.required ?? []).toEqual([]);
    expect(listed.description).toMatch(/no input schema/i);
    const client = await connectClient(url, asAlice());
    const called = await client.callTool({ name: tool, arguments: { query: { q: "cake" }, body: { n: 1 } } });
    expect(called.isError, JSON.stringify(called)).toBe(false);
    expect(resultJson(called)).toMatchObject({ status: 200, body: { query: { q: "cake" }, body: { n: 1 } } });
    await client.close();

    // The developer scope has no function tools: not listed, and a call is an unknown tool.
    expect((await toolsOf(dev())).has(tool)).toBe(false);
    const asDev = await connectClient(url, dev());
    await expect(asDev.callTool({ name: tool, arguments: {} })).rejects.toSatisfy(
      (err: unknown) => err instanceof McpError && err.code === -32602,
    );
    await asDev.close();
    expect((await expose({ functions: [] })).status).toBe(200);
  });

  it("rejects an input_schema outside the subset at deploy time, over REST and the platform MCP alike", async () => {
    const cases: [string, unknown][] = [
      [
        "mcp.input_schema.properties.when.format",
        { type: "object", properties: { when: { type: "string", format: "date" } } },
      ],
      ["mcp.input_schema.properties.x.type", { type: "object", properties: { x: { type: "null" } } }],
      ["mcp.input_schema.anyOf", { type: "object", anyOf: [] }],
      ["mcp.input_schema.type", { type: "array" }],
    ];
    for (const [path, input_schema] of cases) {
      const mcp = { description: "x", input_schema };
      const res = await apiJson(admin("/functions/deploy"), {
        token,
        json: { name: "strict", url: "https://x.example", mcp },
      });
      expectError(res, 400, path);
      const viaMcp = await platform("amba_functions_deploy", {
        project_id: projectId,
        name: "strict",
        url: "https://x.example",
        mcp,
      });
      expect(viaMcp.isError).toBe(true);
      expect(viaMcp.json.error.message).toContain(path);
    }
    expectError(await apiJson(admin("/functions/strict/versions"), { token }), 404);
    // The seed's own schema (with `description` and `enum`) is inside the subset.
    const seed = await apiJson(admin("/functions/deploy"), {
      token,
      json: { name: "send_welcome_email", url: "https://x.example", mcp: WELCOME_EMAIL_MCP },
    });
    expect(seed.status, JSON.stringify(seed.body)).toBe(201);
  });

  it("forgets a dropped collection's exposure: a new collection of that name starts hidden", async () => {
    const scratch = { name: "scratch", columns: [{ name: "note", type: "text" }] };
    expect((await apiJson(admin("/collections"), { token, json: scratch })).status).toBe(201);
    expect((await expose({ collections: ["recipes", "scratch"] })).status).toBe(200);
    expect((await toolsOf(dev())).has("scratch_list")).toBe(true);
    const dropped = await apiJson(admin("/collections/scratch"), { method: "DELETE", token });
    expect(dropped.status).toBe(200);
    expect((await apiJson(admin("/app-mcp/exposure"), { token })).body.collections).toEqual(["recipes"]);
    expect((await toolsOf(dev())).has("scratch_list")).toBe(false);
    expect((await apiJson(admin("/collections"), { token, json: scratch })).status).toBe(201);
    expect((await toolsOf(dev())).has("scratch_list")).toBe(false);
  });

  it("merge-patches a row column by column: a json column's value is replaced whole, null clears", async () => {
    const docs = {
      name: "docs",
      columns: [
        { name: "title", type: "text" },
        { name: "meta", type: "json" },
      ],
    };
    expect((await apiJson(admin("/collections"), { token, json: docs })).status).toBe(201);
    expect((await expose({ collections: ["recipes", "docs"] })).status).toBe(200);
    const client = await connectClient(url, asAlice());
    const row = resultJson(
      await client.callTool({ name: "docs_insert", arguments: { title: "a", meta: { keep: 1, drop: 2 } } }),
    );
    const patched = resultJson(
      await client.callTool({ name: "docs_update", arguments: { id: row.id, patch: { meta: { keep: 3 } } } }),
    );
    expect(patched).toMatchObject({ id: row.id, title: "a", meta: { keep: 3 } });
    expect(patched.meta).toEqual({ keep: 3 });
    const cleared = resultJson(
      await client.callTool({ name: "docs_update", arguments: { id: row.id, patch: { title: null } } }),
    );
    expect(cleared).toMatchObject({ title: null, meta: { keep: 3 } });
    await client.close();
  });

  it("round-trips every column type of the data model, typed in the insert schema and filterable in find", async () => {
    const types = [
      ["text", "t", "string"],
      ["integer", 7, "integer"],
      ["bigint", "9007199254740993", undefined],
      ["number", 1.5, "number"],
      ["boolean", true, "boolean"],
      ["timestamp", "2026-01-02T03:04:05.678Z", "string"],
      ["date", "2026-01-02", "string"],
      ["json", { a: [1, null, "x"] }, undefined],
      ["uuid", crypto.randomUUID(), "string"],
      ["text[]", ["a", "b"], "array"],
      ["integer[]", [1, 2], "array"],
      ["bigint[]", ["9007199254740993"], "array"],
      ["number[]", [0.5], "array"],
      ["boolean[]", [false, true], "array"],
      ["timestamp[]", ["2026-01-02T03:04:05.678Z"], "array"],
      ["date[]", ["2026-01-02"], "array"],
      ["uuid[]", [crypto.randomUUID()], "array"],
    ] as const;
    const column = (type: string) => `c_${type.replace("[]", "_arr")}`;
    const every = { name: "every", columns: types.map(([type]) => ({ name: column(type), type })) };
    const created = await apiJson(admin("/collections"), { token, json: every });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect((await expose({ collections: ["recipes", "every"] })).status).toBe(200);
    const insert = (await toolsOf(asAlice())).get("every_insert")!.inputSchema.properties!;
    for (const [type, , json] of types) {
      if (json) expect((insert[column(type)] as { type?: string }).type, type).toBe(json);
    }
    const values = Object.fromEntries(types.map(([type, value]) => [column(type), value]));
    const client = await connectClient(url, asAlice());
    const row = resultJson(await client.callTool({ name: "every_insert", arguments: values }));
    // Timestamps come back as RFC 3339 in UTC (Postgres's `+00:00` form): the same instant.
    const instant = expect.stringMatching(/^2026-01-02T03:04:05\.678(Z|\+00:00)$/);
    expect(row).toMatchObject({ ...values, c_timestamp: instant, c_timestamp_arr: [instant] });
    expect(resultJson(await client.callTool({ name: "every_get", arguments: { id: row.id } }))).toEqual(row);
    const found = resultJson(
      await client.callTool({
        name: "every_find",
        arguments: {
          where: {
            c_date: { gte: "2026-01-01" },
            c_timestamp: { lt: "2026-01-03T00:00:00Z" },
            c_bigint: "9007199254740993",
            c_boolean: true,
            c_uuid_arr: { contains: values.c_uuid_arr },
            c_date_arr: { contains: "2026-01-02" },
          },
        },
      }),
    );
    expect(found.rows.map((r: { id: string }) => r.id)).toEqual([row.id]);
    // Integers beyond 2^53 stay exact (as decimal text) in arrays and aggregates too.
    const big = "9007199254740993";
    expect(row.c_bigint_arr).toEqual([big]);
    const agg = resultJson(
      await client.callTool({
        name: "every_aggregate",
        arguments: {
          metrics: [
            { fn: "min", column: "c_bigint" },
            { fn: "sum", column: "c_bigint" },
          ],
          group_by: ["c_bigint"],
        },
      }),
    );
    expect(agg.rows).toEqual([{ min_c_bigint: big, sum_c_bigint: big, c_bigint: big }]);
    // min / max over every column the schema offers them for (Postgres itself has none for
    // boolean and uuid): a second row makes them differ.
    const other = resultJson(
      await client.callTool({
        name: "every_insert",
        arguments: { c_boolean: false, c_uuid: "00000000-0000-4000-8000-000000000000", c_text: "s" },
      }),
    );
    const offered = ["id", "owner_id", "c_boolean", "c_uuid", "c_text", "c_date", "created_at"];
    const extreme = async (fn: "min" | "max") => {
      const result = await client.callTool({
        name: "every_aggregate",
        arguments: { metrics: offered.map((column) => ({ fn, column })) },
      });
      expect(result.isError, JSON.stringify(result.content)).toBe(false);
      return resultJson(result).rows[0];
    };
    const [first, last] = [row.id, other.id].sort();
    expect(await extreme("min")).toMatchObject({
      min_id: first,
      min_owner_id: alice.userId,
      min_c_boolean: false,
      min_c_uuid: "00000000-0000-4000-8000-000000000000",
      min_c_text: "s",
      min_c_date: "2026-01-02",
    });
    expect(await extreme("max")).toMatchObject({
      max_id: last,
      max_c_boolean: true,
      max_c_uuid: values.c_uuid,
      max_c_text: "t",
    });
    await client.close();
  });

  it("keeps a soft-deleted row out of every read: list, find, aggregate, find_nearest and REST", async () => {
    const pts = {
      name: "pts",
      columns: vectorColumns([
        { name: "label", type: "text" },
        { name: "embedding", type: "vector", dimensions: 2 },
      ]),
    };
    expect((await apiJson(admin("/collections"), { token, json: pts })).status).toBe(201);
    expect((await expose({ collections: ["recipes", "pts"] })).status).toBe(200);
    const client = await connectClient(url, asAlice());
    const call = async (name: string, args: Record<string, unknown>) => {
      const result = await client.callTool({ name, arguments: args });
      expect(result.isError, JSON.stringify(result.content)).toBe(false);
      return resultJson(result);
    };
    const kept = await call("pts_insert", vectorValues({ label: "kept", embedding: [1, 0] }));
    const gone = await call("pts_insert", vectorValues({ label: "gone", embedding: [0, 1] }));
    expect(await call("pts_delete", { id: gone.id })).toEqual({ id: gone.id, deleted: true, hard: false });
    const only = [kept.id];
    expect((await call("pts_list", {})).rows.map((r: { id: string }) => r.id)).toEqual(only);
    expect((await call("pts_find", { where: { label: "gone" } })).rows).toEqual([]);
    expect((await call("pts_aggregate", { metrics: [{ fn: "count" }] })).rows).toEqual([{ count: 1 }]);
    if (HAS_VECTOR) {
      const near = await call("pts_find_nearest", { vector: [0, 1], limit: 5 });
      expect(near.rows.map((r: { id: string }) => r.id)).toEqual(only);
    }
    await client.close();
    const rest = `/v1/projects/${projectId}/collections/pts`;
    const found = await apiJson(`${rest}/find`, { headers: asAlice(), json: { where: { id: gone.id } } });
    expect(found.body).toEqual({ rows: [], next_cursor: null });
    expectError(await apiJson(`${rest}/rows/${gone.id}`, { headers: asAlice() }), 404);
  });

  it("accepts every operator, order and group_by its tools advertise, on every column type", async () => {
    // The `every` collection of the round-trip case: one column of each type, and two rows of Alice's.
    expect((await expose({ collections: ["every"] })).status).toBe(200);
    const tools = await toolsOf(asAlice());
    type Json = {
      type?: string;
      format?: string;
      items?: Json;
      anyOf?: Json[];
      properties?: Record<string, Json>;
      enum?: string[];
    };
    const sample = (schema: Json): unknown => {
      if (schema.anyOf) return sample(schema.anyOf[0]!);
      if (schema.enum) return schema.enum[0];
      switch (schema.type) {
        case "string":
          return schema.format === "date-time"
            ? "2026-01-02T03:04:05Z"
            : schema.format === "date"
              ? "2026-01-02"
              : schema.format === "uuid"
                ? crypto.randomUUID()
                : "x%";
        case "integer":
          return 1;
        case "number":
          return 1.5;
        case "boolean":
          return true;
        case "array":
          return [sample(schema.items!)];
        default:
          return { a: 1 };
      }
    };
    const find = tools.get("every_find")!.inputSchema.properties as Record<string, Json>;
    const client = await connectClient(url, asAlice());
    const ok = async (name: string, args: Record<string, unknown>) => {
      const result = await client.callTool({ name, arguments: args });
      expect(result.isError, `${name} ${JSON.stringify(args)} → ${JSON.stringify(result.content)}`).toBe(
        false,
      );
      return resultJson(result);
    };
    const filters = Object.entries(find.where!.properties!)
      .filter(([column]) => !["and", "or", "not"].includes(column))
      .flatMap(([column, filter]) =>
        Object.entries((filter.anyOf?.find((s) => s.type === "object") ?? filter).properties ?? {}).map(
          ([op, operand]) => ({ [column]: { [op]: sample(operand) } }),
        ),
      );
    await Promise.all(filters.map((where) => ok("every_find", { where, limit: 1 })));
    await Promise.all(
      find.order!.enum!.map(async (order) => {
        const page = await ok("every_find", { order, limit: 1 });
        if (page.next_cursor) await ok("every_find", { order, limit: 1, cursor: page.next_cursor });
      }),
    );
    const aggregate = tools.get("every_aggregate")!.inputSchema.properties as Record<string, Json>;
    await Promise.all(
      aggregate.group_by!.items!.enum!.map((column) =>
        ok("every_aggregate", { metrics: [{ fn: "count" }], group_by: [column] }),
      ),
    );
    await client.close();
    expect(filters.length).toBeGreaterThan(60);
  });
});
