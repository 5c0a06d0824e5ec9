/**
 * Third red team of the multi-tenant edge (branch tenant-red3): a developer with a legitimate
 * account of their own — their projects, client keys, end users — starving another developer of
 * what the isolate and the database share between tenants. One regression test per hole found
 * (each failed before its fix); attacks already covered by tenant-red.test.ts, tenants.test.ts,
 * edge-red.test.ts, cache-red.test.ts and the other audit files are not repeated here.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, inject, it, vi } from "vitest";
import { MAX_PROJECTS_PER_DEVELOPER } from "../../src/accounts/projects.ts";
import {
  type AnswerMemoryLimits,
  answerMemory,
  setAnswerMemoryLimitsForTests,
} from "../../src/answer-memory.ts";
import { APP_SLOT_LIMITS } from "../../src/data/app-slots.ts";
import { appSlots } from "../../src/data/service.ts";
import { createApp } from "../../src/worker/app.ts";
import { CREDENTIAL_SHARE_CHARS, cachedCredential } from "../../src/worker/credential-cache.ts";
import type { Env } from "../../src/worker/env.ts";
import { HOLD_MARKER } from "./fault-endpoint.ts";
import {
  apiJson,
  endUserHeaders,
  freshIp,
  mcpPostHeaders,
  requestRoundTrips,
  signupDeveloper,
  signupUser,
  type TestDeveloper,
  testDb,
  withinOneRateLimitWindow,
} from "./helpers.ts";

const MiB = 1024 * 1024;

// The Worker app in this module's isolate, so the answer memory the tests lower and the database
// slots they read are its own (as answer-memory.test.ts and data/db-cost.test.ts do).
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
/** The faulty endpoint's control (fault-endpoint.ts): `hold`, `held`, `release?as=timeout`. */
const control = async (action: string): Promise<{ held: number }> =>
  (await fetch(`${faultDbUrl}/control/${action}`, { method: action === "held" ? "GET" : "POST" })).json();

