/**
 * One app cannot take the shared database from the others (README "Decisions", database time per
 * app). The per-app slots (src/data/app-slots.ts) on the real Worker app, over a database endpoint
 * that holds one collection's statements until the test lets them go (fault-endpoint.ts `/hold`):
 * app A's running and waiting calls fill its slots, the next one is refused at once — 429 over REST,
 * an `isError` result over the app MCP — while app B's calls in the same isolate are answered; held
 * statements that then fail (Postgres' statement timeout) give their slots back. And the `where`
 * budgets refuse an expensive filter before any database round trip.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, inject, it, vi } from "vitest";
import { APP_SLOT_LIMITS } from "../../../src/data/app-slots.ts";
import { appSlots } from "../../../src/data/service.ts";
import { createApp } from "../../../src/worker/app.ts";
import type { Env } from "../../../src/worker/env.ts";
import { HOLD_MARKER } from "../fault-endpoint.ts";
import {
  apiJson,
  developerExposing,
  mcpPostHeaders,
  requestRoundTrips,
  type TestDeveloper,
} from "../helpers.ts";

const faultDbUrl = inject("faultDbUrl");
const app = createApp();
const holdEnv: Env = {
  ...(env as unknown as Env),
  LOCAL_DB_URL: `${faultDbUrl}/hold`,
  DB_TIMEOUT_MS: "30000",
};

/** Call the Worker app with its database behind the holding endpoint (`deadlineMs`: the Worker's). */
async function held(path: string, token: string, body: unknown, deadlineMs?: number) {
  const init = {
    method: "POST",
    headers: mcpPostHeaders(token),
    body: JSON.stringify(body),
  };
  const ctx = createExecutionContext();
  const withDeadline = deadlineMs ? { ...holdEnv, DB_TIMEOUT_MS: String(deadlineMs) } : holdEnv;
  const res = await app.fetch(new Request(new URL(path, "http://local"), init), withDeadline, ctx);
  await waitOnExecutionContext(ctx);
  // biome-ignore lint/suspicious/noExplicitAny: response bodies are asserted by the tests
  return { status: res.status, retryAfter: res.headers.get("retry-after"), body: await res.json<any>() };
}

const control = async (what: string) => {
  const res = await fetch(`${faultDbUrl}/control/${what}`, { method: "POST" });
  return res.json<{ held: number }>();
};

/** A developer whose project exposes one collection `name` (created through the healthy database). */
const appWith = (name: string): Promise<TestDeveloper> =>
  developerExposing({
    name,
    columns: [
      { name: "title", type: "text" },
      { name: "tags", type: "text[]" },
      { name: "data", type: "json" },
    ],
  });

const find = (dev: TestDeveloper, name: string) =>
  held(`/v1/projects/${dev.projectId}/collections/${name}/find`, dev.token, {});
const toolCall = (dev: TestDeveloper, name: string, args: unknown) =>
  held(`/app/${dev.projectId}/mcp`, dev.token, {
    jsonrpc: "2.0",
    id: 1,
    method: "tools/call",
    params: { name, arguments: args },
  });
/** A tool result's JSON payload. */
const payload = (res: { body: { result: { content: { text: string }[] } } }) =>
  JSON.parse(res.body.result.content[0]?.text as string);

