/**
 * Event ingestion (`POST /v1/events`, client key and an optional end-user session) and the `events`
 * usage axis: accepted events are stored and counted exactly, a refused request stores and counts
 * nothing (the whole batch or none), one project's credentials never reach another's events, the
 * developer lists them newest first a page at a time, and ingestion counts against the same caller
 * tier as the SDK data routes.
 */
import { describe, expect, it } from "vitest";
import type { EventView } from "../../src/events/service.ts";
import {
  apiJson,
  billingUsage,
  endUserHeaders,
  expectError,
  freshIp,
  mcpPostHeaders,
  signupDeveloper,
  signupUser,
  type TestDeveloper,
  withinOneRateLimitWindow,
} from "./helpers.ts";

const admin = (dev: TestDeveloper, path = "") => `/v1/admin/projects/${dev.projectId}${path}`;

const usage = billingUsage;

/** Every event of the project, newest first (one page of at most 100). */
async function listed(dev: TestDeveloper, query = "") {
  const res = await apiJson(admin(dev, `/events?limit=100${query}`), { token: dev.token });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.events as EventView[];
}

/** `POST /v1/events` with the project's client key (and a session, when given). */
const send = (dev: TestDeveloper, json: unknown, session?: string, headers: Record<string, string> = {}) =>
  apiJson("/v1/events", {
    json,
    headers: session ? { ...endUserHeaders(dev.clientKey, session), ...headers } : headers,
    ...(session ? {} : { apiKey: dev.clientKey }),
  });

