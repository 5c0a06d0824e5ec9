/**
 * One tenant against the others. An app's callers share one aggregate budget (README "Decisions",
 * "Per-app aggregate rate limit"): every caller also counts against `PROJECT_RATE_LIMITER`, so an app
 * cannot multiply its caller tier by signing up end users. The real Worker app serves the requests;
 * its `PROJECT_RATE_LIMITER` is a binding that allows 3 calls per key and records every key (spending
 * the real binding's 6,000 here would take ≈ 25 s at ≈ 4 ms a call): the fourth end-user call of the
 * app — from a caller fresh to its own tier — is refused, over REST and the app MCP, the developer
 * (one caller, bounded by its own tier) is not counted, and another app is not affected.
 * And an attacker's app reaches none of another app's rows with its ids, cursors or client key.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/worker/app.ts";
import type { Env } from "../../src/worker/env.ts";
import { projectRateLimitKey } from "../../src/worker/rate-limit.ts";
import { countingLimiter } from "../fixtures.ts";
import { type Caller, createCollection, data, dataProject, insert } from "./data/fixtures.ts";
import { apiJson, endUserHeaders, signupUser } from "./helpers.ts";

describe("an app's callers share one aggregate budget", () => {
  it("refuses a caller fresh to its tier once the app's budget is spent; another app goes on", async () => {
    const [p, other] = await Promise.all([dataProject(), dataProject()]);
    const notes = {
      name: "notes",
      columns: [{ name: "body", type: "text" }],
      access: { read: "owner", write: "owner" },
    };
    await Promise.all([createCollection(p, notes), createCollection(other, notes)]);
    const [third, fresh] = await Promise.all([
      signupUser(p.dev.projectId, p.dev.clientKey),
      signupUser(p.dev.projectId, p.dev.clientKey),
    ]);

    const PROJECT_RATE_LIMITER = countingLimiter(3);
    const app = createApp();
    const ctx = createExecutionContext();
    const send = async (path: string, caller: Caller, init: { method?: string; json?: unknown } = {}) => {
      const headers = new Headers(
        "token" in caller ? { authorization: `Bearer ${caller.token}` } : caller.headers,
      );
      headers.set("content-type", "application/json");
      headers.set("accept", "application/json, text/event-stream");
      const request = new Request(`http://local${path}`, {
        method: init.method ?? (init.json === undefined ? "GET" : "POST"),
        headers,
        body: init.json === undefined ? undefined : JSON.stringify(init.json),
      });
      const res = await app.fetch(request, { ...env, PROJECT_RATE_LIMITER } as unknown as Env, ctx);
      // biome-ignore lint/suspicious/noExplicitAny: tests assert the shape
      return { status: res.status, body: (await res.json()) as any };
    };
    const rows = (q: typeof p) => `/v1/projects/${q.dev.projectId}/collections/notes/rows`;
    const whoami = {
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "my_first_project_whoami", arguments: {} },
    };

    // The developer is one caller, bounded by its own tier: not counted on the app's budget.
    expect((await send(rows(p), p.developer, { json: { body: "dev" } })).status).toBe(201);
    expect(PROJECT_RATE_LIMITER.calls.get(projectRateLimitKey(p.dev.projectId))).toBeUndefined();
    // Three end users, one call each — each well inside its own tier — spend the app's budget.
    const thirdCaller = { headers: endUserHeaders(p.dev.clientKey, third.sessionToken) };
    expect((await send(rows(p), p.userA, { json: { body: "a" } })).status).toBe(201);
    expect((await send(`/app/${p.dev.projectId}/mcp`, p.userB, { json: whoami })).body.result.isError).toBe(
      false,
    );
    expect((await send(rows(p), thirdCaller)).status).toBe(200);
    expect(PROJECT_RATE_LIMITER.calls.get(projectRateLimitKey(p.dev.projectId))).toBe(3);

    const freshCaller = { headers: endUserHeaders(p.dev.clientKey, fresh.sessionToken) };
    const refused = await send(rows(p), freshCaller, { json: { body: "fresh" } });
    expect(refused.status).toBe(429);
    expect(refused.body.error.message).toContain("this app (all its callers together)");
    // Remembered for a moment: a read of any end user of the app is refused at once, as is a tool
    // call; the developer, outside the end users' budget, can still read and operate the app.
    expect((await send(rows(p), thirdCaller)).status).toBe(429);
    expect((await send(rows(p), p.developer)).status).toBe(200);
    const tool = await send(`/app/${p.dev.projectId}/mcp`, p.userA, { json: whoami });
    expect(tool.body.result.isError).toBe(true);
    expect(tool.body.result.content[0].text).toContain("rate_limited");

    // The other app has its own budget.
    expect((await send(rows(other), other.userA, { json: { body: "y" } })).status).toBe(201);
    expect((await send(rows(other), other.userA)).status).toBe(200);
    await waitOnExecutionContext(ctx);
  });
});

describe("one app's callers cannot reach another app's rows", () => {
  it("row ids, cursors and credentials of another app find nothing, through warm caches", async () => {
    const [victim, attacker] = await Promise.all([dataProject(), dataProject()]);
    const notes = {
      name: "notes",
      columns: [{ name: "body", type: "text" }],
      access: { read: "public", write: "owner" },
    };
    await Promise.all([createCollection(victim, notes), createCollection(attacker, notes)]);
    const secret = await insert(victim, victim.userA, "notes", { body: "victim secret" });
    await insert(victim, victim.userA, "notes", { body: "victim second" });
    await insert(attacker, attacker.userA, "notes", { body: "attacker own" });
    // The victim's caches are warm (credential resolution, collection metadata).
    const page = await data(victim, victim.developer, "notes", "rows?limit=1");
    expect(page.status).toBe(200);
    const victimCursor = page.body.next_cursor as string;
    expect(victimCursor).toEqual(expect.any(String));

    // The victim's row id under the attacker's app: nothing to read, change or delete.
    for (const caller of [attacker.developer, attacker.userA]) {
      expect((await data(attacker, caller, "notes", `rows/${secret.id}`)).status).toBe(404);
      const patch = await data(attacker, caller, "notes", `rows/${secret.id}`, {
        method: "PATCH",
        json: { body: "x" },
      });
      expect(patch.status).toBe(404);
      expect((await data(attacker, caller, "notes", `rows/${secret.id}`, { method: "DELETE" })).status).toBe(
        404,
      );
      // A cursor is a position, not a capability: the victim's cursor pages the attacker's own rows.
      const listed = await data(attacker, caller, "notes", `rows?cursor=${victimCursor}`);
      expect(listed.status).toBe(200);
      expect(JSON.stringify(listed.body)).not.toContain("victim");
      const counted = await data(attacker, caller, "notes", "aggregate", {
        json: { metrics: [{ fn: "count" }] },
      });
      expect(counted.body.rows).toEqual([{ count: 1 }]);
    }
    // The attacker's credentials on the victim's app: 404 for a developer, 401 for an end user — also
    // with the victim's client key, which ships inside the victim's client apps.
    const victimRows = `/v1/projects/${victim.dev.projectId}/collections/notes/rows`;
    expect((await apiJson(victimRows, { token: attacker.dev.token })).status).toBe(404);
    const session = attacker.userA.user.sessionToken;
    const borrowedKey = endUserHeaders(victim.dev.clientKey, session);
    expect((await apiJson(victimRows, { headers: borrowedKey })).status).toBe(401);
    const ownKey = endUserHeaders(attacker.dev.clientKey, session);
    expect((await apiJson(victimRows, { headers: ownKey })).status).toBe(401);
    expect((await data(victim, victim.developer, "notes", `rows/${secret.id}`)).body.body).toBe(
      "victim secret",
    );
  });
});
