/**
 * Red-team findings on the edge service, one regression test each (each failed before its fix):
 * the SDK data routes were not rate limited at all (one caller could keep the shared database busy
 * without bound), `like` patterns of any length (a single request could hold the database for
 * minutes), Postgres system column names answered 409 "retry" instead of 400, and a function
 * answering HTTP 600 made the invoke route answer 500, OAuth dynamic client registration (open,
 * stored without expiry) had no limit, nothing bounded how many tables one developer could add to
 * the shared database, and a page of big rows was read whole into the isolate every tenant's
 * requests share. One project and its end users are shared by every case.
 */
import { type SQL, sql } from "drizzle-orm";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { MAX_PROJECTS_PER_DEVELOPER } from "../../src/accounts/projects.ts";
import { MAX_COLLECTIONS_PER_PROJECT, MAX_PROJECT_COLUMN_BYTES } from "../../src/data/collections.ts";
import { projectSchemaName } from "../../src/data/sql.ts";
import { MAX_RESULT_BYTES } from "../../src/worker/db.ts";
import {
  api,
  apiJson,
  endUserHeaders,
  expectError,
  signupDeveloper,
  signupUser,
  type TestDeveloper,
  testDb,
  withinOneRateLimitWindow,
} from "./helpers.ts";

const NOTES = {
  name: "notes",
  columns: [{ name: "title", type: "text" }],
  access: { read: "owner", write: "owner" },
};