describe("POST /v1/events", () => {
  it("stores one event or a batch and counts each accepted event in the billing view", async () => {
    const dev = await signupDeveloper();
    const user = await signupUser(dev.projectId, dev.clientKey);
    expect((await usage(dev)).events).toBe(0);

    const one = await send(dev, { name: "app.opened" });
    expect(one.status, JSON.stringify(one.body)).toBe(201);
    expect(one.body).toEqual({ accepted: 1, ids: [expect.any(String)] });

    const batch = await send(
      dev,
      {
        events: [
          { name: "recipe_viewed", properties: { recipe: "cake", calories: 540, tags: ["sweet"] } },
          { name: "recipe_saved", timestamp: "2026-01-02T03:04:05.678Z" },
          { name: "checkout:done", properties: { total: { amount: 12.5, currency: "EUR" } } },
        ],
      },
      user.sessionToken,
    );
    expect(batch.status, JSON.stringify(batch.body)).toBe(201);
    expect(batch.body.accepted).toBe(3);
    expect(batch.body.ids).toHaveLength(3);

    expect((await usage(dev)).events).toBe(4);
    // The same count on the platform MCP's billing tool and on today's row of the daily view.
    const call = await apiJson("/mcp", {
      method: "POST",
      headers: mcpPostHeaders(dev.token),
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "amba_billing_status", arguments: { project_id: dev.projectId } },
      }),
    });
    expect(call.status).toBe(200);
    expect(JSON.parse(call.body.result.content[0].text).usage.events).toBe(4);
    const daily = await apiJson(admin(dev, "/billing/daily"), { token: dev.token });
    expect(daily.body.days.at(-1).usage.events).toBe(4);
    const events = await listed(dev);
    expect(events.map((e) => e.name)).toEqual([
      "checkout:done",
      "recipe_saved",
      "recipe_viewed",
      "app.opened",
    ]);
    expect(events.map((e) => e.id)).toEqual([...batch.body.ids].reverse().concat(one.body.ids));
    const [checkout, saved, viewed, opened] = events;
    expect(opened).toMatchObject({ user_id: null, properties: {} });
    expect(viewed).toMatchObject({
      user_id: user.userId,
      properties: { recipe: "cake", calories: 540, tags: ["sweet"] },
    });
    expect(checkout?.properties).toEqual({ total: { amount: 12.5, currency: "EUR" } });
    expect(saved?.occurred_at).toBe("2026-01-02T03:04:05.678Z");
    // Without a timestamp an event happened when it was received.
    expect(opened?.occurred_at).toBe(opened?.received_at);
  });

  it("refuses a batch with one bad event whole: 400, nothing stored, nothing counted", async () => {
    const dev = await signupDeveloper();
    const good = { name: "fine" };
    const future = new Date(Date.now() + 2 * 86_400_000).toISOString();
    const deep = { a: { b: { c: { d: { e: { f: { g: { h: { i: 1 } } } } } } } } };
    const refusals: [unknown, string][] = [
      [{ events: [good, { name: "has space" }, good] }, "events.1.name"],
      [{ events: [good, { name: "" }] }, "events.1.name"],
      [{ events: [good, { name: `e${"x".repeat(128)}` }] }, "events.1.name"],
      [{ events: [good, { name: "ok", properties: [1, 2] }] }, "events.1.properties"],
      [{ events: [good, { name: "ok", properties: deep }] }, "events.1.properties"],
      [{ events: [good, { name: "ok", properties: { blob: "x".repeat(9000) } }] }, "events.1.properties"],
      [{ events: [good, { name: "ok", timestamp: "yesterday" }] }, "events.1.timestamp"],
      [{ events: [good, { name: "ok", timestamp: "2026-01-02T03:04:05" }] }, "events.1.timestamp"],
      [{ events: [good, { name: "ok", timestamp: future }] }, "events.1.timestamp"],
      [{ events: [good, { name: "ok", timestamp: "1999-12-31T23:59:59Z" }] }, "events.1.timestamp"],
      [{ events: [good, { name: "ok", extra: 1 }] }, "events.1"],
      [{ events: Array.from({ length: 101 }, () => good) }, "events"],
      [{ events: [] }, "events"],
      [{ name: "ok", events: [good] }, ""],
      [{ name: "ok", properties: { nul: "a\u0000b" } }, "NUL"],
      [{ name: "ok", properties: { half: "\ud83d" } }, "surrogate"],
      [[good], "JSON object"],
    ];
    for (const [body, message] of refusals) {
      const res = await send(dev, body);
      expectError(res, 400, message);
      expect(res.body.error.code).toBe("invalid_input");
    }
    const notJson = await apiJson("/v1/events", {
      method: "POST",
      apiKey: dev.clientKey,
      headers: { "content-type": "application/json" },
      body: '{"name": "x"',
    });
    expectError(notJson, 400, "valid JSON");
    const tooLarge = await apiJson("/v1/events", {
      method: "POST",
      apiKey: dev.clientKey,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "big", properties: { blob: "x".repeat(1024 * 1024) } }),
    });
    expectError(tooLarge, 413);

    expect(await listed(dev)).toEqual([]);
    expect((await usage(dev)).events).toBe(0);
    // The same request without the bad event goes through.
    expect((await send(dev, { events: [good, good] })).status).toBe(201);
    expect((await usage(dev)).events).toBe(2);
  });

  it("takes the client key's project only: other credentials neither write nor read its events", async () => {
    const a = await signupDeveloper();
    const b = await signupDeveloper();
    const bUser = await signupUser(b.projectId, b.clientKey);

    expect((await send(a, { name: "from_a" })).status).toBe(201);
    expect((await send(b, { name: "from_b" })).status).toBe(201);
    // B's session next to A's key is refused (not stored in either project).
    const mixed = await apiJson("/v1/events", {
      json: { name: "mixed" },
      headers: endUserHeaders(a.clientKey, bUser.sessionToken),
    });
    expectError(mixed, 401, "session does not belong");
    // A developer token is not a client credential; no key, or a made-up one, is refused.
    expectError(await apiJson("/v1/events", { json: { name: "x" }, token: a.token }), 401, "X-Api-Key");
    expectError(await apiJson("/v1/events", { json: { name: "x" } }), 401, "X-Api-Key");
    const fakeKey = a.clientKey.replace(/_[^_]+$/, "_wrongsecret");
    expectError(await apiJson("/v1/events", { json: { name: "x" }, apiKey: fakeKey }), 401);

    expect((await listed(a)).map((e) => e.name)).toEqual(["from_a"]);
    expect((await listed(b)).map((e) => e.name)).toEqual(["from_b"]);
    expect((await usage(a)).events).toBe(1);
    expect((await usage(b)).events).toBe(1);
    // Reading: B's token on A's events is A's project unknown to B; a client key reads nothing.
    expectError(await apiJson(admin(a, "/events"), { token: b.token }), 404);
    expectError(await apiJson(admin(a, "/events"), { apiKey: a.clientKey }), 401);
    expectError(
      await apiJson(admin(a, "/events"), { headers: endUserHeaders(a.clientKey, bUser.sessionToken) }),
      401,
    );
  });

  it("counts against the app's caller tier like the SDK data routes; a refused request counts nothing", async () => {
    const dev = await signupDeveloper();
    // The low tier: 60 a minute per caller in the tests (vitest.config.ts), an anonymous caller by address.
    const tier = await apiJson(admin(dev, "/app-mcp/config"), {
      token: dev.token,
      method: "PATCH",
      json: { rate_limit_per_minute: 600 },
    });
    expect(tier.status, JSON.stringify(tier.body)).toBe(200);
    await withinOneRateLimitWindow();
    const ip = { "cf-connecting-ip": freshIp() };
    for (let i = 0; i < 60; i++) expect((await send(dev, { name: "tick" }, undefined, ip)).status).toBe(201);
    const refused = await send(dev, { events: [{ name: "tick" }, { name: "tick" }] }, undefined, ip);
    expectError(refused, 429);
    // Another address is another caller.
    expect((await send(dev, { name: "tick" }, undefined, { "cf-connecting-ip": freshIp() })).status).toBe(
      201,
    );
    expect((await usage(dev)).events).toBe(61);
  });
});

