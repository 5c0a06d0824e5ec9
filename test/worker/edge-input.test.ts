/**
 * Issue 8, findings 2–6 and 9–11, one regression test each (each failed before the fix): input
 * limits before validation and the database, bounded batches charged per tool call, RFC 6750 401s,
 * Origin checks with CORS, and capabilities that declare only what is implemented.
 */

import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { projectSchemaName } from "../../src/data/sql.ts";
import { connectClient } from "./app-mcp/mcp-client.ts";
import {
  api,
  apiJson,
  endUserHeaders,
  INITIALIZE,
  signupDeveloper,
  signupUser,
  type TestDeveloper,
  testDb,
} from "./helpers.ts";
import { vectorColumns } from "./pgvector.ts";

const NOTES = {
  name: "notes",
  columns: vectorColumns([
    { name: "title", type: "text" },
    { name: "score", type: "number" },
    { name: "doc", type: "json" },
    { name: "embedding", type: "vector", dimensions: 3 },
  ]),
  access: { read: "public", write: "owner" },
};

/** POST raw JSON text (so `1e999` reaches the Worker as written). */
function postRaw(path: string, text: string, headers: Record<string, string>, method = "POST") {
  return api(path, { method, body: text, headers: { "content-type": "application/json", ...headers } });
}

