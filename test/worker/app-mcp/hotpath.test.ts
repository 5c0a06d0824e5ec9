/**
 * The app-MCP hot path (issue 11): database round trips per request (counted at the driver's
 * fetch), the lazy surface, metering batched after the response (one statement for a flush
 * window's calls) and exact under concurrency, and `tools/list` pagination through the official
 * SDK client.
 */

import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { sql } from "drizzle-orm";
import { afterEach, beforeAll, describe, expect, it, type MockInstance, vi } from "vitest";
import { TOOLS_PAGE_WEIGHT } from "../../../src/app-mcp/handlers.ts";
import { billingPeriod, FLUSH_DELAY_MS, usageDay } from "../../../src/usage/metering.ts";
import { createApp } from "../../../src/worker/app.ts";
import type { Env } from "../../../src/worker/env.ts";
import { usageFlushPending } from "../../../src/worker/metering.ts";
import {
  api,
  apiJson,
  isBackgroundStatement,
  signupDeveloper,
  type TestDeveloper,
  testDb,
} from "../helpers.ts";
import { connectClient } from "./mcp-client.ts";

const FOODS = {
  name: "foods",
  columns: [
    { name: "title", type: "text", required: true },
    { name: "calories", type: "integer" },
  ],
};

async function setupApp(collections: unknown[] = [FOODS]): Promise<{ dev: TestDeveloper; url: string }> {
  const dev = await signupDeveloper();
  const admin = `/v1/admin/projects/${dev.projectId}`;
  for (const json of collections) {
    const res = await apiJson(`${admin}/collections`, { token: dev.token, json });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }
  const names = collections.map((c) => (c as { name: string }).name);
  const exposed = await apiJson(`${admin}/app-mcp/exposure`, {
    method: "PUT",
    token: dev.token,
    json: { collections: names },
  });
  expect(exposed.status, JSON.stringify(exposed.body)).toBe(200);
  return { dev, url: `/app/${dev.projectId}/mcp` };
}

let id = 0;
/** One JSON-RPC request to the app endpoint; the parsed answer. */
// biome-ignore lint/suspicious/noExplicitAny: tests assert the shape
async function rpc(url: string, token: string, method: string, params?: unknown): Promise<any> {
  const res = await api(url, {
    method: "POST",
    token,
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-06-18",
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: ++id, method, ...(params ? { params } : {}) }),
  });
  expect(res.status).toBe(200);
  return res.json();
}

const INIT = { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } };

/** The project's metered agent tool calls (the billing view: a sum over the counter shards). */
async function metered(dev: TestDeveloper): Promise<number> {
  const billing = await apiJson(`/v1/admin/projects/${dev.projectId}/billing`, { token: dev.token });
  expect(billing.status).toBe(200);
  return billing.body.usage.agent_tool_calls;
}

/** Counts database round trips (the Neon driver's fetches); metering writes are counted apart. */
function countDatabase() {
  const original = globalThis.fetch;
  const counts = { queries: 0, metering: 0 };
  let release!: () => void;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const spy = vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const body = typeof init?.body === "string" ? init.body : "";
    if (body.includes("insert into usage_counters")) {
      counts.metering++;
      // Held until the test releases it: a response that waited for metering would never arrive.
      await gate;
    } else if (!isBackgroundStatement(body)) counts.queries++;
    return original(input, init);
  });
  return { counts, spy, release };
}

let active: { spy: MockInstance; release: () => void } | undefined;
afterEach(() => {
  active?.release();
  active?.spy.mockRestore();
  active = undefined;
});

