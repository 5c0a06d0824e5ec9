/**
 * What database answers one isolate holds (src/answer-memory.ts): every answer the Worker's database
 * fetch reads is charged to the request that sent it until that request has answered; past the
 * isolate's budget or an app's share a read fails cleanly — REST 503 `server_busy` with a
 * `Retry-After`, an `isError` tool result on the app MCP — nothing is written, nothing metered, and
 * every charge is given back (also for a request that failed, or whose client went away and never
 * reached its release). The bounds are lowered for these tests: 1 MiB per app, 2 MiB per isolate,
 * against pages of ≈ 440 KB (11 rows of 40 KB).
 */

import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  type AnswerMemoryLimits,
  answerMemory,
  setAnswerMemoryLimitsForTests,
} from "../../src/answer-memory.ts";
import { createApp } from "../../src/worker/app.ts";
import type { Env } from "../../src/worker/env.ts";
import { HOLD_MARKER } from "./fault-endpoint.ts";
import { developerExposing, mcpPostHeaders, type TestDeveloper } from "./helpers.ts";

const app = createApp();
const MiB = 1024 * 1024;
const ROWS = 11;

interface Answer {
  status: number;
  retryAfter: string | null;
  // biome-ignore lint/suspicious/noExplicitAny: tests assert the shape
  body: any;
}

/** Call the Worker app in this module's isolate (the answer memory the test lowers is its own). */
async function call(path: string, init: RequestInit = {}, bindings: Partial<Env> = {}): Promise<Answer> {
  const ctx = createExecutionContext();
  const workerEnv = { ...(env as unknown as Env), ...bindings };
  const res = await app.fetch(new Request(new URL(path, "http://local"), init), workerEnv, ctx);
  await waitOnExecutionContext(ctx);
  return { status: res.status, retryAfter: res.headers.get("retry-after"), body: await res.json() };
}

const auth = (dev: TestDeveloper) => ({
  authorization: `Bearer ${dev.token}`,
  "content-type": "application/json",
});
const rowsPath = (dev: TestDeveloper) => `/v1/projects/${dev.projectId}/collections/big/rows`;
const readPage = (dev: TestDeveloper) => call(`${rowsPath(dev)}?limit=${ROWS}`, { headers: auth(dev) });
const listCall = (id: number) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name: "big_list", arguments: { limit: ROWS } },
});
const mcp = (dev: TestDeveloper, body: unknown, bindings: Partial<Env> = {}) =>
  call(
    `/app/${dev.projectId}/mcp`,
    { method: "POST", headers: mcpPostHeaders(dev.token), body: JSON.stringify(body) },
    bindings,
  );

