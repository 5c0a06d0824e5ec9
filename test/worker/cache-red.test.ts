/**
 * Red-team findings on the isolate caches, one regression test each (each failed before its fix).
 * Every case works on developers and projects of its own (the caches are the isolate's, shared by
 * every test file: vitest.config.ts `isolate: false`).
 */
import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { CREDENTIAL_TTL_MS } from "../../src/worker/credential-cache.ts";
import type { Env } from "../../src/worker/env.ts";
import {
  api,
  apiJson,
  endUserHeaders,
  mcpPostHeaders,
  requestRoundTrips,
  signupDeveloper,
  signupUser,
  type TestDeveloper,
  testDb,
} from "./helpers.ts";

const NOTES = { name: "notes", columns: [{ name: "title", type: "text" }] };

/** One JSON-RPC call over MCP (stateless: no initialize needed), its parsed answer. */
async function rpc(url: string, headers: Record<string, string>, method: string, params?: unknown) {
  const res = await api(url, {
    method: "POST",
    headers,
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  return { status: res.status, body: await res.json<{ result?: { isError?: boolean }; error?: unknown }>() };
}

describe("isolate caches under a hostile tenant", () => {
  let a: TestDeveloper;
  let b: TestDeveloper;
  let alice: Record<string, string>;
  const find = (dev: TestDeveloper, init: { token?: string; headers?: Record<string, string> }) =>
    apiJson(`/v1/projects/${dev.projectId}/collections/notes/find`, { ...init, json: {} });

  beforeAll(async () => {
    [a, b] = await Promise.all([signupDeveloper(), signupDeveloper()]);
    for (const dev of [a, b]) {
      const made = await apiJson(`/v1/admin/projects/${dev.projectId}/collections`, {
        token: dev.token,
        json: NOTES,
      });
      expect(made.status, JSON.stringify(made.body)).toBe(201);
    }
    alice = endUserHeaders(a.clientKey, (await signupUser(a.projectId, a.clientKey)).sessionToken);
  });

  it("keeps a tenant's resolved credentials when anyone else writes to the control plane", async () => {
    const bob = endUserHeaders(b.clientKey, (await signupUser(b.projectId, b.clientKey)).sessionToken);
    expect((await find(a, { token: a.token })).status).toBe(200);
    expect((await find(a, { headers: alice })).status).toBe(200);
    // Each of these used to drop every cached resolution of the isolate: an anonymous POST to no
    // route, a refused sign-in, and another developer's and another app's end user's own writes.
    expect((await api("/no-such-route", { method: "POST" })).status).toBe(404);
    const signin = await api("/v1/auth/signin", {
      apiKey: b.clientKey,
      json: { email: "nobody@example.com", password: "wrong password" },
    });
    expect(signin.status).toBe(401);
    const config = await apiJson(`/v1/admin/projects/${b.projectId}/app-mcp/config`, {
      method: "PATCH",
      token: b.token,
      json: { enabled: false },
    });
    expect(config.status, JSON.stringify(config.body)).toBe(200);
    expect((await api("/v1/auth/signout", { method: "POST", headers: bob })).status).toBeLessThan(300);

    const spy = vi.spyOn(globalThis, "fetch");
    try {
      expect((await find(a, { token: a.token })).status).toBe(200);
      expect((await find(a, { headers: alice })).status).toBe(200);
      expect(requestRoundTrips(spy), "two finds, no credential resolution").toBe(2);
    } finally {
      spy.mockRestore();
    }
  });

  it("still forgets a tenant's own resolutions at once after its write (platform MCP, REST)", async () => {
    const app = `/app/${a.projectId}/mcp`;
    expect((await rpc(app, mcpPostHeaders(a.token), "ping")).status).toBe(200);
    expect((await find(a, { headers: alice })).status).toBe(200);
    const off = await rpc("/mcp", mcpPostHeaders(a.token), "tools/call", {
      name: "amba_app_mcp_update_config",
      arguments: { project_id: a.projectId, enabled: false },
    });
    expect(off.body.result?.isError, JSON.stringify(off.body)).toBe(false);
    expect((await rpc(app, mcpPostHeaders(a.token), "ping")).status).toBe(403);

    const keys = await apiJson(`/v1/admin/projects/${a.projectId}/client-keys`, { token: a.token });
    const [key] = keys.body.client_keys;
    const revoked = await api(`/v1/admin/projects/${a.projectId}/client-keys/${key.id}`, {
      method: "DELETE",
      token: a.token,
    });
    expect(revoked.status).toBeLessThan(300);
    expect((await find(a, { headers: alice })).status).toBe(401);
  });

  it("keeps other apps' resolutions while one developer's apps with long exposure lists are called in turn", async () => {
    // The app configs the resolutions share were weighed by their JSON, exposure lists included
    // (up to 1,000 collection and 100 function names each): 17 such apps called in turn, a few
    // requests a second, pushed every other app's config out of the isolate.
    const attacker = await signupDeveloper();
    const made = await testDb().execute(sql`
      insert into projects (developer_id, name)
      select ${attacker.developerId}::uuid, 'wide ' || i from generate_series(1, 17) i returning id::text`);
    const projects = made.rows.map((row) => (row as { id: string }).id);
    const names = Array.from({ length: 1000 }, (_, i) => `c${String(i).padStart(4, "0")}_${"x".repeat(58)}`);
    await testDb().execute(sql`
      insert into app_mcp_configs (project_id, exposed_collections)
      select id, ${`{${names}}`}::text[] from projects where id = any(${`{${projects}}`}::uuid[])
      on conflict (project_id) do update set exposed_collections = excluded.exposed_collections`);
    expect((await find(b, { token: b.token })).status).toBe(200);
    for (const id of projects)
      expect((await rpc(`/app/${id}/mcp`, mcpPostHeaders(attacker.token), "ping")).status).toBe(200);

    const spy = vi.spyOn(globalThis, "fetch");
    try {
      expect((await find(b, { token: b.token })).status).toBe(200);
      expect(requestRoundTrips(spy), "the find, no credential resolution").toBe(1);
    } finally {
      spy.mockRestore();
    }
  });

  it("keeps a small app's surface in memory while two apps of megabytes of metadata are called in turn", async () => {
    // Surfaces were one least-recently-used budget (4 MiB of metadata JSON): each of two apps of
    // 2.2 MiB, loaded in turn, pushed out every other app's, whose next call went to KV again.
    const [attacker, victim] = await Promise.all([signupDeveloper(), signupDeveloper()]);
    const made = await testDb().execute(sql`
      insert into projects (developer_id, name)
      select ${attacker.developerId}::uuid, n from unnest(array['wide a', 'wide b']) n returning id::text`);
    const wide = made.rows.map((row) => (row as { id: string }).id);
    const columns = JSON.stringify(
      Array.from({ length: 100 }, (_, i) => ({ name: `c${i}`, type: "text", description: "d".repeat(500) })),
    );
    const names = Array.from({ length: 40 }, (_, i) => `t${i}`);
    await testDb().execute(sql`
      insert into collections (project_id, name, columns, access)
      select p, n, ${columns}::jsonb, '{"read":"public","write":"owner"}'::jsonb
      from unnest(${`{${wide}}`}::uuid[]) p, unnest(${`{${names}}`}::text[]) n`);
    await testDb().execute(sql`
      insert into app_mcp_configs (project_id, exposed_collections)
      select p, ${`{${names}}`}::text[] from unnest(${`{${wide}}`}::uuid[]) p
      on conflict (project_id) do update set exposed_collections = excluded.exposed_collections`);
    const whoami = async (projectId: string, token: string, app: string) => {
      const answer = await rpc(`/app/${projectId}/mcp`, mcpPostHeaders(token), "tools/call", {
        name: `${app}_whoami`,
        arguments: {},
      });
      expect(answer.body.result?.isError, JSON.stringify(answer.body)).toBe(false);
    };
    await whoami(victim.projectId, victim.token, "my_first_project");
    const kvGet = vi.spyOn((env as unknown as Env).META_KV, "get");
    try {
      for (const [i, id] of wide.entries()) await whoami(id, attacker.token, `wide_${"ab"[i]}`);
      expect(kvGet.mock.calls.length, "the wide apps' surfaces came from KV").toBeGreaterThan(0);
      kvGet.mockClear();
      await whoami(victim.projectId, victim.token, "my_first_project");
      expect(kvGet, "the small app's surface is still in memory").not.toHaveBeenCalled();
    } finally {
      kvGet.mockRestore();
    }
  });

  it("serves each app its own rows and definitions when two apps define the same collection", async () => {
    // Held: loaded metadata is interned per (project, content), so the definitions and the table a
    // tool is bound to are never another app's, however alike the collections are.
    const apps = await Promise.all([signupDeveloper(), signupDeveloper()]);
    const described = { ...NOTES, columns: [{ name: "title", type: "text", description: "same words" }] };
    for (const [i, dev] of apps.entries()) {
      const admin = `/v1/admin/projects/${dev.projectId}`;
      expect((await apiJson(`${admin}/collections`, { token: dev.token, json: described })).status).toBe(201);
      const exposed = await apiJson(`${admin}/app-mcp/exposure`, {
        method: "PUT",
        token: dev.token,
        json: { collections: ["notes"] },
      });
      expect(exposed.status).toBe(200);
      const row = await apiJson(`/v1/projects/${dev.projectId}/collections/notes/rows`, {
        token: dev.token,
        json: { title: `app ${i}` },
      });
      expect(row.status).toBe(201);
    }
    const call = (dev: TestDeveloper, method: string, params?: unknown) =>
      rpc(`/app/${dev.projectId}/mcp`, mcpPostHeaders(dev.token), method, params);
    const definitions = await Promise.all(
      apps.map(async (dev) => {
        const listed = (await call(dev, "tools/list")).body.result as unknown as {
          tools: { name: string }[];
        };
        return listed.tools.filter((t) => t.name.startsWith("notes_"));
      }),
    );
    expect(definitions[1]).toEqual(definitions[0]);
    for (const round of [0, 1])
      for (const [i, dev] of apps.entries()) {
        const found = await call(dev, "tools/call", { name: "notes_find", arguments: {} });
        const text = JSON.stringify(found.body.result);
        expect(text, `round ${round}`).toContain(`app ${i}`);
        expect(text).not.toContain(`app ${1 - i}`);
      }
  });

  it("keys a resolution by the credential, not by how its headers are spelled", async () => {
    // Keyed by the raw headers, one developer token had unlimited keys — `bearer`, more spaces, any
    // X-Api-Key beside it (unread), the project id in capitals — each a resolution of its own in the
    // budget every tenant's share: pings, which no rate limit counts, could fill it with one token.
    const dev = await signupDeveloper();
    const spelled = (i: number) => ({
      ...mcpPostHeaders(dev.token),
      authorization: `${i % 2 ? "bearer" : "Bearer"}${" ".repeat(1 + i)}${dev.token}`,
      "x-api-key": `junk-${i}`,
    });
    const path = (i: number) => `/app/${i % 2 ? dev.projectId.toUpperCase() : dev.projectId}/mcp`;
    expect((await rpc(path(0), spelled(0), "ping")).status).toBe(200);
    const spy = vi.spyOn(globalThis, "fetch");
    try {
      for (let i = 1; i < 4; i++) expect((await rpc(path(i), spelled(i), "ping")).status).toBe(200);
      expect(requestRoundTrips(spy), "one resolution for every spelling").toBe(0);
    } finally {
      spy.mockRestore();
    }
  });

  it("stops a credential revoked by another isolate within CREDENTIAL_TTL_MS on the cached paths, at once elsewhere", async () => {
    // Held (no test pinned the bound): a revoke another isolate made reaches this one's cache only
    // by expiry. The database is written here directly, as that isolate would; the clock is moved.
    const dev = await signupDeveloper();
    expect(
      (await apiJson(`/v1/admin/projects/${dev.projectId}/collections`, { token: dev.token, json: NOTES }))
        .status,
    ).toBe(201);
    const user = endUserHeaders(dev.clientKey, (await signupUser(dev.projectId, dev.clientKey)).sessionToken);
    const app = `/app/${dev.projectId}/mcp`;
    const endUserMcp = { ...mcpPostHeaders(""), ...user };
    expect((await find(dev, { headers: user })).status).toBe(200);
    expect((await rpc(app, endUserMcp, "ping")).status).toBe(200);
    expect((await rpc(app, mcpPostHeaders(dev.token), "ping")).status).toBe(200);
    await testDb().execute(
      sql`update client_keys set revoked_at = now() where project_id = ${dev.projectId}::uuid`,
    );
    await testDb().execute(
      sql`update developer_tokens set revoked_at = now() where developer_id = ${dev.developerId}::uuid`,
    );

    // Within the window the cached resolutions still answer (the documented staleness) …
    expect((await find(dev, { headers: user })).status).toBe(200);
    expect((await rpc(app, mcpPostHeaders(dev.token), "ping")).status).toBe(200);
    // … while the uncached paths refuse at once: REST invoke, the platform MCP.
    const invoke = `/v1/projects/${dev.projectId}/functions/none/invoke`;
    expect((await apiJson(invoke, { headers: user, json: {} })).status).toBe(401);
    expect(
      (await rpc("/mcp", mcpPostHeaders(dev.token), "tools/call", { name: "amba_whoami", arguments: {} }))
        .status,
    ).toBe(401);

    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + CREDENTIAL_TTL_MS + 1 });
    try {
      expect((await find(dev, { headers: user })).status).toBe(401);
      expect((await rpc(app, endUserMcp, "ping")).status).toBe(401);
      expect((await rpc(app, mcpPostHeaders(dev.token), "ping")).status).toBe(401);
    } finally {
      vi.useRealTimers();
    }
  });
});