describe("GET /v1/admin/projects/:id/events", () => {
  it("pages newest first with next_cursor, filters by name, and refuses a bad page", async () => {
    const dev = await signupDeveloper();
    const names = ["a", "b", "a", "c", "a"];
    const sent = await send(dev, { events: names.map((name, i) => ({ name, properties: { i } })) });
    expect(sent.status).toBe(201);

    const seen: number[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = cursor ? `?limit=2&cursor=${encodeURIComponent(cursor)}` : "?limit=2";
      const page = await apiJson(admin(dev, `/events${query}`), { token: dev.token });
      expect(page.status, JSON.stringify(page.body)).toBe(200);
      expect(page.body.events.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.events.map((e: { properties: { i: number } }) => e.properties.i));
      cursor = page.body.next_cursor;
      pages++;
    } while (cursor !== null);
    expect(seen).toEqual([4, 3, 2, 1, 0]);
    expect(pages).toBe(3);

    const first = await apiJson(admin(dev, "/events?name=a&limit=2"), { token: dev.token });
    expect(first.body.events.map((e: { properties: { i: number } }) => e.properties.i)).toEqual([4, 2]);
    const rest = await apiJson(
      admin(dev, `/events?name=a&limit=2&cursor=${encodeURIComponent(first.body.next_cursor)}`),
      { token: dev.token },
    );
    expect(rest.body).toEqual({ events: [expect.objectContaining({ name: "a" })], next_cursor: null });
    expect(rest.body.events[0].properties).toEqual({ i: 0 });
    expect((await apiJson(admin(dev, "/events?name=zzz"), { token: dev.token })).body).toEqual({
      events: [],
      next_cursor: null,
    });

    expectError(await apiJson(admin(dev, "/events?limit=0"), { token: dev.token }), 400, "limit");
    expectError(await apiJson(admin(dev, "/events?limit=101"), { token: dev.token }), 400, "limit");
    expectError(await apiJson(admin(dev, "/events?cursor=nonsense"), { token: dev.token }), 400, "cursor");
    expectError(await apiJson(admin(dev, "/events?name=has%20space"), { token: dev.token }), 400, "name");
  });
});