/** Polls `done()` every 10 ms; gives up after 15 s (so a failing test stops polling). */
async function until(done: () => Promise<boolean>, what: string): Promise<void> {
  for (let tries = 0; !(await done()); tries++) {
    if (tries > 1_500) throw new Error(`never reached: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

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

/** A developer with two projects (the sign-up's and a second), each a `bigProject`. */
async function developerWithTwoApps(): Promise<{ dev: TestDeveloper; second: string }> {
  const dev = await signupDeveloper();
  const made = await call("/v1/admin/projects", {
    method: "POST",
    headers: auth(dev.token),
    body: JSON.stringify({ name: "second" }),
  });
  expect(made.status, JSON.stringify(made.body)).toBe(201);
  const second: string = made.body.project?.id ?? made.body.id;
  for (const projectId of [dev.projectId, second]) await bigProject(dev.token, projectId);
  return { dev, second };
}

describe("answer memory per tenant", () => {
  let previous: AnswerMemoryLimits;
  let attacker: TestDeveloper;
  let secondProject: string;
  let victim: TestDeveloper;

  beforeAll(async () => {
    ({ dev: attacker, second: secondProject } = await developerWithTwoApps());
    victim = await signupDeveloper();
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
      await until(
        async () =>
          (await control("held")).held === 4 &&
          Math.floor(answerMemory.held() / 400_000) + (answerMemory.refused - refusedBefore) >= 4,
        "the attacker's four requests settled their pages and wait on the hold",
      );
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

describe("database slots per tenant", () => {
  it("runs one developer's apps in one app's slots: a developer's two apps held twice the statements in flight an app may (up to 100 apps, 1,600 backends from one isolate)", async () => {
    // Each call's statement on `held_rows` is held by the faulty endpoint, so it keeps its slot.
    // An app runs 16 at most in an isolate; with a queue per app, the attacker's two apps ran 32 —
    // and 100 projects (what a developer may have) 1,600, where the pooler every tenant shares has
    // ≈ 94 backends on Neon's smallest compute.
    const { dev: attacker, second } = await developerWithTwoApps();
    const victim = await signupDeveloper();
    await bigProject(victim.token, victim.projectId);
    const { inFlight } = APP_SLOT_LIMITS;
    const holdEnv = { LOCAL_DB_URL: `${faultDbUrl}/hold`, DB_TIMEOUT_MS: "30000" };
    const find = (projectId: string) =>
      call(
        `/v1/projects/${projectId}/collections/${HOLD_MARKER}/find`,
        { method: "POST", headers: auth(attacker.token), body: "{}" },
        holdEnv,
      );
    const keys = [attacker.projectId, second, attacker.developerId];
    const queued = () => keys.reduce((sum, key) => sum + appSlots.running(key) + appSlots.waiting(key), 0);
    await control("hold");
    const calls = [attacker.projectId, second].flatMap((projectId) =>
      Array.from({ length: inFlight }, () => find(projectId)),
    );
    let heldAtOnce: number;
    let victimRead: Answer;
    try {
      await until(async () => queued() === 2 * inFlight, "every call of the attacker runs or waits");
      await until(async () => (await control("held")).held >= inFlight, "a full set of slots is held");
      heldAtOnce = (await control("held")).held;
      // Another developer's read, in the same isolate, is answered meanwhile.
      victimRead = await call(`/v1/projects/${victim.projectId}/collections/big/find`, {
        method: "POST",
        headers: auth(victim.token),
        body: JSON.stringify({ limit: 1 }),
      });
    } finally {
      await control("release?as=timeout");
    }
    expect(heldAtOnce).toBe(inFlight);
    expect(victimRead.status, JSON.stringify(victimRead.body).slice(0, 300)).toBe(200);
    // The held statements fail with the statement timeout; the waiting ones then run.
    const outcomes = (await Promise.all(calls)).map((r) => `${r.status} ${r.body.error?.code ?? ""}`);
    expect(outcomes.filter((o) => o !== "200 " && o !== "503 database_timeout")).toEqual([]);
    expect(outcomes.filter((o) => o === "503 database_timeout")).toHaveLength(inFlight);
    expect(queued()).toBe(0);
  }, 60_000);
});

describe("credential cache per tenant", () => {
  it("keeps one developer's apps' cached credentials to one app's share: a developer's eight apps pushed every other tenant's resolutions out of the isolate", async () => {
    // An app keeps at most a quarter of the cached principals (CREDENTIAL_SHARE_CHARS), so that one
    // app's thousands of end users cannot push out every other app's. A developer has up to 100
    // apps, though — and can present any number of valid credentials for each (end users it signs
    // up, its own developer tokens): four apps' shares were the whole budget, and every other
    // tenant's next call went back to the database.
    const victim = {
      principal: { project: { id: crypto.randomUUID(), metaRev: 1, developerId: "victim" } },
      config: {},
    };
    let victimLoads = 0;
    const loadVictim = async () => {
      victimLoads++;
      return victim;
    };
    const victimKey = `tenant-red3-victim-${crypto.randomUUID()}`;
    await cachedCredential(victimKey, loadVictim);
    const attacker = crypto.randomUUID();
    const apps = Array.from({ length: 8 }, () => crypto.randomUUID());
    const resolution = (app: string, i: number) => ({
      principal: {
        project: { id: app, metaRev: 1, developerId: attacker },
        user: { id: `user-${i}` },
      },
      config: {},
    });
    const weight =
      `tenant-red3-${apps[0]}-0`.length + JSON.stringify(resolution(apps[0]!, 0).principal).length;
    for (const app of apps)
      for (let i = 0; i * weight <= CREDENTIAL_SHARE_CHARS; i++)
        await cachedCredential(`tenant-red3-${app}-${i}`, async () => resolution(app, i));
    await cachedCredential(victimKey, loadVictim);
    expect(victimLoads).toBe(1);
  });
});

describe("slug space", () => {
  it("bounds the released slugs one developer keeps reserved: one project changing its slug in a loop reserved every name it passed through for 30 days", async () => {
    // A released slug is reserved for 30 days for the developer who released it (another
    // developer's claim is 409). The reservation came with every release, and one project may
    // change its slug as often as the control-plane rate limit allows (1,200 a minute): one project
    // reserved any number of names — a dictionary's worth a day — that no one else could take.
    const [squatter, other] = [await signupDeveloper(), await signupDeveloper()];
    const config = (dev: TestDeveloper, slug: string | null) =>
      call(`/v1/admin/projects/${dev.projectId}/app-mcp/config`, {
        method: "PATCH",
        headers: auth(dev.token),
        body: JSON.stringify({ slug }),
      });
    const tag = crypto.randomUUID().slice(0, 8);
    const slugs = Array.from({ length: MAX_PROJECTS_PER_DEVELOPER + 5 }, (_, i) => `squat-${tag}-${i}`);
    for (const slug of slugs) expect((await config(squatter, slug)).status).toBe(200);
    expect((await config(squatter, null)).status).toBe(200);
    // The developer keeps their newest releases reserved — as many as they may have projects —
    // and the oldest ones are free for others again.
    for (const slug of slugs.slice(0, 5)) {
      const res = await config(other, slug);
      expect(res.status, `${slug}: ${JSON.stringify(res.body)}`).toBe(200);
    }
    const reserved = await config(other, slugs.at(-1)!);
    expect(reserved.status).toBe(409);
    expect(reserved.body.error.message).toContain("reserved until");
    const { rows } = await testDb().execute(
      sql`select count(*)::int as n from released_slugs where developer_id = ${squatter.developerId}::uuid`,
    );
    expect((rows[0] as { n: number }).n).toBe(MAX_PROJECTS_PER_DEVELOPER);
    // The squatter still takes one of its reserved slugs back at once.
    expect((await config(squatter, slugs.at(-2)!)).status).toBe(200);
  }, 120_000);
});

describe("events and the storage quota", () => {
  it("keeps an app's data writable when anonymous events fill its quota: anyone holding its public client key locked every insert and update of the app with 403 quota_exceeded", async () => {
    // A client key is public (it ships in the app's web client) and `POST /v1/events` takes it
    // without a session, so anyone can send an app events — which count in the app's storage quota
    // (2 MiB in the tests). Row writes were refused while the app's tables *and events* were over
    // it: three anonymous batches locked the app's own data writes, its end users' and its developer's.
    const victim = await signupDeveloper();
    const user = await signupUser(victim.projectId, victim.clientKey);
    const notes = await apiJson(`/v1/admin/projects/${victim.projectId}/collections`, {
      token: victim.token,
      json: {
        name: "notes",
        columns: [{ name: "body", type: "text" }],
        access: { read: "owner", write: "owner" },
      },
    });
    expect(notes.status, JSON.stringify(notes.body)).toBe(201);
    const rows = `/v1/projects/${victim.projectId}/collections/notes/rows`;
    expect(
      (
        await apiJson(rows, {
          headers: endUserHeaders(victim.clientKey, user.sessionToken),
          json: { body: "before" },
        })
      ).status,
    ).toBe(201);
    const flood = {
      events: Array.from({ length: 100 }, () => ({ name: "x", properties: { blob: "x".repeat(8000) } })),
    };
    const anonymous = () =>
      apiJson("/v1/events", {
        apiKey: victim.clientKey,
        headers: { "cf-connecting-ip": freshIp() },
        json: flood,
      });
    for (let i = 0; i < 3; i++) expect((await anonymous()).status).toBe(201);
    // Once a background measurement has seen the app over its quota, more events are refused (the
    // quota still bounds what events may take)…
    await vi.waitFor(
      async () => {
        expect((await anonymous()).status).toBe(403);
      },
      { timeout: 20_000, interval: 250 },
    );
    // …but the app's data stays writable: its tables are far under the quota.
    const insert = await apiJson(rows, {
      headers: endUserHeaders(victim.clientKey, user.sessionToken),
      json: { body: "after" },
    });
    expect(insert.status, JSON.stringify(insert.body)).toBe(201);
    const patched = await apiJson(`${rows}/${insert.body.id}`, {
      method: "PATCH",
      headers: endUserHeaders(victim.clientKey, user.sessionToken),
      json: { body: "edited" },
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect((await apiJson(rows, { token: victim.token, json: { body: "developer" } })).status).toBe(201);
  }, 60_000);
});

describe("failed credential checks of a shared address", () => {
  it("lets a credential this isolate has resolved through an address's exhausted budget: one tenant's made-up tokens from a shared egress (NAT, CI runners, a hosted assistant) locked every other tenant there out of the admin API", async () => {
    // The budget of failed checks is per client address (100 a minute in the tests), and many
    // tenants may share one. Past it, every check of a credential the credential cache does not hold
    // was refused — the admin API, the console and the platform MCP cache none, and the hot routes
    // hold one for 5 s — so a tenant sending made-up tokens locked every other tenant at that
    // address out, for as long as it kept failing.
    await withinOneRateLimitWindow(60, 15_000);
    const shared = freshIp();
    const [attacker, victim] = [await signupDeveloper(), await signupDeveloper()];
    const projects = (token: string) =>
      apiJson("/v1/admin/projects", { token, headers: { "cf-connecting-ip": shared } });
    expect((await projects(victim.token)).status).toBe(200);
    const forged = `${attacker.token.slice(0, -1)}${attacker.token.endsWith("a") ? "b" : "a"}`;
    let status = 401;
    for (let sent = 0; status === 401 && sent < 300; sent++) status = (await projects(forged)).status;
    expect(status).toBe(429);
    // The victim's token, resolved here before, still works from the shared address…
    const victims = await projects(victim.token);
    expect(victims.status, JSON.stringify(victims.body)).toBe(200);
    expect(victims.body.projects.map((p: { id: string }) => p.id)).toEqual([victim.projectId]);
    // …while made-up tokens, and a token this isolate has not resolved yet, are still refused
    // before the database.
    expect((await projects(forged)).status).toBe(429);
    const fresh = await signupDeveloper();
    expect((await projects(fresh.token)).status).toBe(429);
    // A resolved token that stops resolving (revoked) loses its pass at its first failure.
    const second = await apiJson("/v1/admin/tokens", {
      token: victim.token,
      headers: { "cf-connecting-ip": freshIp() },
      json: {},
    });
    expect(second.status, JSON.stringify(second.body)).toBe(201);
    const [token] = (
      await apiJson("/v1/admin/tokens", { token: victim.token, headers: { "cf-connecting-ip": freshIp() } })
    ).body.tokens;
    const revoked = await apiJson(`/v1/admin/tokens/${token.id}`, {
      method: "DELETE",
      token: victim.token,
      headers: { "cf-connecting-ip": freshIp() },
    });
    expect(revoked.status, JSON.stringify(revoked.body)).toBe(200);
    // Its first check reaches the database and fails (a 401, or the address's 429 once counted)…
    expect([401, 429]).toContain((await projects(victim.token)).status);
    // …and the next is refused before the database, as any failing credential from there.
    const fetchSpy = vi.spyOn(globalThis, "fetch");
    try {
      expect((await projects(victim.token)).status).toBe(429);
      expect(requestRoundTrips(fetchSpy)).toBe(0);
    } finally {
      fetchSpy.mockRestore();
    }
  }, 60_000);
});
