/**
 * Races, fired 16 at a time through the Worker. On the embedded database requests queue on its one
 * connection; on a real server (`AMBA_TEST_PG=1`) each batch runs on its own connection, so these
 * are the tests that prove the guards: afterwards the stored state must be what the answers said.
 */
import { sql } from "drizzle-orm";
import { describe, expect, it, vi } from "vitest";
import { api, apiJson, type JsonResponse, signupDeveloper, type TestDeveloper, testDb } from "./helpers.ts";

const N = 16;
const SERVER_COLUMNS = ["id", "owner_id", "created_at", "updated_at", "deleted_at"];

const times = <T>(n: number, f: (i: number) => Promise<T>): Promise<T[]> =>
  Promise.all(Array.from({ length: n }, (_, i) => f(i)));

const collections = (dev: TestDeveloper) => `/v1/admin/projects/${dev.projectId}/collections`;

/** The user columns of a collection's table, as Postgres has them. */
async function tableColumns(projectId: string, name: string): Promise<string[]> {
  const schema = `app_${projectId.replaceAll("-", "")}`;
  const result = await testDb().execute(
    sql`SELECT column_name FROM information_schema.columns
        WHERE table_schema = ${schema} AND table_name = ${name} ORDER BY column_name`,
  );
  return result.rows.map((r) => r.column_name as string).filter((c) => !SERVER_COLUMNS.includes(c));
}

/** The columns the metadata lists (`GET …/collections`). */
async function metadataColumns(dev: TestDeveloper, name: string): Promise<string[]> {
  const list = await apiJson(collections(dev), { token: dev.token });
  expect(list.status).toBe(200);
  const found = (list.body.collections ?? list.body).find((c: { name: string }) => c.name === name);
  return (found.columns as { name: string }[]).map((c) => c.name).sort();
}

const expectConflict = (res: JsonResponse, message: string) => {
  expect(res.status, JSON.stringify(res.body)).toBe(409);
  expect(res.body.error.code).toBe("conflict");
  expect(res.body.error.message).toContain(message);
};

describe(`${N} concurrent schema changes`, () => {
  it("PATCHes of one collection: table and metadata agree afterwards, losers get 409 retry", async () => {
    const dev = await signupDeveloper();
    const created = await apiJson(collections(dev), {
      token: dev.token,
      json: { name: "board", columns: [{ name: "title", type: "text" }] },
    });
    expect(created.status).toBe(201);

    const results = await times(N, (i) =>
      apiJson(`${collections(dev)}/board`, {
        method: "PATCH",
        token: dev.token,
        json: { add_columns: [{ name: `c${i}`, type: "integer" }] },
      }),
    );
    const winners: string[] = [];
    results.forEach((res, i) => {
      if (res.status === 200) winners.push(`c${i}`);
      else expectConflict(res, 'collection "board" changed concurrently; retry');
    });
    expect(winners.length).toBeGreaterThan(0);

    const expected = ["title", ...winners].sort();
    expect(await metadataColumns(dev, "board")).toEqual(expected);
    expect(await tableColumns(dev.projectId, "board")).toEqual(expected);

    // A loser's retry succeeds: its column is in neither the table nor the metadata.
    const loser = results.findIndex((res) => res.status === 409);
    if (loser >= 0) {
      const retry = await apiJson(`${collections(dev)}/board`, {
        method: "PATCH",
        token: dev.token,
        json: { add_columns: [{ name: `c${loser}`, type: "integer" }] },
      });
      expect(retry.status, JSON.stringify(retry.body)).toBe(200);
    }
  });

  it("PATCHes racing a DELETE: either the drop wins or the alter does, nothing half-done", async () => {
    const dev = await signupDeveloper();
    await apiJson(collections(dev), {
      token: dev.token,
      json: { name: "gone", columns: [{ name: "a", type: "text" }] },
    });
    const results = await times(N, (i) =>
      i === N / 2
        ? apiJson(`${collections(dev)}/gone`, { method: "DELETE", token: dev.token })
        : apiJson(`${collections(dev)}/gone`, {
            method: "PATCH",
            token: dev.token,
            json: { add_columns: [{ name: `c${i}`, type: "integer" }] },
          }),
    );
    for (const res of results) expect([200, 404, 409], JSON.stringify(res.body)).toContain(res.status);
    expect(results[N / 2]?.status).toBe(200);
    expect(await tableColumns(dev.projectId, "gone")).toEqual([]);
    const list = await apiJson(collections(dev), { token: dev.token });
    expect(JSON.stringify(list.body)).not.toContain('"gone"');
  });

  it("creates of distinct collections in a fresh project all succeed", async () => {
    const dev = await signupDeveloper();
    const names = Array.from({ length: N }, (_, i) => `c${String(i).padStart(4, "0")}`);
    const results = await times(N, (i) =>
      apiJson(collections(dev), {
        token: dev.token,
        json: { name: names[i], columns: [{ name: "v", type: "text" }] },
      }),
    );
    for (const res of results) expect(res.status, JSON.stringify(res.body)).toBe(201);
    for (const name of names) expect(await tableColumns(dev.projectId, name)).toEqual(["v"]);
  });

  it("creates of one name: exactly one 201, the others 409 already exists", async () => {
    const dev = await signupDeveloper();
    const results = await times(N, () =>
      apiJson(collections(dev), {
        token: dev.token,
        json: { name: "twin", columns: [{ name: "v", type: "text" }] },
      }),
    );
    expect(results.filter((res) => res.status === 201)).toHaveLength(1);
    for (const res of results.filter((r) => r.status !== 201))
      expectConflict(res, 'collection "twin" already exists');
  });
});

