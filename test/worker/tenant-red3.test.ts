/**
 * Third red team of the multi-tenant edge (branch tenant-red3): a developer with a legitimate
 * account of their own — their projects, client keys, end users — starving another developer of
 * what the isolate and the database share between tenants. One regression test per hole found
 * (each failed before its fix); attacks already covered by tenant-red.test.ts, tenants.test.ts,
 * edge-red.test.ts, cache-red.test.ts and the other audit files are not repeated here.
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
import { mcpPostHeaders, signupDeveloper, type TestDeveloper } from "./helpers.ts";

const MiB = 1024 * 1024;

describe("answer memory per tenant", () => {
  // The Worker app in this module's isolate, so the answer memory the test lowers is its own (as
  // answer-memory.test.ts does).
  const app = createApp();
  const ROWS = 11;

  interface Answer {
    status: number;
    // biome-ignore lint/suspicious/noExplicitAny: tests assert the shape
    body: any;
  }

  async function call(path: string, init: RequestInit = {}, bindings: Partial<Env> = {}): Promise<Answer> {
    const ctx = createExecutionContext();
    const res = await app.fetch(
      new Request(new URL(path, "http://local"), init),
      { ...(env as unknown as Env), ...bindings },
      ctx,
    );
    await waitOnExecutionContext(ctx);
    return { status: res.status, body: await res.json() };
  }

  const auth = (token: string) => ({ authorization: `Bearer ${token}`, "content-type": "application/json" });
  const faultDbUrl = inject("faultDbUrl");
  const control = async (action: string): Promise<{ held: number }> =>
    (await fetch(`${faultDbUrl}/control/${action}`, { method: action === "held" ? "GET" : "POST" })).json();

  /** A project of `token`'s developer whose `big` holds ROWS rows of 40 KB, with `held_rows`, both exposed. */
  async function bigProject(token: string, projectId: string): Promise<void> {
    const admin = `/v1/admin/projects/${projectId}`;
    for (const name of ["big", HOLD_MARKER]) {
      const made = await call(`${admin}/collections`, {
        method: "POST",
        headers: auth(token),
        body: JSON.stringify({ name, columns: [{ name: "body", type: "text" }] }),
      });
      expect(made.status, JSON.stringify(made.body)).toBe(201);
    }
    const exposed = await call(`${admin}/app-mcp/exposure`, {
      method: "PUT",
      headers: auth(token),
      body: JSON.stringify({ collections: ["big", HOLD_MARKER] }),
    });
    expect(exposed.status, JSON.stringify(exposed.body)).toBe(200);
    for (let i = 0; i < ROWS; i++) {
      const row = await call(`/v1/projects/${projectId}/collections/big/rows`, {
        method: "POST",
        headers: auth(token),
        body: JSON.stringify({ body: String(i % 10).repeat(40_000) }),
      });
      expect(row.status, JSON.stringify(row.body)).toBe(201);
    }
  }

  let previous: AnswerMemoryLimits;
  let attacker: TestDeveloper;
  let secondProject: string;
  let victim: TestDeveloper;

  beforeAll(async () => {
    [attacker, victim] = [await signupDeveloper(), await signupDeveloper()];
    const made = await call("/v1/admin/projects", {
      method: "POST",
      headers: auth(attacker.token),
      body: JSON.stringify({ name: "second" }),
    });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    secondProject = made.body.project?.id ?? made.body.id;
    for (const projectId of [attacker.projectId, secondProject]) await bigProject(attacker.token, projectId);
    await bigProject(victim.token, victim.projectId);
    previous = setAnswerMemoryLimitsForTests({ appBytes: 1 * MiB, isolateBytes: 2 * MiB });
  });

  afterAll(() => {
    setAnswerMemoryLimitsForTests(previous);
  });

  it("keeps one developer's apps together to one app's share: two apps of one developer held the isolate's whole answer memory and every other tenant's read was 503 server_busy", async () => {
    // Each request reads a page of `big` (≈ 440 KB), then a row of `held_rows`, which the faulty
    // endpoint holds until released: the page stays charged meanwhile. Two pages fit an app's
    // share (1 MiB here), and the isolate holds two shares (2 MiB): the attacker's two apps, two
    // pages each, held ≈ 1.8 MiB, and the victim's one page did not fit.
    const page = (id: number, name: string, args: Record<string, unknown> = {}) => ({
      jsonrpc: "2.0",
      id,
      method: "tools/call",
      params: { name, arguments: args },
    });
    const refusedBefore = answerMemory.refused;
    await control("hold");
    const requests = [attacker.projectId, attacker.projectId, secondProject, secondProject].map((projectId) =>
      call(
        `/app/${projectId}/mcp`,
        {
          method: "POST",
          headers: mcpPostHeaders(attacker.token),
          body: JSON.stringify([page(1, "big_list", { limit: ROWS }), page(2, `${HOLD_MARKER}_list`)]),
        },
        { LOCAL_DB_URL: `${faultDbUrl}/hold` },
      ),
    );
    let victimRead: Answer;
    let attackerHeld: number;
    try {
      // Every request has settled its page (charged, or refused) and waits on its held statement.
      for (let tries = 0; ; tries++) {
        const settled =
          Math.floor(answerMemory.held() / 400_000) + (answerMemory.refused - refusedBefore) >= 4;
        if ((await control("held")).held === 4 && settled) break;
        if (tries > 1_500) throw new Error("the attacker's requests never reached the hold");
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      // The attacker's developer holds one app's share at most, whichever of their apps reads.
      attackerHeld = answerMemory.held();
      victimRead = await call(`/v1/projects/${victim.projectId}/collections/big/rows?limit=${ROWS}`, {
        headers: auth(victim.token),
      });
    } finally {
      await control("release?as=timeout");
    }
    expect(victimRead.status, JSON.stringify(victimRead.body).slice(0, 300)).toBe(200);
    expect(victimRead.body.rows).toHaveLength(ROWS);
    expect(attackerHeld).toBeLessThanOrEqual(1 * MiB);
    // Of the attacker's four pages, two answered and two were refused with server_busy.
    const pages = (await Promise.all(requests)).map((res) => {
      expect(res.status).toBe(200);
      return (res.body as { id: number; result: { isError: boolean; content: { text: string }[] } }[]).find(
        (r) => r.id === 1,
      )!.result;
    });
    expect(pages.filter((p) => !p.isError)).toHaveLength(2);
    for (const p of pages.filter((p) => p.isError))
      expect(JSON.parse(p.content[0]!.text).error).toMatchObject({ code: "server_busy" });
    expect(answerMemory.held()).toBe(0);
  });
});