describe("app MCP hot path", () => {
  let dev: TestDeveloper;
  let url: string;

  beforeAll(async () => {
    ({ dev, url } = await setupApp());
    const insert = await rpc(url, dev.token, "tools/call", {
      name: "my_first_project_whoami",
      arguments: {},
    });
    expect(insert.result.isError).toBe(false);
  });

  it("initialize and ping load no surface; a warm tools/call find is one database round trip", async () => {
    // A fresh credential (new project) so the first request is cold for this isolate's caches.
    const fresh = await setupApp();
    const kvGet = vi.spyOn((env as unknown as Env).META_KV, "get");
    const db = countDatabase();
    active = db;
    try {
      // Cold: authentication only (one statement), no KV read, no metadata query.
      expect((await rpc(fresh.url, fresh.dev.token, "initialize", INIT)).result.protocolVersion).toBe(
        "2025-06-18",
      );
      expect(db.counts.queries).toBe(1);
      expect(kvGet).not.toHaveBeenCalled();

      // Warm: initialize, ping and a notification touch neither the database nor KV.
      db.counts.queries = 0;
      await rpc(fresh.url, fresh.dev.token, "initialize", INIT);
      expect((await rpc(fresh.url, fresh.dev.token, "ping")).result).toEqual({});
      const note = await api(fresh.url, {
        method: "POST",
        token: fresh.dev.token,
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
      });
      expect(note.status).toBe(202);
      expect(db.counts.queries).toBe(0);
      expect(kvGet).not.toHaveBeenCalled();

      // The first tools/call loads the surface once; every later one is the find alone.
      const find = { name: "foods_find", arguments: { where: { calories: { lt: 200 } }, limit: 20 } };
      expect((await rpc(fresh.url, fresh.dev.token, "tools/call", find)).result.isError).toBe(false);
      db.counts.queries = 0;
      for (let i = 0; i < 3; i++) {
        const answer = await rpc(fresh.url, fresh.dev.token, "tools/call", find);
        expect(answer.result.isError, JSON.stringify(answer)).toBe(false);
      }
      // Every response arrived while any metering statement was held: metering is off the path.
      expect(db.counts.queries).toBe(3);
    } finally {
      kvGet.mockRestore();
    }
    db.release();
    await vi.waitFor(async () => expect(await metered(fresh.dev)).toBe(4), { timeout: 10_000 });
  });

  it("meters the calls of one flush window with one statement", async () => {
    const fresh = await setupApp();
    // The Worker app called in this test's own context, so the test's fake clock drives its
    // flush timer (a request through the runtime would run in a context of its own).
    const app = createApp();
    const ctx = createExecutionContext();
    const call = async (name: string, args: unknown) => {
      const init = {
        method: "POST",
        headers: {
          authorization: `Bearer ${fresh.dev.token}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2025-06-18",
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: ++id,
          method: "tools/call",
          params: { name, arguments: args },
        }),
      };
      const res = await app.fetch(new Request(`http://local${fresh.url}`, init), env, ctx);
      return ((await res.json()) as { result: { isError: boolean } }).result;
    };
    // Wait until this isolate's meter has written what the calls so far left pending.
    await vi.waitFor(async () => expect(await metered(dev), "earlier calls metered").toBe(1), {
      timeout: 10_000,
    });
    // And until no flush is scheduled on the real clock (an earlier window's, or its retry): one
    // firing inside the window below would carry its calls.
    await vi.waitFor(() => expect(usageFlushPending(), "a flush pending").toBe(false), { timeout: 10_000 });
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const db = countDatabase();
    active = db;
    const K = 12;
    try {
      for (let i = 0; i < K; i++)
        expect((await call("foods_insert", { title: `k${i}` })).isError).toBe(false);
      expect((await call("foods_insert", { calories: "many" })).isError).toBe(true);
      expect(db.counts.metering, "metering during the window").toBe(0);
      vi.advanceTimersByTime(FLUSH_DELAY_MS);
      await vi.waitFor(() => expect(db.counts.metering, "flush").toBe(1));
    } finally {
      vi.useRealTimers();
    }
    db.release();
    await waitOnExecutionContext(ctx);
    expect(await metered(fresh.dev), "metered").toBe(K);
    expect(db.counts.metering, "statements").toBe(1);
  });

  it("drops cached credentials in this isolate on sign-out", async () => {
    const fresh = await setupApp();
    const signup = await apiJson("/v1/auth/signup", {
      apiKey: fresh.dev.clientKey,
      json: { email: `hot-${crypto.randomUUID()}@example.com`, password: "correct horse battery" },
    });
    expect(signup.status).toBe(201);
    const headers = {
      "x-api-key": fresh.dev.clientKey,
      authorization: `Bearer ${signup.body.session_token}`,
      "content-type": "application/json",
      accept: "application/json",
    };
    const ping = () =>
      api(fresh.url, {
        method: "POST",
        headers,
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
      });
    expect((await ping()).status).toBe(200);
    expect((await ping()).status).toBe(200);
    const signout = await api("/v1/auth/signout", { method: "POST", headers });
    expect(signout.status).toBeLessThan(300);
    expect((await ping()).status).toBe(401);
  });

  it("meters N concurrent successful calls exactly, failed calls not at all", async () => {
    const before = await metered(dev);
    // More than one app's database slots run at once (16, src/data/app-slots.ts): the rest wait.
    const N = 200;
    const FAILED = 20;
    const calls = [
      ...Array.from({ length: N }, (_, i) =>
        rpc(url, dev.token, "tools/call", {
          name: "foods_insert",
          arguments: { title: `f${i}`, calories: i },
        }),
      ),
      ...Array.from({ length: FAILED }, () =>
        rpc(url, dev.token, "tools/call", { name: "foods_insert", arguments: { calories: "many" } }),
      ),
    ];
    const answers = await Promise.all(calls);
    expect(answers.filter((a) => a.result?.isError === false)).toHaveLength(N);
    expect(answers.filter((a) => a.result?.isError === true)).toHaveLength(FAILED);
    await vi.waitFor(async () => expect(await metered(dev)).toBe(before + N), { timeout: 15_000 });
    // Nothing else arrives later.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await metered(dev)).toBe(before + N);
    // The daily view is the same counters by day: this month's days add up to the month.
    const daily = await apiJson(
      `/v1/admin/projects/${dev.projectId}/billing/daily?from=${billingPeriod()}-01&to=${usageDay()}`,
      { token: dev.token },
    );
    expect(daily.status, JSON.stringify(daily.body)).toBe(200);
    const days = daily.body.days as { usage: { agent_tool_calls: number } }[];
    expect(days.reduce((sum, d) => sum + d.usage.agent_tool_calls, 0)).toBe(before + N);
  });
});

describe("tools/list pagination", () => {
  const COUNT = 300;
  let dev: TestDeveloper;

  beforeAll(async () => {
    dev = await signupDeveloper();
    const admin = `/v1/admin/projects/${dev.projectId}`;
    const names = Array.from({ length: COUNT }, (_, i) => `c${String(i).padStart(3, "0")}`);
    for (let i = 0; i < names.length; i += 10) {
      await Promise.all(
        names.slice(i, i + 10).map(async (name) => {
          const res = await apiJson(`${admin}/collections`, {
            token: dev.token,
            json: { name, columns: [{ name: "title", type: "text" }] },
          });
          expect(res.status, JSON.stringify(res.body)).toBe(201);
        }),
      );
    }
    const exposed = await apiJson(`${admin}/app-mcp/exposure`, {
      method: "PUT",
      token: dev.token,
      json: { collections: names },
    });
    expect(exposed.status, JSON.stringify(exposed.body)).toBe(200);
  }, 120_000);

  it("lists every tool exactly once across pages of at most 100; a bad cursor is -32602", async () => {
    const client = await connectClient(`http://local/app/${dev.projectId}/mcp`, {
      authorization: `Bearer ${dev.token}`,
    });
    const names: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await client.listTools(cursor ? { cursor } : {});
      expect(page.tools.length).toBeLessThanOrEqual(100);
      names.push(...page.tools.map((t) => t.name));
      cursor = page.nextCursor;
      pages++;
    } while (cursor !== undefined);
    expect(new Set(names).size).toBe(names.length);
    // 7 tools per collection plus list_collections and whoami.
    expect(names).toHaveLength(COUNT * 7 + 2);
    for (let i = 0; i < COUNT; i += 37) expect(names).toContain(`c${String(i).padStart(3, "0")}_find`);
    expect(pages).toBe(Math.ceil((COUNT * 7 + 2) / 100));

    for (const bad of ["nope", btoa("tools:0"), btoa("tools:999999"), btoa("other:100")]) {
      await expect(client.listTools({ cursor: bad })).rejects.toSatisfy(
        (err: unknown) => err instanceof McpError && err.code === -32602,
      );
    }
    await client.close();
  });
});

describe("tools/list pages by weight", () => {
  /** 8 collections of 100 columns and 3 of one: 29 wide tools fill a page, narrow ones ride along. */
  const COLUMNS: Record<string, number> = {
    ...Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`wide_${i}`, 100])),
    a: 1,
    b: 1,
    c: 1,
  };
  const OPS = ["list", "get", "find", "insert", "update", "delete", "aggregate"];
  let dev: TestDeveloper;

  beforeAll(async () => {
    dev = await signupDeveloper();
    // The surface is built from metadata rows alone: no tables (tools/list only).
    for (const [name, count] of Object.entries(COLUMNS)) {
      const columns = Array.from({ length: count }, (_, i) => ({ name: `c${i}`, type: "text" }));
      await testDb().execute(sql`INSERT INTO collections (project_id, name, columns, access)
        VALUES (${dev.projectId}::uuid, ${name}, ${JSON.stringify(columns)}::jsonb,
          '{"read":"public","write":"owner"}'::jsonb)`);
    }
    const exposed = await apiJson(`/v1/admin/projects/${dev.projectId}/app-mcp/exposure`, {
      method: "PUT",
      token: dev.token,
      json: { collections: Object.keys(COLUMNS) },
    });
    expect(exposed.status, JSON.stringify(exposed.body)).toBe(200);
  });

  it("lists every tool exactly once, each page within the weight budget or a single tool", async () => {
    const client = await connectClient(`http://local/app/${dev.projectId}/mcp`, {
      authorization: `Bearer ${dev.token}`,
    });
    /** A tool's weight as the budget counts it: its collection's columns plus one; 1 + 7 for the index. */
    const weight = (name: string) => {
      if (name.endsWith("_list_collections")) return 1 + Object.keys(COLUMNS).length;
      const collection = Object.keys(COLUMNS).find((c) => OPS.some((op) => name === `${c}_${op}`));
      return collection === undefined ? 1 : COLUMNS[collection]! + 1;
    };
    const pages: string[][] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : {});
      pages.push(page.tools.map((t) => t.name));
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    const names = pages.flat();
    const expected = Object.keys(COLUMNS).flatMap((c) => OPS.map((op) => `${c}_${op}`));
    expect(names).toHaveLength(expected.length + 2);
    expect(new Set(names).size).toBe(names.length);
    for (const name of expected) expect(names).toContain(name);
    for (const page of pages) {
      const total = page.reduce((sum, name) => sum + weight(name), 0);
      if (page.length > 1) expect(total).toBeLessThanOrEqual(TOOLS_PAGE_WEIGHT);
    }
    // 56 tools of 101 cannot share fewer pages than this; by count alone this was one page.
    expect(pages.length).toBeGreaterThanOrEqual(Math.ceil((56 * 101) / TOOLS_PAGE_WEIGHT));
    expect(pages.length).toBeGreaterThan(1);
    await client.close();
  });
});
