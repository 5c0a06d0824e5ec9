/**
 * The app MCP's caller rate-limit tier (`rate_limit_per_minute`: one Rate Limiting binding per tier,
 * at a tenth of production's limits in vitest.config.ts) and 1,000 `tools/call` inserts sent at once
 * through the endpoint: exactly 1,000 rows and exactly 1,000 metered.
 */

import { sql } from "drizzle-orm";
import { describe, expect, it, vi } from "vitest";
import { projectSchemaName } from "../../../src/data/sql.ts";
import {
  api,
  apiJson,
  endUserHeaders,
  expectError,
  signupDeveloper,
  signupUser,
  type TestDeveloper,
  testDb,
} from "../helpers.ts";

const config = (dev: TestDeveloper, json: unknown) =>
  apiJson(`/v1/admin/projects/${dev.projectId}/app-mcp/config`, { method: "PATCH", token: dev.token, json });

/** One JSON-RPC message (or batch) to a project's app MCP; the parsed answer. */
// biome-ignore lint/suspicious/noExplicitAny: tests assert the shape
async function mcp(url: string, headers: Record<string, string>, body: unknown): Promise<any> {
  const res = await api(url, {
    method: "POST",
    body: JSON.stringify(body),
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...headers,
    },
  });
  expect(res.status).toBe(200);
  return res.json();
}

const toolCall = (id: number, name: string, args: unknown) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name, arguments: args },
});

/** How many of 200 `whoami` calls (two batches of 100) the app's limiter refuses. */
async function refusedOf200(dev: TestDeveloper): Promise<number> {
  const url = `/app/${dev.projectId}/mcp`;
  let refused = 0;
  for (let batch = 0; batch < 2; batch++) {
    const calls = Array.from({ length: 100 }, (_, i) => toolCall(i, "my_first_project_whoami", {}));
    const answers = await mcp(url, { authorization: `Bearer ${dev.token}` }, calls);
    for (const answer of answers) if (answer.result.content[0].text.includes("rate_limited")) refused++;
  }
  return refused;
}

