import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { apiJson, expectError, signupDeveloper, testDb } from "../helpers.ts";

describe("/v1/admin/projects", () => {
  it("creates, lists, reads, renames and deletes projects", async () => {
    const dev = await signupDeveloper();
    const created = await apiJson("/v1/admin/projects", { token: dev.token, json: { name: "  Second  " } });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.any(String),
      name: "Second",
      meta_rev: 1,
      created_at: expect.any(String),
    });
    const id = created.body.id;

    const list = await apiJson("/v1/admin/projects", { token: dev.token });
    expect(list.status).toBe(200);
    expect(list.body.projects.map((p: { id: string }) => p.id)).toEqual([dev.projectId, id]);

    const one = await apiJson(`/v1/admin/projects/${id}`, { token: dev.token });
    expect(one.body).toMatchObject({ id, name: "Second" });

    const renamed = await apiJson(`/v1/admin/projects/${id}`, {
      token: dev.token,
      method: "PATCH",
      json: { name: "Renamed" },
    });
    expect(renamed.status).toBe(200);
    // The name is the app name in app-MCP tool names: a rename bumps meta_rev.
    expect(renamed.body).toMatchObject({ id, name: "Renamed", meta_rev: 2 });

    const deleted = await apiJson(`/v1/admin/projects/${id}`, { token: dev.token, method: "DELETE" });
    expect(deleted).toEqual({ status: 200, body: { id, deleted: true } });
    expectError(await apiJson(`/v1/admin/projects/${id}`, { token: dev.token }), 404);
    const after = await apiJson("/v1/admin/projects", { token: dev.token });
    expect(after.body.projects.map((p: { id: string }) => p.id)).toEqual([dev.projectId]);
  });

  it("creates the app-MCP config row with a new project", async () => {
    const dev = await signupDeveloper();
    const created = await apiJson("/v1/admin/projects", { token: dev.token, json: { name: "P" } });
    const { rows } = await testDb().execute(
      sql`select enabled, auth_mode from app_mcp_configs where project_id = ${created.body.id}::uuid`,
    );
    expect(rows).toEqual([{ enabled: true, auth_mode: "all" }]);
  });

  it("drops the project's app schema and cascades its rows on delete", async () => {
    const dev = await signupDeveloper();
    const db = testDb();
    const schema = `app_${dev.projectId.replaceAll("-", "")}`;
    await db.execute(sql`create schema ${sql.identifier(schema)}`);
    await db.execute(sql`create table ${sql.identifier(schema)}.t (id int)`);
    const res = await apiJson(`/v1/admin/projects/${dev.projectId}`, { token: dev.token, method: "DELETE" });
    expect(res.status).toBe(200);
    const { rows } = await db.execute(sql`
      select (select count(*)::int from information_schema.schemata where schema_name = ${schema}) as schemas,
             (select count(*)::int from client_keys where project_id = ${dev.projectId}::uuid) as keys,
             (select count(*)::int from app_mcp_configs where project_id = ${dev.projectId}::uuid) as configs`);
    expect(rows[0]).toEqual({ schemas: 0, keys: 0, configs: 0 });
  });

  it("answers 404 for another developer's project on every route, and leaves it untouched", async () => {
    const owner = await signupDeveloper();
    const other = await signupDeveloper();
    const base = `/v1/admin/projects/${owner.projectId}`;
    expectError(await apiJson(base, { token: other.token }), 404);
    expectError(await apiJson(base, { token: other.token, method: "PATCH", json: { name: "x" } }), 404);
    expectError(await apiJson(base, { token: other.token, method: "DELETE" }), 404);
    expectError(await apiJson(`${base}/client-keys`, { token: other.token }), 404);
    expectError(await apiJson(`${base}/client-keys`, { token: other.token, json: {} }), 404);
    const list = await apiJson("/v1/admin/projects", { token: other.token });
    expect(list.body.projects.map((p: { id: string }) => p.id)).toEqual([other.projectId]);
    const still = await apiJson(base, { token: owner.token });
    expect(still.body).toMatchObject({ id: owner.projectId, name: "My first project" });
  });

  it("stores a project name carrying SQL literally", async () => {
    const dev = await signupDeveloper();
    const name = `x'); drop table projects; -- 🙂`;
    const created = await apiJson("/v1/admin/projects", { token: dev.token, json: { name } });
    expect(created.status).toBe(201);
    expect((await apiJson(`/v1/admin/projects/${created.body.id}`, { token: dev.token })).body.name).toBe(
      name,
    );
  });

  it("answers 404 for unknown and malformed project ids", async () => {
    const dev = await signupDeveloper();
    expectError(await apiJson(`/v1/admin/projects/${crypto.randomUUID()}`, { token: dev.token }), 404);
    expectError(await apiJson("/v1/admin/projects/not-a-uuid", { token: dev.token }), 404);
    expectError(await apiJson("/v1/admin/projects/'; drop table projects; --", { token: dev.token }), 404);
    expectError(await apiJson("/v1/admin/projects/not-a-uuid/client-keys", { token: dev.token }), 404);
  });

  it("validates the body: bad JSON, missing, mistyped and empty names → 400 naming the field", async () => {
    const dev = await signupDeveloper();
    const badJson = await apiJson("/v1/admin/projects", {
      token: dev.token,
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{",
    });
    expectError(badJson, 400, "valid JSON");
    expectError(await apiJson("/v1/admin/projects", { token: dev.token, json: {} }), 400, "name");
    expectError(await apiJson("/v1/admin/projects", { token: dev.token, json: { name: 7 } }), 400, "name");
    expectError(
      await apiJson("/v1/admin/projects", { token: dev.token, json: { name: "   " } }),
      400,
      "name",
    );
    expectError(
      await apiJson("/v1/admin/projects", { token: dev.token, json: { name: "x".repeat(101) } }),
      400,
      "name",
    );
    expectError(
      await apiJson(`/v1/admin/projects/${dev.projectId}`, {
        token: dev.token,
        method: "PATCH",
        json: { name: null },
      }),
      400,
      "name",
    );
  });

  it("requires a valid developer token: missing, malformed, unknown and wrong-secret → 401", async () => {
    const dev = await signupDeveloper();
    const wrongSecret = `${dev.token.slice(0, -4)}AAAA`;
    const unknownId = `amba_dev_${crypto.randomUUID().replaceAll("-", "")}_${dev.token.slice(-43)}`;
    for (const token of [undefined, "", "garbage", "amba_dev_zz_yy", dev.clientKey, wrongSecret, unknownId]) {
      const res = await apiJson("/v1/admin/projects", { token });
      expectError(res, 401);
      expect(res.body.error.code).toBe("unauthorized");
    }
    const basic = await apiJson("/v1/admin/projects", { headers: { authorization: "Basic abc" } });
    expectError(basic, 401);
    // 401 comes before body validation and before any project lookup.
    expectError(await apiJson("/v1/admin/projects", { token: "nope", json: {} }), 401);
    expectError(await apiJson(`/v1/admin/projects/${dev.projectId}/client-keys`, { token: "nope" }), 401);
  });

  it("rejects a revoked developer token", async () => {
    const dev = await signupDeveloper();
    expect((await apiJson("/v1/admin/projects", { token: dev.token })).status).toBe(200);
    await testDb().execute(
      sql`update developer_tokens set revoked_at = now() where developer_id = ${dev.developerId}::uuid`,
    );
    expectError(await apiJson("/v1/admin/projects", { token: dev.token }), 401);
  });
});