/** One JSON-RPC message (or batch) to an MCP endpoint. */
async function mcp(url: string, headers: Record<string, string>, body: unknown) {
  const res = await api(url, {
    method: "POST",
    body: typeof body === "string" ? body : JSON.stringify(body),
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...headers,
    },
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
}

const nested = (depth: number, leaf = "0") => `${"[".repeat(depth)}${leaf}${"]".repeat(depth)}`;
const nots = (depth: number) => `${'{"not":'.repeat(depth)}{"title":"x"}${"}".repeat(depth)}`;

async function rowCount(projectId: string, table: string): Promise<number> {
  const result = await testDb().execute(
    sql.raw(`select count(*)::int as n from "${projectSchemaName(projectId)}"."${table}"`),
  );
  return (result.rows[0] as { n: number }).n;
}

describe("issue 8: input limits, batches, 401s, Origin/CORS, capabilities", () => {
  let dev: TestDeveloper;
  let rows: string;
  let appUrl: string;
  let auth: Record<string, string>;

  beforeAll(async () => {
    dev = await signupDeveloper();
    auth = { authorization: `Bearer ${dev.token}` };
    const created = await apiJson(`/v1/admin/projects/${dev.projectId}/collections`, {
      token: dev.token,
      json: NOTES,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const exposed = await apiJson(`/v1/admin/projects/${dev.projectId}/app-mcp/exposure`, {
      method: "PUT",
      token: dev.token,
      json: { collections: ["notes"] },
    });
    expect(exposed.status).toBe(200);
    rows = `/v1/projects/${dev.projectId}/collections/notes`;
    appUrl = `/app/${dev.projectId}/mcp`;
  });

  it("finding 2: a json value nested 10,000 deep is a 400 naming the limit, and the database answers next", async () => {
    const before = await rowCount(dev.projectId, "notes");
    const res = await postRaw(`${rows}/rows`, `{"doc":${nested(10_000)}}`, auth);
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { message: string } };
    expect(body.error.message).toMatch(/^body\.doc(\.0)+.*nested deeper than 32 levels/);
    const ok = await apiJson(`${rows}/rows`, {
      token: dev.token,
      json: { title: "after", doc: { a: [1, 2] } },
    });
    expect(ok.status).toBe(201);
    expect(await rowCount(dev.projectId, "notes")).toBe(before + 1);
    // The same over the app MCP: an isError result, nothing written.
    const call = await mcp(appUrl, auth, {
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "notes_insert", arguments: JSON.parse(`{"doc":${nested(5_000)}}`) },
    });
    expect(call.body.result.isError).toBe(true);
    expect(call.body.result.content[0].text).toContain("nested deeper than 32 levels");
    expect(await rowCount(dev.projectId, "notes")).toBe(before + 1);
  });

  it("finding 3: where nested 2,000 deep is a 400 / isError, and 10 deep names the where limit of 8", async () => {
    const deep = await postRaw(`${rows}/find`, `{"where":${nots(2_000)}}`, auth);
    expect(deep.status).toBe(400);
    const call = await mcp(appUrl, auth, {
      jsonrpc: "2.0",
      id: 2,
      method: "tools/call",
      params: { name: "notes_find", arguments: JSON.parse(`{"where":${nots(2_000)}}`) },
    });
    expect(call.body.error).toBeUndefined();
    expect(call.body.result.isError).toBe(true);
    const ten = await apiJson(`${rows}/find`, { token: dev.token, json: { where: JSON.parse(nots(10)) } });
    expect(ten.status).toBe(400);
    expect(ten.body.error.message).toContain("filters nest deeper than 8 levels");
    const eight = await apiJson(`${rows}/find`, { token: dev.token, json: { where: JSON.parse(nots(8)) } });
    expect(eight.status).toBe(200);
  });

  it("finding 4: 1e999 is refused as a 400 in insert, update, where, nearest and cursors", async () => {
    const before = await rowCount(dev.projectId, "notes");
    const insert = await postRaw(`${rows}/rows`, '{"title":"inf","score":1e999}', auth);
    expect(insert.status).toBe(400);
    expect(((await insert.json()) as { error: { message: string } }).error.message).toContain(
      "body.score: numbers must be finite",
    );
    expect(await rowCount(dev.projectId, "notes")).toBe(before);
    const row = await apiJson(`${rows}/rows`, { token: dev.token, json: { title: "finite", score: 1.5 } });
    const update = await postRaw(`${rows}/rows/${row.body.id}`, '{"score":-1e999}', auth, "PATCH");
    expect(update.status).toBe(400);
    const where = await postRaw(`${rows}/find`, '{"where":{"score":{"gt":1e999}}}', auth);
    expect(where.status).toBe(400);
    const aggregate = await postRaw(
      `${rows}/aggregate`,
      '{"metrics":[{"fn":"sum","column":"score"}],"where":{"score":{"lt":1e999}}}',
      auth,
    );
    expect(aggregate.status).toBe(400);
    const nearest = await postRaw(`${rows}/nearest`, '{"vector":[1e999,0,0]}', auth);
    expect(nearest.status).toBe(400);
    const forged = btoa(JSON.stringify(["created_at desc", 0, crypto.randomUUID()]).replace("0", "1e999"))
      .replace(/\+/g, "-")
      .replace(/\//g, "_")
      .replace(/=+$/, "");
    const cursor = await apiJson(`${rows}/rows?cursor=${forged}`, { token: dev.token });
    expect(cursor.status).toBe(400);
  });

  it("finding 6: NUL and control characters in names are 400s, not 500s", async () => {
    const invoke = await apiJson(`/v1/projects/${dev.projectId}/functions/a%00b/invoke`, {
      ...endUserHeaders(dev.clientKey, "x"),
      json: {},
    });
    expect(invoke.status).toBe(400);
    expect(invoke.body.error.message).toContain("control characters");
    const exposure = await apiJson(`/v1/admin/projects/${dev.projectId}/app-mcp/exposure`, {
      method: "PUT",
      token: dev.token,
      json: { functions: ["a\u0000b"] },
    });
    expect(exposure.status).toBe(400);
    const collection = await apiJson(`/v1/admin/projects/${dev.projectId}/collections`, {
      token: dev.token,
      json: { name: "c\u0000d", columns: [{ name: "x", type: "text" }] },
    });
    expect(collection.status).toBe(400);
    const column = await apiJson(`${rows}/rows`, { token: dev.token, json: { "ti\u0001tle": "x" } });
    expect(column.status).toBe(400);
    const path = await apiJson(`/v1/projects/${dev.projectId}/collections/no%0Ates/rows`, {
      token: dev.token,
    });
    expect(path.status).toBe(400);
  });

  it("finding 5: a batch of 101 is one -32600 and nothing runs; 100 run, each charged to the rate limit", async () => {
    const insert = (id: number) => ({
      jsonrpc: "2.0",
      id,
      method: "tools/call",
      params: { name: "notes_insert", arguments: { title: `b${id}` } },
    });
    const before = await rowCount(dev.projectId, "notes");
    const tooMany = await mcp(
      appUrl,
      auth,
      Array.from({ length: 101 }, (_, i) => insert(i)),
    );
    expect(tooMany.body).toMatchObject({ id: null, error: { code: -32600 } });
    expect(tooMany.body.error.message).toContain("at most 100");
    expect(await rowCount(dev.projectId, "notes")).toBe(before);

    const ten = await mcp(
      appUrl,
      auth,
      Array.from({ length: 10 }, (_, i) => insert(i)),
    );
    expect(ten.body.map((r: { id: number }) => r.id)).toEqual([...Array(10).keys()]);
    expect(await rowCount(dev.projectId, "notes")).toBe(before + 10);

    // The tests' limiter allows 600 per minute per caller (vitest.config.ts; 6,000 in wrangler.toml):
    // at most 7 batches of 100 calls exhaust it, which 10 HTTP requests charged once each never
    // would. The calls fail validation (no database work).
    const other = await signupDeveloper();
    const url = `/app/${other.projectId}/mcp`;
    const headers = { authorization: `Bearer ${other.token}` };
    const call = (id: number) => ({
      jsonrpc: "2.0",
      id,
      method: "tools/call",
      params: { name: "my_first_project_whoami", arguments: { unexpected: id } },
    });
    const texts: string[] = [];
    for (let batch = 0; batch < 10 && !texts.some((t) => t.includes("rate_limited")); batch++) {
      const res = await mcp(
        url,
        headers,
        Array.from({ length: 100 }, (_, i) => call(batch * 100 + i)),
      );
      for (const r of res.body) texts.push(r.result.content[0].text);
    }
    expect(texts.filter((t) => t.includes("rate_limited")).length).toBeGreaterThan(0);
  }, 60_000);

  it("finding 9: both MCP endpoints answer 401 with an RFC 6750 WWW-Authenticate", async () => {
    const wrong = await mcp(
      appUrl,
      { authorization: "Bearer amba_dev_nope" },
      { jsonrpc: "2.0", id: 1, method: "ping" },
    );
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get("www-authenticate")).toBe(
      `Bearer realm="amba", resource_metadata="https://mcp.amba.dev/.well-known/oauth-protected-resource${appUrl}", error="invalid_token", error_description="invalid developer token"`,
    );
    expect(wrong.body.error.message).toBe("invalid developer token");
    const none = await mcp(appUrl, {}, { jsonrpc: "2.0", id: 1, method: "ping" });
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toBe(
      `Bearer realm="amba", resource_metadata="https://mcp.amba.dev/.well-known/oauth-protected-resource${appUrl}"`,
    );
    const platform = await mcp(
      "/mcp",
      { authorization: "Bearer amba_dev_nope" },
      { jsonrpc: "2.0", id: 1, method: "ping" },
    );
    expect(platform.status).toBe(401);
    expect(platform.headers.get("www-authenticate")).toMatch(
      /^Bearer realm="amba", resource_metadata="[^"]+", error="invalid_token", error_description="[^"]+"$/,
    );
  });

  it("finding 9: the official SDK client shows the server's reason for a wrong token", async () => {
    const attempt = connectClient(`http://local${appUrl}`, { authorization: "Bearer amba_dev_wrong" });
    await expect(attempt).rejects.toThrow(/invalid developer token/);
  });

  describe("finding 10: Origin and CORS", () => {
    const config = (json: unknown) =>
      apiJson(`/v1/admin/projects/${dev.projectId}/app-mcp/config`, {
        method: "PATCH",
        token: dev.token,
        json,
      });
    const ping = { jsonrpc: "2.0", id: 1, method: "ping" };

    it("stores validated allowed_origins and returns them", async () => {
      for (const bad of [
        ["https://app.example.com/path"],
        ["ftp://x.example"],
        ["app.example.com"],
        ["https://A.example.com"],
      ]) {
        expect((await config({ allowed_origins: bad })).status, JSON.stringify(bad)).toBe(400);
      }
      const tooMany = Array.from({ length: 21 }, (_, i) => `https://a${i}.example.com`);
      expect((await config({ allowed_origins: tooMany })).status).toBe(400);
      const ok = await config({ allowed_origins: ["https://app.example.com", "http://localhost:5173"] });
      expect(ok.status).toBe(200);
      expect(ok.body.allowed_origins).toEqual(["https://app.example.com", "http://localhost:5173"]);
      const read = await apiJson(`/v1/admin/projects/${dev.projectId}/app-mcp/config`, { token: dev.token });
      expect(read.body.allowed_origins).toEqual(["https://app.example.com", "http://localhost:5173"]);
    });

    it("refuses a foreign Origin with 403 and no CORS headers; serves a listed one with CORS", async () => {
      await config({ allowed_origins: ["https://app.example.com"] });
      const evil = await mcp(appUrl, { ...auth, origin: "https://evil.example" }, ping);
      expect(evil.status).toBe(403);
      expect(evil.body.error.code).toBe("forbidden");
      expect(evil.headers.get("access-control-allow-origin")).toBeNull();
      const good = await mcp(appUrl, { ...auth, origin: "https://app.example.com" }, ping);
      expect(good.status).toBe(200);
      expect(good.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
      expect(good.headers.get("vary")).toContain("Origin");
      const noOrigin = await mcp(appUrl, auth, ping);
      expect(noOrigin.status).toBe(200);
      // Errors carry CORS too, so the page can read them.
      const unauth = await mcp(appUrl, { origin: "https://app.example.com" }, ping);
      expect(unauth.status).toBe(401);
      expect(unauth.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
    });

    it("answers preflights without credentials for listed origins only", async () => {
      const preflight = (url: string, origin: string) =>
        api(url, {
          method: "OPTIONS",
          headers: {
            origin,
            "access-control-request-method": "POST",
            "access-control-request-headers": "authorization",
          },
        });
      const ok = await preflight(appUrl, "https://app.example.com");
      expect(ok.status).toBe(204);
      expect(ok.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
      expect(ok.headers.get("access-control-allow-methods")).toBe("POST, GET, DELETE, OPTIONS");
      expect(ok.headers.get("access-control-allow-headers")).toContain("mcp-protocol-version");
      expect(ok.headers.get("access-control-expose-headers")).toContain("www-authenticate");
      const evil = await preflight(appUrl, "https://evil.example");
      expect(evil.status).toBe(403);
      expect(evil.headers.get("access-control-allow-origin")).toBeNull();
      const unknown = await preflight(`/app/${crypto.randomUUID()}/mcp`, "https://app.example.com");
      expect(unknown.status).toBe(403);
      expect(unknown.headers.get("access-control-allow-origin")).toBeNull();
    });

    it("applies the app's origins on its hostname address too, and the platform's on /mcp preflights", async () => {
      const slug = `cors-${crypto.randomUUID().slice(0, 8)}`;
      expect((await config({ slug, allowed_origins: ["https://app.example.com"] })).status).toBe(200);
      const preflight = (url: string, origin: string) =>
        api(url, { method: "OPTIONS", headers: { origin, "access-control-request-method": "POST" } });
      const hostUrl = `http://${slug}.mcp.amba.host/mcp`;
      expect((await preflight(hostUrl, "https://app.example.com")).status).toBe(204);
      expect((await preflight(hostUrl, "https://evil.example")).status).toBe(403);
      const served = await mcp(hostUrl, { ...auth, origin: "https://app.example.com" }, ping);
      expect(served.status).toBe(200);
      expect(served.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
      const platform = await preflight("/mcp", "https://mcp.amba.dev");
      expect(platform.status).toBe(204);
      expect(platform.headers.get("access-control-allow-origin")).toBe("https://mcp.amba.dev");
      expect((await preflight("/mcp", "https://app.example.com")).status).toBe(403);
    });

    it("lets only the platform's own origin (and loopback in local dev) call /mcp", async () => {
      expect((await mcp("/mcp", { origin: "https://evil.example" }, INITIALIZE)).status).toBe(403);
      expect((await mcp("/mcp", { origin: "http://localhost:5173" }, INITIALIZE)).status).toBe(403);
      const own = await mcp("/mcp", { origin: "https://mcp.amba.dev" }, INITIALIZE);
      expect(own.status).toBe(200);
      expect(own.headers.get("access-control-allow-origin")).toBe("https://mcp.amba.dev");
      const local = await mcp("http://127.0.0.1:8787/mcp", { origin: "http://localhost:6274" }, INITIALIZE);
      expect(local.status).toBe(200);
      const rebound = await mcp(
        "http://evil.example:8787/mcp",
        { origin: "http://evil.example:8787" },
        INITIALIZE,
      );
      expect(rebound.status).toBe(403);
    });
  });

  it("finding 11: initialize declares only tools, and the undeclared methods are -32601", async () => {
    const user = await signupUser(dev.projectId, dev.clientKey);
    for (const [url, headers] of [
      [appUrl, auth],
      [appUrl, endUserHeaders(dev.clientKey, user.sessionToken)],
      ["/mcp", {}],
    ] as const) {
      const res = await mcp(url, headers, INITIALIZE);
      expect(res.body.result.capabilities).toEqual({ tools: {} });
      for (const method of ["resources/list", "resources/read", "prompts/list", "prompts/get"]) {
        const other = await mcp(url, headers, { jsonrpc: "2.0", id: 2, method, params: {} });
        expect(other.body.error.code, method).toBe(-32601);
      }
    }
  });
});
