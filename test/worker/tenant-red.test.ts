/**
 * Red team of the multi-tenant edge (branch redteam-tenant): one tenant's own developer, project,
 * client key and end users trying to reach another tenant, make the service answer 500, or pass the
 * platform's pages off under a name of their choosing. One regression test per hole found (each
 * failed before its fix); the attacks that were already blocked are in the branch's report and in
 * tenants.test.ts, edge-red.test.ts, hostile.test.ts and the other audit files, not repeated here.
 */
import { beforeAll, describe, expect, it, vi } from "vitest";
import { MAX_REQUEST_ANSWER_CHARS } from "../../src/answer-budget.ts";
import { createCollection, type DataProject, data, dataProject, insert } from "./data/fixtures.ts";
import {
  api,
  apiJson,
  expectError,
  freshIp,
  INITIALIZE,
  mcpPostHeaders,
  mcpToolCall,
  requestRoundTrips,
  signupDeveloper,
  withinOneRateLimitWindow,
} from "./helpers.ts";
import { needsPgvector } from "./pgvector.ts";

describe("tenant red team", () => {
  let p: DataProject;
  beforeAll(async () => {
    p = await dataProject();
  });

  it("serves a collection whose column is named like a row query's alias (a column `r` was a 500 on every read and write)", async () => {
    // The row statements alias the table and the lateral row: a bare `r` next to a column `r` was
    // "column reference is ambiguous" (42702) — every insert, get, list, find and update a 500.
    const names = ["r", "t", "w", "u", "e", "n"];
    await createCollection(p, {
      name: "aliases",
      columns: names.map((name) => ({ name, type: "text" })),
      access: { read: "owner", write: "owner" },
    });
    const values = Object.fromEntries(names.map((name) => [name, `value of ${name}`]));
    const row = await insert(p, p.userA, "aliases", values);
    expect(row).toMatchObject(values);
    expect((await data(p, p.userA, "aliases", `rows/${row.id}`, { method: "GET" })).body).toMatchObject(
      values,
    );
    const listed = await data(p, p.userA, "aliases", "rows", { method: "GET" });
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    expect(listed.body.rows).toEqual([row]);
    const found = await data(p, p.userA, "aliases", "find", {
      json: { where: { r: "value of r", t: { like: "value%" } }, order: "r asc" },
    });
    expect(found.body.rows).toEqual([row]);
    const patched = await data(p, p.userA, "aliases", `rows/${row.id}`, {
      method: "PATCH",
      json: { r: "changed" },
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body.r).toBe("changed");
    const grouped = await data(p, p.userA, "aliases", "aggregate", {
      json: { metrics: [{ fn: "count" }, { fn: "max", column: "r" }], group_by: ["r"] },
    });
    expect(grouped.body).toEqual({ rows: [{ count: 1, max_r: "changed", r: "changed" }] });
    // Another user still sees nothing of it (the owner policy holds on the renamed alias).
    expect((await data(p, p.userB, "aliases", "rows", { method: "GET" })).body.rows).toEqual([]);
    // The app MCP runs the same statements.
    await apiJson(`/v1/admin/projects/${p.dev.projectId}/app-mcp/exposure`, {
      token: p.dev.token,
      method: "PUT",
      json: { collections: ["aliases"] },
    });
    const tool = await mcpToolCall(`/app/${p.dev.projectId}/mcp`, p.dev.token, "aliases_find", {
      where: { r: "changed" },
    });
    expect(tool.body.result.isError, JSON.stringify(tool.body)).toBe(false);
    expect(tool.body.result.structuredContent.rows).toHaveLength(1);
  });

  it("serves no platform page or API on a host under the app suffix that is not exactly <slug>.<suffix> (a trailing dot or a second label served the console and the admin API)", async () => {
    // `login.mcp.amba.host.` is the same DNS name as `login.mcp.amba.host` (fully qualified), and
    // `x.login.mcp.amba.host` sits under the suffix too: both named the platform's console, sign-in
    // and admin API — and `/mcp`, the platform MCP — under a label a tenant picked, where the
    // hostname check refuses them for `login.mcp.amba.host` itself (app-host.test.ts).
    for (const host of [
      "login.mcp.amba.host.",
      "LOGIN.mcp.amba.host..",
      "x.login.mcp.amba.host",
      "a.b.c.mcp.amba.host.",
    ]) {
      for (const [method, path] of [
        ["GET", "/console"],
        ["GET", "/docs"],
        ["GET", "/v1/admin/projects"],
        ["GET", "/authorize"],
        ["GET", "/.well-known/oauth-authorization-server"],
        ["POST", "/mcp"],
      ] as const) {
        const res = await api(`https://${host}${path}`, {
          method,
          token: p.dev.token,
          headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
          body: method === "POST" ? JSON.stringify(INITIALIZE) : undefined,
        });
        const text = await res.text();
        expect(res.status, `${host}${path}: ${text.slice(0, 200)}`).toBe(404);
        expectError({ status: res.status, body: JSON.parse(text) }, 404, "hostname");
      }
    }
    // The platform's own host still serves them.
    expect((await apiJson("/v1/admin/projects", { token: p.dev.token })).status).toBe(200);
  });

  it("bounds what one app-MCP request answers: a batch of 100 large reads held 100 answers of up to 8 MiB at once in an isolate every tenant shares", async () => {
    // Each database answer is capped (8 MiB, src/worker/db.ts), but a JSON-RPC batch ran up to 100
    // reads and kept every answer — its rows, their text and the response built from them — until
    // the last one: ≈ 100 × 8 MiB × 3 copies, past the isolate's 128 MB, so one tenant's request
    // failed every other tenant's requests in that isolate. Here 4 rows of ≈ 250 KB (≈ 1 MB a page)
    // read 12 times over one request: past the request's answer budget the calls are refused.
    const q = await dataProject();
    await createCollection(q, { name: "blobs", columns: [{ name: "body", type: "text" }] });
    await apiJson(`/v1/admin/projects/${q.dev.projectId}/app-mcp/exposure`, {
      token: q.dev.token,
      method: "PUT",
      json: { collections: ["blobs"] },
    });
    for (let i = 0; i < 4; i++) await insert(q, q.developer, "blobs", { body: String(i).repeat(250_000) });
    const batch = Array.from({ length: 12 }, (_, i) => ({
      jsonrpc: "2.0",
      id: i,
      method: "tools/call",
      params: { name: "blobs_list", arguments: { limit: 200 } },
    }));
    const res = await apiJson(`/app/${q.dev.projectId}/mcp`, {
      method: "POST",
      headers: mcpPostHeaders(q.dev.token),
      body: JSON.stringify(batch),
    });
    expect(res.status).toBe(200);
    const results = (res.body as { result: { isError: boolean; content: { text: string }[] } }[]).map(
      (r) => r.result,
    );
    expect(results).toHaveLength(12);
    const answered = results.filter((r) => !r.isError);
    const refused = results.filter((r) => r.isError);
    const answeredChars = answered.reduce((sum, r) => sum + (r.content[0]?.text.length ?? 0), 0);
    expect(answeredChars).toBeLessThanOrEqual(MAX_REQUEST_ANSWER_CHARS);
    expect(answered.length).toBeGreaterThan(0);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) {
      expect(JSON.parse(r.content[0]?.text ?? "{}").error).toMatchObject({ code: "result_too_large" });
    }
    // One call is never refused for the others' answers: the next request reads the page at once.
    const one = await apiJson(`/app/${q.dev.projectId}/mcp`, {
      method: "POST",
      headers: mcpPostHeaders(q.dev.token),
      body: JSON.stringify(batch[0]),
    });
    expect(one.body.result.isError).toBe(false);
    expect(one.body.result.structuredContent.rows).toHaveLength(4);
  });

  it("bounds what one platform-MCP request answers: a batch of 100 collection listings held each up to the project's 4 MiB of definitions", async () => {
    const dev = await signupDeveloper();
    const description = "d".repeat(500);
    const columns = Array.from({ length: 100 }, (_, i) => ({ name: `c${i}`, type: "text", description }));
    for (let i = 0; i < 10; i++) {
      const made = await apiJson(`/v1/admin/projects/${dev.projectId}/collections`, {
        token: dev.token,
        json: { name: `wide${i}`, columns },
      });
      expect(made.status).toBe(201);
    }
    // ≈ 540 KB a listing, 20 of them in one request.
    const batch = Array.from({ length: 20 }, (_, i) => ({
      jsonrpc: "2.0",
      id: i,
      method: "tools/call",
      params: { name: "amba_collections_list", arguments: { project_id: dev.projectId } },
    }));
    const res = await apiJson("/mcp", {
      method: "POST",
      headers: mcpPostHeaders(dev.token),
      body: JSON.stringify(batch),
    });
    expect(res.status).toBe(200);
    const results = (res.body as { result: { isError: boolean; content: { text: string }[] } }[]).map(
      (r) => r.result,
    );
    const answered = results.filter((r) => !r.isError);
    const refused = results.filter((r) => r.isError);
    expect(answered.reduce((sum, r) => sum + (r.content[0]?.text.length ?? 0), 0)).toBeLessThanOrEqual(
      MAX_REQUEST_ANSWER_CHARS,
    );
    expect(answered.length).toBeGreaterThan(0);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) {
      expect(JSON.parse(r.content[0]?.text ?? "{}").error).toMatchObject({ code: "result_too_large" });
    }
  });

  it("holds the kill switch and the auth mode against a JSON-RPC batch, on the hostname address, and with another app's session id (blocked already; no write lands)", async () => {
    const q = await dataProject();
    await createCollection(q, { name: "notes", columns: [{ name: "body", type: "text" }] });
    const admin = `/v1/admin/projects/${q.dev.projectId}/app-mcp`;
    const slug = `kill-${crypto.randomUUID().slice(0, 8)}`;
    await apiJson(`${admin}/exposure`, {
      token: q.dev.token,
      method: "PUT",
      json: { collections: ["notes"] },
    });
    const configure = (json: unknown) =>
      apiJson(`${admin}/config`, { token: q.dev.token, method: "PATCH", json });
    expect((await configure({ slug })).status).toBe(200);
    const insert = (id: number) => ({
      jsonrpc: "2.0",
      id,
      method: "tools/call",
      params: { name: "notes_insert", arguments: { body: `batched ${id}` } },
    });
    const batch = [insert(1), { jsonrpc: "2.0", id: 2, method: "ping" }, insert(3)];
    const endUser = { ...mcpPostHeaders(q.userA.user.sessionToken), "x-api-key": q.dev.clientKey };
    const send = (url: string, headers: Record<string, string>, extra: Record<string, string> = {}) =>
      api(url, { method: "POST", headers: { ...headers, ...extra }, body: JSON.stringify(batch) });
    const urls = [`/app/${q.dev.projectId}/mcp`, `https://${slug}.mcp.amba.host/mcp`];
    const other = await dataProject();
    const refusedEverywhere = async (headers: Record<string, string>[]) => {
      for (const url of urls)
        for (const h of headers) {
          const res = await send(url, h, { "mcp-session-id": other.dev.projectId });
          expect(res.status, url).toBe(403);
        }
    };
    expect((await configure({ enabled: false })).status).toBe(200);
    await refusedEverywhere([mcpPostHeaders(q.dev.token), endUser]);
    expect((await configure({ enabled: true, auth_mode: "developer_only" })).status).toBe(200);
    await refusedEverywhere([endUser]);
    expect((await configure({ auth_mode: "client_only" })).status).toBe(200);
    await refusedEverywhere([mcpPostHeaders(q.dev.token)]);
    // GET (an SSE stream) is not served at all, whatever session id comes with it.
    const get = await api(urls[0] as string, {
      headers: { ...endUser, "mcp-session-id": crypto.randomUUID() },
    });
    expect(get.status).toBe(405);
    expect((await data(q, q.developer, "notes", "rows", { method: "GET" })).body.rows).toEqual([]);
  });

  it("bounds the tools/list pages one request answers: a batch of 100 tools/list of an app with described columns was ≈ 115 MB of response", async () => {
    // A page is bounded by its weight (3,000 columns' worth), ≈ 1.1 MB with 500-character column
    // descriptions, and served from memory; a batch of 100 asked for it 100 times, and the response
    // — 100 copies, then its UTF-8 bytes — was built whole in the isolate, end users' batches too.
    const dev = await signupDeveloper();
    const description = "d".repeat(500);
    const columns = Array.from({ length: 100 }, (_, i) => ({ name: `c${i}`, type: "text", description }));
    const names = ["wide0", "wide1", "wide2", "wide3"];
    for (const name of names) {
      const made = await apiJson(`/v1/admin/projects/${dev.projectId}/collections`, {
        token: dev.token,
        json: { name, columns },
      });
      expect(made.status).toBe(201);
    }
    await apiJson(`/v1/admin/projects/${dev.projectId}/app-mcp/exposure`, {
      token: dev.token,
      method: "PUT",
      json: { collections: names },
    });
    const url = `/app/${dev.projectId}/mcp`;
    const list = (id: number) => ({ jsonrpc: "2.0", id, method: "tools/list" });
    const single = await api(url, {
      method: "POST",
      headers: mcpPostHeaders(dev.token),
      body: JSON.stringify(list(0)),
    });
    const pageChars = (await single.text()).length;
    expect(pageChars).toBeGreaterThan(MAX_REQUEST_ANSWER_CHARS / 10);
    const batch = Array.from({ length: 12 }, (_, i) => list(i));
    const res = await apiJson(url, {
      method: "POST",
      headers: mcpPostHeaders(dev.token),
      body: JSON.stringify(batch),
    });
    expect(res.status).toBe(200);
    const answers = res.body as {
      result?: { tools: unknown[] };
      error?: { code: number; message: string };
    }[];
    expect(answers).toHaveLength(12);
    const served = answers.filter((a) => a.result);
    const refused = answers.filter((a) => a.error);
    expect(served.length).toBeGreaterThan(0);
    expect(served.length * pageChars).toBeLessThanOrEqual(MAX_REQUEST_ANSWER_CHARS + pageChars);
    expect(refused.length).toBeGreaterThan(0);
    for (const a of refused) expect(a.error?.message).toContain("another request");
  });

  it("answers Origin checks of an app from memory and bounds anonymous lookups of unknown apps per address (each was a database statement, credentials or not)", async () => {
    // The app MCP's Origin check reads the app's allowed_origins before any credential (a preflight
    // has none): one statement per request with a foreign Origin — a browser app's every call, and
    // anyone's, unbounded, for a known app id or any made-up one.
    await withinOneRateLimitWindow(60, 15_000);
    const dev = await signupDeveloper();
    const config = `/v1/admin/projects/${dev.projectId}/app-mcp/config`;
    const origins = (list: string[]) =>
      apiJson(config, { method: "PATCH", token: dev.token, json: { allowed_origins: list } });
    expect((await origins(["https://app.example.com"])).status).toBe(200);
    const attacker = freshIp();
    const preflight = (projectId: string, origin: string, ip = attacker) =>
      api(`/app/${projectId}/mcp`, {
        method: "OPTIONS",
        headers: { origin, "access-control-request-method": "POST", "cf-connecting-ip": ip },
      });
    expect((await preflight(dev.projectId, "https://app.example.com")).status).toBe(204);
    const fetchSpy = vi.spyOn(globalThis, "fetch");
    try {
      for (let i = 0; i < 20; i++) {
        expect((await preflight(dev.projectId, "https://app.example.com")).status).toBe(204);
        expect((await preflight(dev.projectId, "https://evil.example")).status).toBe(403);
      }
      expect(requestRoundTrips(fetchSpy)).toBe(0);
    } finally {
      fetchSpy.mockRestore();
    }
    // The developer's change applies at once in this isolate (its write forgets what was read).
    expect((await origins(["https://other.example.com"])).status).toBe(200);
    expect((await preflight(dev.projectId, "https://app.example.com")).status).toBe(403);
    expect((await preflight(dev.projectId, "https://other.example.com")).status).toBe(204);
    // Made-up apps: each lookup finds nothing, and counts against the address's budget of failed
    // checks (100 a minute in the tests); past it the address is refused before the database.
    let status = 403;
    let sent = 0;
    while (status === 403 && sent < 300) {
      status = (await preflight(crypto.randomUUID(), "https://app.example.com")).status;
      sent++;
    }
    expect(status).toBe(429);
    // Another address, and the known app from memory, are not affected.
    expect((await preflight(crypto.randomUUID(), "https://app.example.com", freshIp())).status).toBe(403);
    expect((await preflight(dev.projectId, "https://other.example.com")).status).toBe(204);
  });

  it("refuses an end user's credentials on the admin API, the platform MCP and the billing view (blocked already)", async () => {
    const session = p.userA.user.sessionToken;
    const asEndUser = { "x-api-key": p.dev.clientKey, authorization: `Bearer ${session}` };
    for (const path of ["/v1/admin/projects", `/v1/admin/projects/${p.dev.projectId}/billing`]) {
      expectError(await apiJson(path, { headers: asEndUser }), 401);
      expectError(await apiJson(path, { token: p.dev.clientKey }), 401);
    }
    const call = {
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "amba_collections_list", arguments: { project_id: p.dev.projectId } },
    };
    const platform = await api("/mcp", {
      method: "POST",
      headers: { ...mcpPostHeaders(session), "x-api-key": p.dev.clientKey },
      body: JSON.stringify(call),
    });
    expect(platform.status).toBe(401);
    expect(platform.headers.get("www-authenticate")).toContain("invalid_token");
  });

  it("resolves an app's hostname from the request's own host only: forwarding headers and a second Host name no other app (blocked already)", async () => {
    const [a, b] = await Promise.all([signupDeveloper(), signupDeveloper()]);
    const slugs = [a, b].map(() => `fwd-${crypto.randomUUID().slice(0, 8)}`);
    for (const [i, dev] of [a, b].entries()) {
      const res = await apiJson(`/v1/admin/projects/${dev.projectId}/app-mcp/config`, {
        method: "PATCH",
        token: dev.token,
        json: { slug: slugs[i] },
      });
      expect(res.status).toBe(200);
    }
    const whoami = JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "my_first_project_whoami", arguments: {} },
    });
    const victimHost = `${slugs[1]}.mcp.amba.host`;
    const forwarding = {
      "x-forwarded-host": victimHost,
      "x-original-host": victimHost,
      "x-host": victimHost,
      forwarded: `host=${victimHost}`,
    };
    // On A's hostname, with A's token: A's app, whatever the forwarding headers say.
    const own = await apiJson(`https://${slugs[0]}.mcp.amba.host/mcp`, {
      method: "POST",
      headers: { ...mcpPostHeaders(a.token), ...forwarding },
      body: whoami,
    });
    expect(own.body.result.structuredContent.app.id).toBe(a.projectId);
    // On B's hostname, A's token names no project of A's, whichever Host header comes with it.
    const other = await api(`https://${victimHost}/mcp`, {
      method: "POST",
      headers: { ...mcpPostHeaders(a.token), host: `${slugs[0]}.mcp.amba.host` },
      body: whoami,
    });
    expect(other.status).toBe(404);
    // On the platform's host, the forwarding headers do not turn /mcp into B's endpoint.
    const platform = await apiJson("/mcp", {
      method: "POST",
      headers: { ...mcpPostHeaders(a.token), ...forwarding },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "amba_whoami", arguments: {} },
      }),
    });
    expect(platform.body.result.isError).toBe(false);
  });

  it('lets a collection take any valid name: the tables\' own indexes and constraints are named where no collection can be (notes_pkey was 409 "already exists")', async () => {
    // Postgres named a table's indexes after it (`notes_pkey`, `notes_created_at_id_idx`,
    // `notes_k_key`, …) in the namespace collection tables live in, so creating a collection of
    // such a name failed with "relation already exists": 409 "collection … already exists" for a
    // collection that did not.
    const dev = await signupDeveloper();
    const base = `/v1/admin/projects/${dev.projectId}/collections`;
    const create = (name: string, columns: unknown[] = []) =>
      apiJson(base, { token: dev.token, json: { name, columns } });
    const long = `k${"x".repeat(60)}`;
    const made = await create("notes", [
      { name: "k", type: "text", unique: true },
      { name: long, type: "text", unique: true },
      { name: `${long.slice(0, -1)}y`, type: "text", unique: true },
    ]);
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    for (const name of [
      "notes_pkey",
      "notes_created_at_id_idx",
      "notes_owner_id_created_at_id_idx",
      "notes_k_key",
    ]) {
      const res = await create(name);
      expect(res.status, `${name}: ${JSON.stringify(res.body)}`).toBe(201);
    }
    // Nor do two collections' names meet: a unique `x_pkey` in `a` and a unique `pkey` in `a_x`.
    expect((await create("a", [{ name: "x_pkey", type: "text", unique: true }])).status).toBe(201);
    expect((await create("a_x", [{ name: "pkey", type: "text", unique: true }])).status).toBe(201);
    // The unique constraints still hold, and a unique column dropped and added again in one change
    // gets its constraint back.
    const rows = `/v1/projects/${dev.projectId}/collections/notes/rows`;
    expect((await apiJson(rows, { token: dev.token, json: { k: "one" } })).status).toBe(201);
    expectError(await apiJson(rows, { token: dev.token, json: { k: "one" } }), 409);
    const readd = await apiJson(`${base}/notes`, {
      token: dev.token,
      method: "PATCH",
      json: { drop_columns: ["k"], add_columns: [{ name: "k", type: "text", unique: true }] },
    });
    expect(readd.status, JSON.stringify(readd.body)).toBe(200);
    expect((await apiJson(rows, { token: dev.token, json: { k: "two" } })).status).toBe(201);
    expectError(await apiJson(rows, { token: dev.token, json: { k: "two" } }), 409);
    // A column named twice in drop_columns is the caller's mistake (was 409 "changed concurrently; retry").
    expectError(
      await apiJson(`${base}/notes`, {
        token: dev.token,
        method: "PATCH",
        json: { drop_columns: [long, long] },
      }),
      400,
      "more than once",
    );
  });

  it("keeps soft-deleted rows and deleted_at out of every read: where, order, aggregate, group_by, nearest (blocked already)", async (ctx) => {
    needsPgvector(ctx);
    await createCollection(p, {
      name: "docs",
      columns: [
        { name: "title", type: "text" },
        { name: "embedding", type: "vector", dimensions: 2 },
      ],
      access: { read: "public", write: "owner" },
    });
    const kept = await insert(p, p.userA, "docs", { title: "kept", embedding: [1, 0] });
    const gone = await insert(p, p.userA, "docs", { title: "gone", embedding: [1, 0.01] });
    expect((await data(p, p.userA, "docs", `rows/${gone.id}`, { method: "DELETE" })).status).toBe(200);
    for (const caller of [p.developer, p.userB]) {
      const counted = await data(p, caller, "docs", "aggregate", { json: { metrics: [{ fn: "count" }] } });
      expect(counted.body).toEqual({ rows: [{ count: 1 }] });
      const grouped = await data(p, caller, "docs", "aggregate", {
        json: { metrics: [{ fn: "count" }], group_by: ["title"] },
      });
      expect(grouped.body.rows).toEqual([{ count: 1, title: "kept" }]);
      const near = await data(p, caller, "docs", "nearest", { json: { vector: [1, 0.01], limit: 10 } });
      expect(near.body.rows.map((r: { id: string }) => r.id)).toEqual([kept.id]);
      expect(near.body.rows[0]).not.toHaveProperty("deleted_at");
      for (const [path, json] of [
        ["find", { where: { deleted_at: { is_null: false } } }],
        ["find", { order: "deleted_at desc" }],
        ["aggregate", { metrics: [{ fn: "max", column: "deleted_at" }] }],
        ["aggregate", { metrics: [{ fn: "count" }], group_by: ["deleted_at"] }],
        ["nearest", { vector: [1, 0], where: { deleted_at: { is_null: false } } }],
      ] as const) {
        expectError(await data(p, caller, "docs", path, { json }), 400);
      }
    }
  });

  it("treats a cursor as a position only: the developer's cursor, and one crafted by hand, page an end user through their own rows (blocked already)", async () => {
    await createCollection(p, {
      name: "diary",
      columns: [{ name: "n", type: "integer" }],
      access: { read: "owner", write: "owner" },
    });
    const mine: string[] = [];
    for (let n = 0; n < 3; n++) {
      mine.push((await insert(p, p.userA, "diary", { n })).id);
      await insert(p, p.userB, "diary", { n: 100 + n });
    }
    // The developer pages every row; its cursor, given to userA, positions userA's own query.
    const devPage = await data(p, p.developer, "diary", "find", { json: { order: "n asc", limit: 1 } });
    expect(devPage.body.rows[0].n).toBe(0);
    const reused = await data(p, p.userA, "diary", "find", {
      json: { order: "n asc", cursor: devPage.body.next_cursor, limit: 50 },
    });
    expect(reused.body.rows.map((r: { id: string }) => r.id)).toEqual(mine.slice(1));
    // A hand-made cursor before everything (any row id, a value below all) shows no more.
    const crafted = btoa(JSON.stringify(["n asc", -1, mine[0]]))
      .replace(/\+/g, "-")
      .replace(/\//g, "_")
      .replace(/=+$/, "");
    const all = await data(p, p.userA, "diary", "find", {
      json: { order: "n asc", cursor: crafted, limit: 50 },
    });
    expect(all.body.rows.every((r: { owner_id: string }) => r.owner_id === p.userA.user.userId)).toBe(true);
    expect(all.body.rows).toHaveLength(3);
  });
});