describe("edge audit", () => {
  let dev: TestDeveloper;
  let alice: Record<string, string>;
  let bob: Record<string, string>;
  const rows = () => `/v1/projects/${dev.projectId}/collections/notes`;

  beforeAll(async () => {
    dev = await signupDeveloper();
    const made = await apiJson(`/v1/admin/projects/${dev.projectId}/collections`, {
      token: dev.token,
      json: NOTES,
    });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const [a, b] = await Promise.all([
      signupUser(dev.projectId, dev.clientKey),
      signupUser(dev.projectId, dev.clientKey),
    ]);
    alice = endUserHeaders(dev.clientKey, a.sessionToken);
    bob = endUserHeaders(dev.clientKey, b.sessionToken);
  });

  it("refuses a long like pattern with 400 before the database sees it", async () => {
    const find = (like: string) =>
      apiJson(`${rows()}/find`, { headers: alice, json: { where: { title: { like } } } });
    expect((await find(`%${"a".repeat(200)}%`)).status).toBe(200);
    expectError(await find(`%${"a".repeat(100_000)}b`), 400, "where.title.like: patterns are at most 256");
  });

  it("refuses a Postgres system column name with 400, not 409 retry", async () => {
    const res = await apiJson(`/v1/admin/projects/${dev.projectId}/collections/notes`, {
      method: "PATCH",
      token: dev.token,
      json: { add_columns: [{ name: "ctid", type: "text" }] },
    });
    expectError(res, 400, '"ctid" is a Postgres system column name');
  });

  it("answers 502 when a function answers a status no Response can carry (was a 500)", async () => {
    const url = `${inject("echoUrl")}/status/600`;
    const deployed = await apiJson(`/v1/admin/projects/${dev.projectId}/functions/deploy`, {
      token: dev.token,
      json: { name: "odd_status", url },
    });
    expect(deployed.status).toBe(201);
    const invoked = await apiJson(`/v1/projects/${dev.projectId}/functions/odd_status/invoke`, {
      headers: alice,
      json: {},
    });
    expectError(invoked, 502, "function answered with HTTP status 600");
  });

  it("holds a caller of the SDK data routes to the app's tier; other callers keep theirs", async () => {
    const tier = await apiJson(`/v1/admin/projects/${dev.projectId}/app-mcp/config`, {
      method: "PATCH",
      token: dev.token,
      json: { rate_limit_per_minute: 600 },
    });
    expect(tier.status).toBe(200);
    // The 600 tier is 60 a minute under vitest.config.ts. 130 requests exceed two windows' worth
    // (the local binding counts in clock-aligned windows), so some are refused wherever one rolls over.
    // A row id that cannot exist is a 404 after the count, without a query: cheap to send.
    const statuses: number[] = [];
    for (let wave = 0; wave < 13; wave++) {
      const answers = await Promise.all(
        Array.from({ length: 10 }, () => api(`${rows()}/rows/none`, { headers: alice })),
      );
      for (const res of answers) {
        statuses.push(res.status);
        if (res.status === 429) {
          expect(res.headers.get("retry-after")).toBe("60");
          expect(await res.json()).toMatchObject({ error: { code: "rate_limited" } });
        } else await res.body?.cancel();
      }
    }
    expect(statuses.filter((s) => s !== 404 && s !== 429)).toEqual([]);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(10);
    expect((await apiJson(`${rows()}/rows`, { headers: bob })).status).toBe(200);
  });

  it("limits OAuth client registrations per address (each is stored without expiry)", async () => {
    const register = () =>
      api("https://mcp.amba.dev/oauth/register", {
        method: "POST",
        headers: { "content-type": "application/json", "cf-connecting-ip": "203.0.113.77" },
        body: JSON.stringify({
          redirect_uris: ["http://127.0.0.1:9/cb"],
          token_endpoint_auth_method: "none",
        }),
      });
    // AUTH_IP_RATE_LIMITER allows 60 a minute per address; its windows are clock-aligned.
    await withinOneRateLimitWindow(60, 5_000);
    const statuses: number[] = [];
    for (let wave = 0; wave < 6; wave++) {
      const answers = await Promise.all(Array.from({ length: 10 }, register));
      statuses.push(...answers.map((r) => r.status));
      await Promise.all(answers.map((r) => r.body?.cancel()));
    }
    expect(statuses.filter((s) => s !== 201)).toEqual([]);
    const refused = await register();
    expect(refused.status).toBe(429);
    // An OAuth error body (RFC 7591 §3.2.2): `error` is a string.
    expect(await refused.json()).toMatchObject({ error: "temporarily_unavailable" });
    const elsewhere = await api("https://mcp.amba.dev/oauth/register", {
      method: "POST",
      headers: { "content-type": "application/json", "cf-connecting-ip": "203.0.113.78" },
      body: JSON.stringify({ redirect_uris: ["http://127.0.0.1:9/cb"], token_endpoint_auth_method: "none" }),
    });
    expect(elsewhere.status).toBe(201);
  });

  it("limits sign-in page views per address (each writes a transaction to KV)", async () => {
    const view = (ip: string) =>
      api("https://mcp.amba.dev/authorize?response_type=code", { headers: { "cf-connecting-ip": ip } });
    await withinOneRateLimitWindow(60, 5_000);
    const statuses: number[] = [];
    for (let wave = 0; wave < 6; wave++) {
      const answers = await Promise.all(Array.from({ length: 10 }, () => view("203.0.113.91")));
      statuses.push(...answers.map((r) => r.status));
      await Promise.all(answers.map((r) => r.body?.cancel()));
    }
    expect(statuses.filter((s) => s === 429)).toEqual([]);
    const refused = await view("203.0.113.91");
    expect(refused.status).toBe(429);
    expect(refused.headers.get("content-type")).toContain("text/html");
    expect(refused.headers.get("retry-after")).toBe("60");
    expect(await refused.text()).toContain("Too many sign-in requests");
    const elsewhere = await view("203.0.113.92");
    expect(elsewhere.status).not.toBe(429);
    await elsewhere.body?.cancel();
  });

  it("bounds the collections of a project and the projects of a developer (403 quota_exceeded)", async () => {
    // The quota counts metadata rows: fill them directly (no tables) rather than with 1,000 DDL requests.
    const quota = await signupDeveloper();
    await testDb().execute(sql`INSERT INTO collections (project_id, name, columns, access)
      SELECT ${quota.projectId}::uuid, 'filler_' || i, '[]'::jsonb, '{"read":"owner","write":"owner"}'::jsonb
      FROM generate_series(2, ${MAX_COLLECTIONS_PER_PROJECT}) AS i`);
    const create = (name: string) =>
      apiJson(`/v1/admin/projects/${quota.projectId}/collections`, {
        token: quota.token,
        json: { ...NOTES, name },
      });
    expect((await create("last_one")).status).toBe(201);
    const refused = await create("one_too_many");
    expectError(refused, 403, `a project holds at most ${MAX_COLLECTIONS_PER_PROJECT} collections`);
    expect(refused.body.error.code).toBe("quota_exceeded");

    await testDb().execute(sql`INSERT INTO projects (developer_id, name)
      SELECT ${quota.developerId}::uuid, 'filler ' || i FROM generate_series(2, ${MAX_PROJECTS_PER_DEVELOPER}) AS i`);
    const project = await apiJson("/v1/admin/projects", {
      token: quota.token,
      json: { name: "one too many" },
    });
    expectError(project, 403, `a developer holds at most ${MAX_PROJECTS_PER_DEVELOPER} projects`);
  });

  it("bounds the column definitions a project's collections hold together (403 quota_exceeded)", async () => {
    // 1,000 collections of 100 documented columns were ≈ 56 M characters loaded into a shared isolate.
    const quota = await signupDeveloper();
    const column = (i: number) => ({ name: `c${i}`, type: "text", description: "d".repeat(500) });
    const wide = Array.from({ length: 100 }, (_, i) => column(i));
    // Fill to 500 bytes under the budget with metadata rows (no tables), as the count quota's test
    // does: wide rows, then one padding row whose description takes the total to the byte.
    await testDb().execute(sql`INSERT INTO collections (project_id, name, columns, access)
      SELECT ${quota.projectId}::uuid, 'filler_' || i, ${JSON.stringify(wide)}::jsonb,
        '{"read":"owner","write":"owner"}'::jsonb
      FROM generate_series(1, ${Math.floor(MAX_PROJECT_COLUMN_BYTES / 60_000)}) AS i`);
    const pad = (text: SQL) =>
      sql`jsonb_build_array(jsonb_build_object('name', 'p', 'type', 'text', 'description', ${text}))`;
    await testDb().execute(sql`INSERT INTO collections (project_id, name, columns, access)
      SELECT ${quota.projectId}::uuid, 'padding',
        ${pad(sql`repeat('x', (${MAX_PROJECT_COLUMN_BYTES - 500} - used - octet_length(${pad(sql`''`)}::text))::int)`)},
        '{"read":"owner","write":"owner"}'::jsonb
      FROM (SELECT sum(octet_length(columns::text)) AS used FROM collections WHERE project_id = ${quota.projectId}::uuid) AS filled`);
    const collections = `/v1/admin/projects/${quota.projectId}/collections`;
    const create = (name: string, columns: unknown[]) =>
      apiJson(collections, { token: quota.token, json: { ...NOTES, name, columns } });
    const small = [
      { name: "title", type: "text" },
      { name: "note", type: "text" },
    ];
    expect((await create("small", small)).status).toBe(201);
    const refused = await create("wide", wide);
    expectError(refused, 403, `at most ${MAX_PROJECT_COLUMN_BYTES} bytes of column definitions`);
    expect(refused.body.error.code).toBe("quota_exceeded");
    // Growing an existing collection past the budget is refused too; nothing was added.
    const grow = await apiJson(`${collections}/small`, {
      method: "PATCH",
      token: quota.token,
      json: { add_columns: wide.slice(0, 90) },
    });
    expectError(grow, 403, "bytes of column definitions");
    const listed = await apiJson(collections, { token: quota.token });
    const stored = listed.body.collections.find((c: { name: string }) => c.name === "small");
    expect(stored.columns.map((c: { name: string }) => c.name)).toEqual(["title", "note"]);
    // Shrinking is always allowed, so a project over the budget can get back under it.
    await testDb().execute(sql`UPDATE collections SET columns = ${JSON.stringify([...wide, ...wide])}::jsonb
      WHERE project_id = ${quota.projectId}::uuid AND name = 'filler_1'`);
    const drop = await apiJson(`${collections}/small`, {
      method: "PATCH",
      token: quota.token,
      json: { drop_columns: ["note"] },
    });
    expect(drop.status).toBe(200);
    expect(drop.body.columns.map((c: { name: string }) => c.name)).toEqual(["title"]);
  });

  it("refuses a database answer larger than MAX_RESULT_BYTES with 400 instead of reading it whole", async () => {
    // Rows of 1 MB each, written directly (the API takes at most 1 MiB per body): more than the cap in all.
    const rowCount = Math.ceil(MAX_RESULT_BYTES / 1_000_000) + 1;
    await testDb().execute(sql`INSERT INTO ${sql.identifier(projectSchemaName(dev.projectId))}.notes (id, title)
      SELECT gen_random_uuid(), repeat('x', 1000000) FROM generate_series(1, ${rowCount})`);
    const all = await apiJson(`${rows()}/rows?limit=${rowCount}`, { token: dev.token });
    expect(all.status, JSON.stringify(all.body).slice(0, 300)).toBe(400);
    expectError(all, 400, "ask for fewer rows");
    expect(all.body.error.code).toBe("result_too_large");
    const few = await apiJson(`${rows()}/rows?limit=2`, { token: dev.token });
    expect(few.status).toBe(200);
    expect(few.body.rows).toHaveLength(2);
  });
});