describe(`${N} concurrent slug and usage writes`, () => {
  const config = (dev: TestDeveloper, json: unknown) =>
    apiJson(`/v1/admin/projects/${dev.projectId}/app-mcp/config`, {
      method: "PATCH",
      token: dev.token,
      json,
    });

  it("one slug claimed by 16 projects: exactly one gets it, the others 409 taken", async () => {
    const devs = await times(N, () => signupDeveloper());
    const slug = `race-${crypto.randomUUID().slice(0, 8)}`;
    const results = await times(N, (i) => config(devs[i] as TestDeveloper, { slug }));
    const winners = results.flatMap((res, i) => (res.status === 200 ? [devs[i] as TestDeveloper] : []));
    expect(winners).toHaveLength(1);
    for (const res of results.filter((r) => r.status !== 200))
      expectConflict(res, `slug "${slug}" is already taken`);
    const owners = await testDb().execute(sql`SELECT project_id FROM app_mcp_configs WHERE slug = ${slug}`);
    expect(owners.rows.map((r) => r.project_id)).toEqual([winners[0]?.projectId]);
  });

  it("16 config PATCHes of one project with distinct slugs all succeed; one slug stays", async () => {
    const dev = await signupDeveloper();
    const slugs = Array.from({ length: N }, (_, i) => `own-${i}-${crypto.randomUUID().slice(0, 8)}`);
    const results = await times(N, (i) => config(dev, { slug: slugs[i] }));
    for (const res of results) expect(res.status, JSON.stringify(res.body)).toBe(200);
    const stored = await apiJson(`/v1/admin/projects/${dev.projectId}/app-mcp/config`, { token: dev.token });
    expect(slugs).toContain(stored.body.slug);
    // Every slug it held and gave up meanwhile is reserved for it (migration 0009).
    const released = await testDb().execute(
      sql`SELECT slug FROM released_slugs WHERE project_id = ${dev.projectId}::uuid ORDER BY slug`,
    );
    expect(released.rows.map((r) => r.slug)).toEqual(slugs.filter((s) => s !== stored.body.slug).sort());
  });

  it("a slug's release racing 15 other projects' claims of it: none of them gets it", async () => {
    const devs = await times(N, () => signupDeveloper());
    const [holder, ...claimers] = devs as [TestDeveloper, ...TestDeveloper[]];
    const slug = `gone-${crypto.randomUUID().slice(0, 8)}`;
    expect((await config(holder, { slug })).status).toBe(200);
    const [release, ...claims] = await Promise.all([
      config(holder, { slug: null }),
      ...claimers.map((dev) => config(dev, { slug })),
    ]);
    expect(release.status).toBe(200);
    for (const res of claims) {
      expect(res.status, JSON.stringify(res.body)).toBe(409);
      expect(res.body.error.message).toMatch(/is already taken|is reserved until/);
    }
    const owners = await testDb().execute(sql`SELECT project_id FROM app_mcp_configs WHERE slug = ${slug}`);
    expect(owners.rows).toEqual([]);
  });

  it("8 pairs of projects trading their slugs at once: every trade refused with 409, nothing moved", async () => {
    const devs = await times(N, () => signupDeveloper());
    const slugs = devs.map((_, i) => `trade-${i}-${crypto.randomUUID().slice(0, 8)}`);
    for (const [i, dev] of devs.entries()) expect((await config(dev, { slug: slugs[i] })).status).toBe(200);
    // Project 2k takes 2k+1's slug while 2k+1 takes 2k's.
    const results = await times(N, (i) => config(devs[i] as TestDeveloper, { slug: slugs[i ^ 1] }));
    for (const res of results) {
      expect(res.status, JSON.stringify(res.body)).toBe(409);
      expect(res.body.error.message).toMatch(/is already taken|changed concurrently; retry/);
    }
    const held = await testDb().execute(
      sql`SELECT slug FROM app_mcp_configs WHERE project_id = ANY(${`{${devs.map((d) => d.projectId).join(",")}}`}::uuid[]) ORDER BY slug`,
    );
    expect(held.rows.map((r) => r.slug)).toEqual([...slugs].sort());
  });

  it("16 concurrent metered tool calls count 16", async () => {
    const dev = await signupDeveloper();
    const results = await times(N, (i) =>
      api(`/app/${dev.projectId}/mcp`, {
        method: "POST",
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: i,
          method: "tools/call",
          params: { name: "my_first_project_whoami", arguments: {} },
        }),
        headers: {
          authorization: `Bearer ${dev.token}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
        },
      }),
    );
    for (const res of results) {
      const body = (await res.json()) as { result?: { isError?: boolean } };
      expect(res.status).toBe(200);
      expect(body.result?.isError, JSON.stringify(body)).toBeFalsy();
    }
    // Metering runs after the response (waitUntil): wait for it to land, then it must be exactly N.
    await vi.waitFor(
      async () => {
        const billing = await apiJson(`/v1/admin/projects/${dev.projectId}/billing`, { token: dev.token });
        expect(billing.body.usage.agent_tool_calls).toBe(N);
      },
      { timeout: 15_000, interval: 100 },
    );
  });
});