describe("app MCP rate_limit_per_minute", () => {
  it("is 6000 by default and accepts exactly the tiers, through REST and the platform MCP", async () => {
    const dev = await signupDeveloper();
    const path = `/v1/admin/projects/${dev.projectId}/app-mcp/config`;
    expect((await apiJson(path, { token: dev.token })).body.rate_limit_per_minute).toBe(6000);
    for (const bad of [0, 1000, 6001, -600, 600.5, "600", null, true]) {
      expectError(await config(dev, { rate_limit_per_minute: bad }), 400, "must be one of 600, 6000, 60000");
    }
    const set = await config(dev, { rate_limit_per_minute: 600 });
    expect(set.status).toBe(200);
    expect(set.body.rate_limit_per_minute).toBe(600);
    expect((await apiJson(path, { token: dev.token })).body.rate_limit_per_minute).toBe(600);

    const platform = (id: number, args: unknown) =>
      mcp("/mcp", { authorization: `Bearer ${dev.token}` }, toolCall(id, "amba_app_mcp_update_config", args));
    const refused = await platform(1, { project_id: dev.projectId, rate_limit_per_minute: 100 });
    expect(refused.result.isError).toBe(true);
    expect(refused.result.content[0].text).toContain("must be one of 600, 6000, 60000");
    const changed = await platform(2, { project_id: dev.projectId, rate_limit_per_minute: 60000 });
    expect(changed.result.isError, JSON.stringify(changed)).toBe(false);
    expect(JSON.parse(changed.result.content[0].text).rate_limit_per_minute).toBe(60000);
  });

  it("limits a caller on its app's tier: the lower tier refuses sooner", async () => {
    // Test limits: 60/min on the 600 tier, 600/min on the default. 200 calls stay under 600, and
    // exceed 60 even when a minute boundary falls between them (at most 2 × 60 pass).
    const low = await signupDeveloper();
    expect((await config(low, { rate_limit_per_minute: 600 })).status).toBe(200);
    const standard = await signupDeveloper();
    expect(await refusedOf200(low)).toBeGreaterThanOrEqual(80);
    expect(await refusedOf200(standard)).toBe(0);
  }, 60_000);

  it("a refused read returns no rows and a refused write writes nothing (reads run while the limiter answers)", async () => {
    const dev = await signupDeveloper();
    const admin = `/v1/admin/projects/${dev.projectId}`;
    const created = await apiJson(`${admin}/collections`, {
      token: dev.token,
      json: { name: "notes", columns: [{ name: "title", type: "text", required: true }] },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(
      (
        await apiJson(`${admin}/app-mcp/exposure`, {
          method: "PUT",
          token: dev.token,
          json: { collections: ["notes"] },
        })
      ).status,
    ).toBe(200);
    const url = `/app/${dev.projectId}/mcp`;
    const developer = { authorization: `Bearer ${dev.token}` };
    const first = await mcp(url, developer, toolCall(1, "notes_insert", { title: "before the limit" }));
    expect(first.result.isError, JSON.stringify(first)).toBe(false);
    expect((await config(dev, { rate_limit_per_minute: 600 })).status).toBe(200);
    expect(await refusedOf200(dev)).toBeGreaterThanOrEqual(80);

    // Past the limit (60/min on this tier in the tests). The local limiter counts in clock-aligned
    // minutes, so a window may roll over in between: send rounds of 20 until refusals come back.
    const roundsUntilRefused = async (call: (i: number) => unknown) => {
      const answers = [];
      for (let round = 0; round < 8; round++) {
        const batch = await mcp(
          url,
          developer,
          Array.from({ length: 20 }, (_, i) => call(round * 20 + i)),
        );
        answers.push(...batch);
        if (batch.some((a: { result: { isError: boolean } }) => a.result.isError)) break;
      }
      const refused = answers.filter((a) => a.result.isError);
      expect(refused.length).toBeGreaterThan(0);
      for (const answer of refused) expect(answer.result.content[0].text).toContain("rate_limited");
      return { answers, refused };
    };
    const reads = await roundsUntilRefused((i) => toolCall(i, i % 2 ? "notes_find" : "notes_list", {}));
    for (const answer of reads.refused)
      expect(answer.result.content[0].text).not.toContain("before the limit");
    const writes = await roundsUntilRefused((i) => toolCall(i, "notes_insert", { title: `w${i}` }));
    const written = writes.answers.length - writes.refused.length;
    const rows = await testDb().execute(
      sql.raw(`select count(*)::int as n from "${projectSchemaName(dev.projectId)}"."notes"`),
    );
    // The first insert plus the allowed ones: a refused insert wrote nothing.
    expect(rows.rows[0]).toEqual({ n: 1 + written });
  }, 60_000);
});

describe("1,000 concurrent tools/call inserts", () => {
  it("writes exactly 1,000 rows and meters exactly 1,000 calls (plus the 2 warm-up calls)", async () => {
    const dev = await signupDeveloper();
    const admin = `/v1/admin/projects/${dev.projectId}`;
    const created = await apiJson(`${admin}/collections`, {
      token: dev.token,
      json: {
        name: "events",
        columns: [
          { name: "title", type: "text", required: true },
          { name: "n", type: "integer" },
        ],
        access: { read: "owner", write: "owner" },
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const exposed = await apiJson(`${admin}/app-mcp/exposure`, {
      method: "PUT",
      token: dev.token,
      json: { collections: ["events"] },
    });
    expect(exposed.status).toBe(200);
    // 700 calls from one developer are over the default tier (600/min in the tests): raise it.
    expect((await config(dev, { rate_limit_per_minute: 60000 })).status).toBe(200);
    const user = await signupUser(dev.projectId, dev.clientKey);

    const url = `/app/${dev.projectId}/mcp`;
    const developer = { authorization: `Bearer ${dev.token}` };
    const endUser = endUserHeaders(dev.clientKey, user.sessionToken);
    // One call per caller first: the burst then finds credentials and surface in the isolate's caches.
    for (const headers of [developer, endUser]) {
      expect((await mcp(url, headers, toolCall(0, "events_list", {}))).result.isError).toBe(false);
    }
    // All 1,000 calls go out at once, as 10 concurrent JSON-RPC batches of 100 (7 developer, 3 end
    // user): the endpoint runs 6 calls of a batch at a time, so 60 are in flight. 1,000 separate
    // requests at once would queue 1,000 statements on the tests' one embedded database connection,
    // past the Worker's 8 s database deadline, and starve the test files running alongside.
    const batches = Array.from({ length: 10 }, (_, b) =>
      mcp(
        url,
        b < 7 ? developer : endUser,
        Array.from({ length: 100 }, (_, i) => {
          const n = b * 100 + i;
          return toolCall(n, "events_insert", { title: `e${n}`, n });
        }),
      ),
    );
    const answers = (await Promise.all(batches)).flat();
    expect(answers).toHaveLength(1000);
    const failed = answers.filter((a) => a.result?.isError !== false);
    expect(failed.slice(0, 3), "failed calls").toEqual([]);

    const rows = await testDb().execute(
      sql.raw(
        `select count(*)::int as n, count(distinct n)::int as distinct_n, count(owner_id)::int as owned from "${projectSchemaName(dev.projectId)}"."events"`,
      ),
    );
    expect(rows.rows[0]).toEqual({ n: 1000, distinct_n: 1000, owned: 300 });
    const metered = async () =>
      (await apiJson(`${admin}/billing`, { token: dev.token })).body.usage.agent_tool_calls as number;
    await vi.waitFor(async () => expect(await metered()).toBe(1002), { timeout: 60_000, interval: 250 });
    // Nothing arrives twice (a flush retried after a lost answer adds nothing).
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(await metered()).toBe(1002);
  }, 240_000);
});