describe("per-app database slots", () => {
  let a: TestDeveloper;
  let b: TestDeveloper;

  beforeAll(async () => {
    [a, b] = await Promise.all([appWith(HOLD_MARKER), appWith("notes")]);
    // App A fills its slots with a thousand calls at once: past the tests' default caller tier.
    const tier = await apiJson(`/v1/admin/projects/${a.projectId}/app-mcp/config`, {
      token: a.token,
      method: "PATCH",
      json: { rate_limit_per_minute: 60000 },
    });
    expect(tier.status).toBe(200);
    // Warm credentials, metadata and the surfaces: from here on only row statements reach the database.
    for (const [dev, name] of [
      [a, HOLD_MARKER],
      [b, "notes"],
    ] as const) {
      expect((await find(dev, name)).status).toBe(200);
      expect((await toolCall(dev, `${name}_find`, {})).body.result.isError).toBe(false);
    }
  }, 30_000);

  // A test that fails while statements are held lets them go, so the next one starts clean (a
  // failed assertion before the release left them held: the next test timed out behind them).
  afterEach(async () => {
    await control("release");
  });

  it("refuses app A's call past its running and waiting bound while app B's calls are answered; failed statements give their slots back", async () => {
    const { inFlight, waiting } = APP_SLOT_LIMITS;
    await control("hold");
    const filling = Array.from({ length: inFlight + waiting }, () => find(a, HOLD_MARKER));
    await vi.waitFor(() => {
      expect([appSlots.running(a.developerId), appSlots.waiting(a.developerId)]).toEqual([inFlight, waiting]);
    });

    const refused = await find(a, HOLD_MARKER);
    expect(refused.status).toBe(429);
    expect(refused.retryAfter).toBe("1");
    expect(refused.body.error.code).toBe("too_many_concurrent_requests");
    expect(refused.body.error.message).toContain(`${inFlight} database calls running and ${waiting} waiting`);
    const refusedTool = await toolCall(a, `${HOLD_MARKER}_find`, {});
    expect(refusedTool.body.result.isError).toBe(true);
    expect(payload(refusedTool).error.code).toBe("too_many_concurrent_requests");

    // App B, same isolate, same database: answered.
    const other = await find(b, "notes");
    expect(other.status, JSON.stringify(other.body)).toBe(200);
    const otherTool = await toolCall(b, "notes_find", {});
    expect(otherTool.body.result.isError).toBe(false);

    // The held statements fail (statement timeout); the waiting calls then run and are answered.
    const { held: left } = await control("release?as=timeout");
    expect(left).toBe(0);
    const answers = await Promise.all(filling);
    // The held ones fail with the timeout; the waiting ones run — those that have waited past the
    // bound by then (filling a thousand slots takes seconds here) are refused as such, never lost.
    const allowed = ["200 ", "503 database_timeout", "429 too_many_concurrent_requests"];
    const outcomes = answers.map((r) => `${r.status} ${r.body.error?.code ?? ""}`);
    expect(outcomes.filter((o) => !allowed.includes(o))).toEqual([]);
    expect(answers.filter((r) => r.status === 503)).toHaveLength(inFlight);
    expect(answers.filter((r) => r.status === 200).length).toBeGreaterThan(inFlight);
    const late = answers.find((r) => r.status === 429);
    if (late) {
      expect(late.body.error.message).toContain(
        `no database slot for this app within ${APP_SLOT_LIMITS.waitMs / 1000} s`,
      );
    }
    expect([appSlots.running(a.developerId), appSlots.waiting(a.developerId)]).toEqual([0, 0]);

    // No slot leaked: more calls than the bound runs at once are all answered.
    const after = await Promise.all(Array.from({ length: inFlight + 4 }, () => find(a, HOLD_MARKER)));
    expect(after.map((r) => r.status)).toEqual(after.map(() => 200));
  }, 60_000);

  it("gives the slots back when the Worker's own deadline aborts held statements", async () => {
    await control("hold");
    try {
      const path = `/v1/projects/${a.projectId}/collections/${HOLD_MARKER}/find`;
      const aborted = await Promise.all(
        Array.from({ length: APP_SLOT_LIMITS.inFlight }, () => held(path, a.token, {}, 300)),
      );
      expect(aborted.map((r) => r.body.error?.code)).toEqual(aborted.map(() => "database_timeout"));
      expect(appSlots.running(a.developerId)).toBe(0);
    } finally {
      await control("release");
    }
    expect((await find(a, HOLD_MARKER)).status).toBe(200);
  });
});

describe("where budgets", () => {
  it("refuses overlaps / contains past 100 values and lists past 1,000 before the database", async () => {
    const dev = await appWith("tagged");
    const url = `/v1/projects/${dev.projectId}/collections/tagged/find`;
    const rest = (where: unknown) => apiJson(url, { token: dev.token, json: { where } });
    const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`);
    const mcpFind = (where: unknown) =>
      apiJson(`/app/${dev.projectId}/mcp`, {
        token: dev.token,
        headers: { accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18" },
        json: {
          jsonrpc: "2.0",
          id: 1,
          method: "tools/call",
          params: { name: "tagged_find", arguments: { where } },
        },
      });
    expect((await rest({ tags: { overlaps: words(100) } })).status).toBe(200);
    expect((await mcpFind({ tags: { contains: words(100) } })).body.result.isError).toBe(false);

    const fetchSpy = vi.spyOn(globalThis, "fetch");
    try {
      const overlaps = await rest({ tags: { overlaps: words(101) } });
      expect(overlaps.status).toBe(400);
      expect(overlaps.body.error.code).toBe("invalid_input");
      expect(overlaps.body.error.message).toMatch(
        /^where\.tags\.overlaps: overlaps \/ contains take at most 100 values/,
      );
      const json = await rest({ data: { contains: { k: words(100) } } });
      expect(json.status).toBe(400);
      expect(json.body.error.message).toMatch(/^where\.data\.contains: /);
      const lists = await rest({ or: [{ title: { in: words(1000) } }, { title: { nin: ["x"] } }] });
      expect(lists.status).toBe(400);
      expect(lists.body.error.message).toMatch(
        /^where\.or\.1\.title\.nin: in \/ nin \/ overlaps \/ contains lists/,
      );
      const tool = await mcpFind({ tags: { contains: words(101) } });
      expect(tool.body.result.isError).toBe(true);
      expect(JSON.parse(tool.body.result.content[0].text).error.code).toBe("invalid_input");
      expect(requestRoundTrips(fetchSpy)).toBe(0);
    } finally {
      fetchSpy.mockRestore();
    }
  });
});
