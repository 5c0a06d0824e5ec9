/**
 * Red team as a legitimate tenant (its own developer, project, client key and end users) trying to
 * reach another tenant, starve it, or make the service answer 500. One regression test per hole
 * found (each failed before its fix); the attacks that were already blocked are listed in the
 * report of the branch, not repeated here (tenants.test.ts, hostile.test.ts and the other audit
 * files cover them). One developer (with two end users) of its own serves every case.
 */
import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { MAX_CLIENT_KEYS_PER_PROJECT } from "../../src/accounts/projects.ts";
import { createCollection, type DataProject, data, dataProject, insert } from "./data/fixtures.ts";
import { apiJson, expectError, mcpToolCall, testDb } from "./helpers.ts";

describe("edge red team", () => {
  let p: DataProject;
  beforeAll(async () => {
    p = await dataProject();
  });

  it("refuses a column named after a property every JavaScript object has (was a 500 on every insert, find and aggregate)", async () => {
    const dev = p.dev;
    const collections = `/v1/admin/projects/${dev.projectId}/collections`;
    const columns = [{ name: "constructor", type: "text" }];
    expectError(
      await apiJson(collections, { token: dev.token, json: { name: "notes", columns } }),
      400,
      '"constructor" is reserved',
    );
    const made = await apiJson(collections, {
      token: dev.token,
      json: { name: "notes", columns: [{ name: "body", type: "text" }] },
    });
    expect(made.status).toBe(201);
    expectError(
      await apiJson(`${collections}/notes`, {
        token: dev.token,
        method: "PATCH",
        json: { add_columns: columns },
      }),
      400,
      '"constructor" is reserved',
    );
    // A collection of that name is fine: collections are looked up in maps, never on plain objects.
    const named = await apiJson(collections, {
      token: dev.token,
      json: { name: "constructor", columns: [{ name: "body", type: "text" }] },
    });
    expect(named.status).toBe(201);
    const rows = `/v1/projects/${dev.projectId}/collections/constructor/rows`;
    expect((await apiJson(rows, { token: dev.token, json: { body: "x" } })).status).toBe(201);
  });

  it("answers min/max of boolean and uuid columns on REST and the app MCP, owner-scoped (Postgres has neither: was a 500)", async () => {
    const flags = {
      name: "flags",
      columns: [
        { name: "done", type: "boolean" },
        { name: "ref", type: "uuid" },
        { name: "day", type: "date" },
      ],
      access: { read: "owner", write: "owner" },
    };
    await createCollection(p, flags);
    await apiJson(`/v1/admin/projects/${p.dev.projectId}/app-mcp/exposure`, {
      token: p.dev.token,
      method: "PUT",
      json: { collections: ["flags"] },
    });
    const refs = ["00000000-0000-4000-8000-00000000000a", "ffffffff-0000-4000-8000-00000000000b"];
    const mine = await insert(p, p.userA, "flags", { done: true, ref: refs[0], day: "2026-01-02" });
    // Another user's row: the lowest and highest values, invisible to userA under the owner policy.
    await insert(p, p.userB, "flags", { done: false, ref: refs[1], day: "2026-01-03" });
    const metrics = ["done", "ref", "id", "owner_id"].flatMap((column) =>
      ["min", "max"].map((fn) => ({ fn, column })),
    );
    const own = {
      min_done: true,
      max_done: true,
      min_ref: refs[0],
      max_ref: refs[0],
      min_id: mine.id,
      max_id: mine.id,
      min_owner_id: mine.owner_id,
      max_owner_id: mine.owner_id,
    };
    const rest = await data(p, p.userA, "flags", "aggregate", { json: { metrics } });
    expect(rest.body).toEqual({ rows: [own] });
    const tool = await mcpToolCall(`/app/${p.dev.projectId}/mcp`, p.dev.token, "flags_aggregate", {
      metrics: metrics.slice(0, 4),
    });
    // The developer sees both rows: false < true, and uuids in their byte order.
    expect(tool.body.result.structuredContent).toEqual({
      rows: [{ min_done: false, max_done: true, min_ref: refs[0], max_ref: refs[1] }],
    });
    // And next to them: max of a date, a count of a uuid column, grouping by a boolean.
    const ok = await data(p, p.userA, "flags", "aggregate", {
      json: {
        metrics: [
          { fn: "max", column: "day" },
          { fn: "count", column: "ref" },
        ],
        group_by: ["done"],
      },
    });
    expect(ok.body).toEqual({ rows: [{ max_day: "2026-01-02", count_ref: 1, done: true }] });
  });

  it("refuses an internationalised (xn--) slug, whose hostname can spell another app's name in lookalike letters", async () => {
    const dev = p.dev;
    const config = `/v1/admin/projects/${dev.projectId}/app-mcp/config`;
    for (const slug of ["xn--80ak6aa92e", "ab--c"]) {
      expectError(
        await apiJson(config, { token: dev.token, method: "PATCH", json: { slug } }),
        400,
        'must not have "--"',
      );
    }
    const plain = `a--b${Date.now().toString(36)}`;
    const ok = await apiJson(config, { token: dev.token, method: "PATCH", json: { slug: plain } });
    expect(ok.body.slug).toBe(plain);
  });

  it("refuses a promote to a version past Postgres' integer with 400 on REST and the platform MCP (was a 500)", async () => {
    const dev = p.dev;
    const functions = `/v1/admin/projects/${dev.projectId}/functions`;
    const deployed = await apiJson(`${functions}/deploy`, {
      token: dev.token,
      json: { name: "f", url: "https://example.com/f" },
    });
    expect(deployed.status).toBe(201);
    for (const version of [2 ** 31, 2 ** 53, 1e20]) {
      const promote = await apiJson(`${functions}/f/promote`, { token: dev.token, json: { version } });
      expectError(promote, 400, "version");
      const tool = await mcpToolCall("/mcp", dev.token, "amba_functions_promote", {
        project_id: dev.projectId,
        name: "f",
        version,
      });
      expect(tool.body.result.isError).toBe(true);
      expect(tool.body.result.content[0].text).toContain("invalid_input");
    }
    expectError(
      await apiJson(`${functions}/f/promote`, { token: dev.token, json: { version: 2 ** 31 - 1 } }),
      404,
    );
  });

  it("bounds the client keys of a project, revoked ones included (403 quota_exceeded; they were unbounded)", async () => {
    const dev = p.dev;
    const project = await apiJson("/v1/admin/projects", { token: dev.token, json: { name: "keys" } });
    const projectId = project.body.id as string;
    // The quota counts rows: fill them directly rather than with 1,000 admin requests.
    await testDb().execute(sql`INSERT INTO client_keys (project_id, secret_hash, name, revoked_at)
      SELECT ${projectId}::uuid, 'filler', 'filler ' || i, now()
      FROM generate_series(1, ${MAX_CLIENT_KEYS_PER_PROJECT}) AS i`);
    const keys = `/v1/admin/projects/${projectId}/client-keys`;
    const refused = await apiJson(keys, { token: dev.token, json: { name: "one too many" } });
    expectError(refused, 403, `a project holds at most ${MAX_CLIENT_KEYS_PER_PROJECT} client keys`);
    expect(refused.body.error.code).toBe("quota_exceeded");
    const tool = await mcpToolCall("/mcp", dev.token, "amba_client_keys_create", { project_id: projectId });
    expect(tool.body.result.content[0].text).toContain("quota_exceeded");
    // Another project of the developer has its own.
    const key = await apiJson(`/v1/admin/projects/${dev.projectId}/client-keys`, {
      token: dev.token,
      json: {},
    });
    expect(key.status).toBe(201);
  });
});