const faultDbUrl = inject("faultDbUrl");
/** The faulty endpoint's control (fault-endpoint.ts): `hold`, `held`, `release?as=timeout`. */
async function control(action: string): Promise<{ held: number }> {
  const res = await fetch(`${faultDbUrl}/control/${action}`, { method: action === "held" ? "GET" : "POST" });
  return res.json();
}
/** Wait until `done()` (polls; gives up after 15 s, so a failing test stops polling). */
async function until(done: () => Promise<boolean>): Promise<void> {
  for (let tries = 0; !(await done()); tries++) {
    if (tries > 1_500) throw new Error("the requests never reached the expected state");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
const usage = async (dev: TestDeveloper) =>
  (await call(`/v1/admin/projects/${dev.projectId}/billing`, { headers: auth(dev) })).body.usage;

const expectBusy = (res: Answer) => {
  expect(res.status, JSON.stringify(res.body)).toBe(503);
  expect(res.body).toEqual({ error: { code: "server_busy", message: expect.any(String) } });
  expect(res.retryAfter).toBe("1");
};

/** A project whose `big` collection holds ROWS rows of 40 KB each (and an empty `held_rows`). */
async function bigProject(): Promise<TestDeveloper> {
  const dev = await developerExposing({ name: "big", columns: [{ name: "body", type: "text" }] });
  const admin = `/v1/admin/projects/${dev.projectId}`;
  const held = await call(`${admin}/collections`, {
    method: "POST",
    headers: auth(dev),
    body: JSON.stringify({ name: HOLD_MARKER, columns: [{ name: "title", type: "text" }] }),
  });
  expect(held.status, JSON.stringify(held.body)).toBe(201);
  const exposed = await call(`${admin}/app-mcp/exposure`, {
    method: "PUT",
    headers: auth(dev),
    body: JSON.stringify({ collections: ["big", HOLD_MARKER] }),
  });
  expect(exposed.status, JSON.stringify(exposed.body)).toBe(200);
  for (let i = 0; i < ROWS; i++) {
    const res = await call(rowsPath(dev), {
      method: "POST",
      headers: auth(dev),
      body: JSON.stringify({ body: String(i % 10).repeat(40_000) }),
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }
  return dev;
}

let previous: AnswerMemoryLimits;
let a: TestDeveloper;
let b: TestDeveloper;

beforeAll(async () => {
  [a, b] = [await bigProject(), await bigProject()];
  previous = setAnswerMemoryLimitsForTests({ appBytes: 1 * MiB, isolateBytes: 2 * MiB });
});

afterAll(() => {
  setAnswerMemoryLimitsForTests(previous);
});

describe("answer memory per isolate", () => {
  it("one read fits and gives back everything it held once answered", async () => {
    const res = await readPage(a);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.rows).toHaveLength(ROWS);
    expect(answerMemory.held()).toBe(0);
  });

  it("a JSON-RPC batch holds its answers until it has answered: past the app's share the rest are isError server_busy", async () => {
    const batch = await mcp(
      a,
      Array.from({ length: 4 }, (_, i) => listCall(i)),
    );
    expect(batch.status).toBe(200);
    const results = (batch.body as { result: { isError: boolean; content: { text: string }[] } }[]).map(
      (r) => r.result,
    );
    expect(results).toHaveLength(4);
    const answered = results.filter((r) => !r.isError);
    const refused = results.filter((r) => r.isError);
    expect(answered.length).toBeGreaterThan(0);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused)
      expect(JSON.parse(r.content[0]!.text).error).toMatchObject({ code: "server_busy" });
    expect(answerMemory.held()).toBe(0);
  });

  it("parallel large reads: each answers or is refused with 503 server_busy, none 500, and all is given back", async () => {
    // Against the local database these seldom overlap (it answers one statement at a time): see
    // the next test for reads that are held in flight together.
    const all = await Promise.all(Array.from({ length: 8 }, () => readPage(a)));
    for (const res of all) {
      if (res.status === 200) expect(res.body.rows).toHaveLength(ROWS);
      else expectBusy(res);
    }
    expect(all.some((res) => res.status === 200)).toBe(true);
    expect(answerMemory.held()).toBe(0);
    expect((await readPage(a)).status).toBe(200);
  });

  it("N requests in flight together: two pages fit the app's share, the rest are isError server_busy; a failed request gives everything back", async () => {
    // Each request reads a page of `big` and a row of `held_rows`, which the faulty endpoint holds
    // until released: every request keeps its page charged while the others read theirs.
    const N = 4;
    const refusedBefore = answerMemory.refused;
    await control("hold");
    const requests = Array.from({ length: N }, () =>
      mcp(a, [listCall(1), { ...listCall(2), params: { name: `${HOLD_MARKER}_list`, arguments: {} } }], {
        LOCAL_DB_URL: `${faultDbUrl}/hold`,
      }),
    );
    try {
      // Two pages (≈ 440 KB each) fit 1 MiB, a third does not: the other N − 2 are refused.
      await until(
        async () => (await control("held")).held === N && answerMemory.refused - refusedBefore >= N - 2,
      );
    } finally {
      await control("release?as=timeout");
    }
    const answers = await Promise.all(requests);
    const pages = answers.map((res) => {
      expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(200);
      const [page, held] = (
        res.body as { id: number; result: { isError: boolean; content: { text: string }[] } }[]
      )
        .sort((x, y) => x.id - y.id)
        .map((r) => r.result);
      expect(held!.isError).toBe(true);
      expect(JSON.parse(held!.content[0]!.text).error).toMatchObject({ code: "database_timeout" });
      return page!;
    });
    const answered = pages.filter((p) => !p.isError);
    expect(answered).toHaveLength(2);
    for (const p of answered) expect(JSON.parse(p.content[0]!.text).rows).toHaveLength(ROWS);
    for (const p of pages.filter((p) => p.isError))
      expect(JSON.parse(p.content[0]!.text).error).toMatchObject({ code: "server_busy" });
    expect(answerMemory.refused - refusedBefore).toBe(N - 2);
    expect(answerMemory.held()).toBe(0);
    expect((await readPage(a)).status).toBe(200);
  });

  it("an app holding its share is refused (REST 503, MCP isError, nothing metered, nothing written); another app reads", async () => {
    const usageBefore = (await usage(a)).agent_tool_calls;
    // What a's other requests hold: its share but 100 KB (room for the requests' small reads).
    const other = answerMemory.open(a.projectId);
    answerMemory.charge(other, 1 * MiB - 100 * 1024);
    try {
      expectBusy(await readPage(a));
      // The same app, its id spelt another way, counts against the same share.
      const spelt = a.projectId.toUpperCase().replace(/^./, (c) => `%${c.charCodeAt(0).toString(16)}`);
      expectBusy(
        await call(`/v1/projects/${spelt}/collections/big/rows?limit=${ROWS}`, { headers: auth(a) }),
      );
      const tool = await mcp(a, listCall(1));
      expect(tool.status).toBe(200);
      expect(tool.body.result.isError).toBe(true);
      expect(JSON.parse(tool.body.result.content[0].text).error).toMatchObject({ code: "server_busy" });
      // A write is refused before it is sent when the share is held whole.
      answerMemory.charge(other, 100 * 1024);
      const insert = await call(rowsPath(a), {
        method: "POST",
        headers: auth(a),
        body: JSON.stringify({ body: "never" }),
      });
      expectBusy(insert);
      // Another app's reads go on.
      const theirs = await readPage(b);
      expect(theirs.status, JSON.stringify(theirs.body)).toBe(200);
      expect(answerMemory.held()).toBe(1 * MiB);
    } finally {
      answerMemory.release(other);
    }
    expect(answerMemory.held()).toBe(0);
    const after = await readPage(a);
    expect(after.status).toBe(200);
    expect(after.body.rows).toHaveLength(ROWS);
    expect(after.body.rows.some((r: { body: string }) => r.body === "never")).toBe(false);
    expect((await usage(a)).agent_tool_calls).toBe(usageBefore);
  });

  it("an app addressed by its hostname reads in the same share as by its id; a developer's platform requests in one share of their own", async () => {
    const slug = `share-${crypto.randomUUID().slice(0, 8)}`;
    const config = await call(`/v1/admin/projects/${a.projectId}/app-mcp/config`, {
      method: "PATCH",
      headers: auth(a),
      body: JSON.stringify({ slug }),
    });
    expect(config.status, JSON.stringify(config.body)).toBe(200);
    const byHost = () =>
      call(`http://${slug}.mcp.amba.host/mcp`, {
        method: "POST",
        headers: mcpPostHeaders(a.token),
        body: JSON.stringify(listCall(1)),
      });
    const free = await byHost();
    expect(free.body.result.isError, JSON.stringify(free.body)).toBeFalsy();

    const other = answerMemory.open(a.projectId);
    answerMemory.charge(other, 1 * MiB);
    try {
      // Was its own share ("host:<slug>"): a second 1 MiB for the same app.
      const tool = await byHost();
      expect(tool.status).toBe(200);
      expect(tool.body.result.isError).toBe(true);
      expect(JSON.parse(tool.body.result.content[0].text).error).toMatchObject({ code: "server_busy" });
    } finally {
      answerMemory.release(other);
    }

    // The developer's platform requests (no project in the path) are theirs, not everyone's.
    const developerShare = answerMemory.open(`developer:${a.developerId}`);
    answerMemory.charge(developerShare, 1 * MiB);
    try {
      expectBusy(await call("/v1/admin/projects", { headers: auth(a) }));
      const theirs = await call("/v1/admin/projects", { headers: auth(b) });
      expect(theirs.status, JSON.stringify(theirs.body)).toBe(200);
    } finally {
      answerMemory.release(developerShare);
    }
    expect(answerMemory.held()).toBe(0);
    expect((await byHost()).body.result.isError).toBeFalsy();
  });

  it("past the isolate's budget every app's large read is refused", async () => {
    const first = answerMemory.open("some-app");
    const second = answerMemory.open("another-app");
    answerMemory.charge(first, 1 * MiB);
    answerMemory.charge(second, 1 * MiB - 300 * 1024);
    try {
      expectBusy(await readPage(b));
    } finally {
      answerMemory.release(first);
      answerMemory.release(second);
    }
    expect((await readPage(b)).status).toBe(200);
  });

  it("a hold its request never released (client gone, request cancelled) lapses after the lease", async () => {
    const lowered = setAnswerMemoryLimitsForTests({ leaseMs: 200 });
    try {
      const abandoned = answerMemory.open(a.projectId);
      answerMemory.charge(abandoned, 1 * MiB);
      expectBusy(await readPage(a));
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect(answerMemory.held()).toBe(0);
      expect(abandoned.lapsed).toBe(true);
      expect((await readPage(a)).status).toBe(200);
    } finally {
      setAnswerMemoryLimitsForTests({ leaseMs: lowered.leaseMs });
    }
  });

  it("a request that outlives the lease gets no more answers (its bytes are no longer counted)", async () => {
    const lowered = setAnswerMemoryLimitsForTests({ leaseMs: 100 });
    await control("hold");
    let slow: Promise<Answer> | undefined;
    try {
      slow = call(
        `/v1/projects/${a.projectId}/collections/${HOLD_MARKER}/rows`,
        { headers: auth(a) },
        { LOCAL_DB_URL: `${faultDbUrl}/hold` },
      );
      await until(async () => (await control("held")).held === 1);
      await new Promise((resolve) => setTimeout(resolve, 300));
    } finally {
      await control("release");
      setAnswerMemoryLimitsForTests({ leaseMs: lowered.leaseMs });
    }
    expectBusy(await slow!);
    expect(answerMemory.held()).toBe(0);
    expect((await readPage(a)).status).toBe(200);
  });
});
