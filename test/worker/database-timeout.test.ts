/**
 * A hanging database (finding 7): the same Worker app, given a database endpoint that never answers
 * (`fault-endpoint.ts`) and a 1.5 s deadline, answers 503 `database_timeout` on REST, the app MCP
 * and /healthz instead of hanging; a tool call whose query hangs after authentication is an
 * `isError` result; nothing is metered, nothing is written, and the database answers the next request.
 */

import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, inject, it } from "vitest";
import { createApp } from "../../src/worker/app.ts";
import type { Env } from "../../src/worker/env.ts";
import { HANG_MARKER } from "./fault-endpoint.ts";
import {
  apiJson,
  billingUsage,
  developerExposing,
  expectError,
  mcpPostHeaders,
  signupDeveloper,
} from "./helpers.ts";

const faultDbUrl = inject("faultDbUrl");
const app = createApp();

/** Call the Worker app with its database behind the faulty endpoint (`/hang` or `/sql`). */
async function faulty(mode: "hang" | "sql", path: string, init: RequestInit = {}) {
  const faultEnv: Env = {
    ...(env as unknown as Env),
    LOCAL_DB_URL: `${faultDbUrl}/${mode}`,
    DB_TIMEOUT_MS: "1500",
  };
  const ctx = createExecutionContext();
  const res = await app.fetch(new Request(new URL(path, "http://local"), init), faultEnv, ctx);
  await waitOnExecutionContext(ctx);
  return { status: res.status, body: await res.json<{ [key: string]: unknown }>() };
}

const rpc = (token: string, method: string, params: unknown) => ({
  method: "POST",
  headers: mcpPostHeaders(token),
  body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
});

const TIMEOUT = {
  code: "database_timeout",
  message: "the database did not answer within 1500 ms; try again",
};

const usage = billingUsage;

/** A developer whose project exposes a `hang_rows` collection (created through the healthy database). */
const setup = () => developerExposing({ name: HANG_MARKER, columns: [{ name: "title", type: "text" }] });

describe("the whole database hangs", () => {
  it("/healthz answers 503", async () => {
    const res = await faulty("hang", "/healthz");
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ ok: false, database: { ok: false, error: "database_timeout" } });
  });

  it("REST answers 503 database_timeout", async () => {
    const dev = await signupDeveloper();
    const res = await faulty("hang", "/v1/admin/projects", {
      headers: { authorization: `Bearer ${dev.token}` },
    });
    expect(res).toEqual({ status: 503, body: { error: TIMEOUT } });
  });

  it("sign-in answers 503 database_timeout", async () => {
    const dev = await signupDeveloper();
    const res = await faulty("hang", "/v1/auth/signin", {
      method: "POST",
      headers: { "x-api-key": dev.clientKey, "content-type": "application/json" },
      body: JSON.stringify({ email: "nobody@example.com", password: "whatever1" }),
    });
    expect(res).toEqual({ status: 503, body: { error: TIMEOUT } });
  });

  it("an app MCP tools/call answers 503 and is not metered", async () => {
    const dev = await setup();
    const res = await faulty(
      "hang",
      `/app/${dev.projectId}/mcp`,
      rpc(dev.token, "tools/call", { name: `${HANG_MARKER}_list`, arguments: {} }),
    );
    expect(res).toEqual({ status: 503, body: { error: TIMEOUT } });
    expect((await usage(dev)).agent_tool_calls).toBe(0);
  });
});

describe("one table hangs, the rest of the database answers", () => {
  it("a tool call whose query hangs is an isError result; nothing metered", async () => {
    const dev = await setup();
    const res = await faulty(
      "sql",
      `/app/${dev.projectId}/mcp`,
      rpc(dev.token, "tools/call", { name: `${HANG_MARKER}_list`, arguments: {} }),
    );
    expect(res.status).toBe(200);
    const result = res.body.result as { isError: boolean; content: { text: string }[] };
    expect(result.isError).toBe(true);
    expect(JSON.parse(result.content[0]!.text)).toEqual({ error: TIMEOUT });
    expect((await usage(dev)).agent_tool_calls).toBe(0);
  });

  it("REST reads and writes answer 503; nothing is written; the database answers the next request", async () => {
    const dev = await setup();
    const rows = `/v1/projects/${dev.projectId}/collections/${HANG_MARKER}/rows`;
    const auth = { authorization: `Bearer ${dev.token}`, "content-type": "application/json" };
    expect(await faulty("sql", rows, { headers: auth })).toEqual({ status: 503, body: { error: TIMEOUT } });
    const insert = await faulty("sql", rows, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ title: "x" }),
    });
    expect(insert).toEqual({ status: 503, body: { error: TIMEOUT } });

    const after = await apiJson(rows, { token: dev.token });
    expect(after.status).toBe(200);
    expect(after.body.rows).toEqual([]);
    expectError(
      await faulty("sql", `/v1/admin/projects/${dev.projectId}/functions/none/versions`, { headers: auth }),
      404,
    );
  });
});
