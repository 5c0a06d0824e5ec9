import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { api, apiJson, expectError, signupDeveloper, testDb, uniqueEmail } from "../helpers.ts";

describe("POST /v1/developers/signup", () => {
  it("creates a developer, token, first project, app-MCP config and client key", async () => {
    const email = uniqueEmail("dev");
    const res = await apiJson("/v1/developers/signup", { json: { email } });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      developer: { id: expect.any(String), email },
      token: expect.stringMatching(/^amba_dev_[0-9a-f]{32}_[A-Za-z0-9_-]{43}$/),
      project: { id: expect.any(String), name: "My first project" },
      client_key: expect.stringMatching(/^amba_ck_[0-9a-f]{32}_[A-Za-z0-9_-]{43}$/),
    });
    const { rows } = await testDb().execute(
      sql`select enabled, auth_mode, slug from app_mcp_configs where project_id = ${res.body.project.id}::uuid`,
    );
    expect(rows).toEqual([{ enabled: true, auth_mode: "all", slug: null }]);
  });

  it("stores only the SHA-256 of the token and client key secrets", async () => {
    const dev = await signupDeveloper();
    const tokenSecret = dev.token.slice("amba_dev_".length + 33);
    const keySecret = dev.clientKey.slice("amba_ck_".length + 33);
    const { rows } = await testDb().execute(sql`
      select (select secret_hash from developer_tokens where developer_id = ${dev.developerId}::uuid) as token_hash,
             (select secret_hash from client_keys where project_id = ${dev.projectId}::uuid) as key_hash,
             encode(sha256(convert_to(${tokenSecret}, 'UTF8')), 'hex') as token_digest,
             encode(sha256(convert_to(${keySecret}, 'UTF8')), 'hex') as key_digest`);
    const row = rows[0] as Record<string, string>;
    expect(row.token_hash).toBe(row.token_digest);
    expect(row.key_hash).toBe(row.key_digest);
    const dump = JSON.stringify(
      (
        await testDb().execute(sql`select * from developer_tokens t, client_keys k
        where t.developer_id = ${dev.developerId}::uuid and k.project_id = ${dev.projectId}::uuid`)
      ).rows,
    );
    expect(dump).not.toContain(tokenSecret);
    expect(dump).not.toContain(keySecret);
  });

  it("normalizes the email (trim, lowercase) and refuses a duplicate with 409", async () => {
    const email = uniqueEmail("Dup");
    const first = await apiJson("/v1/developers/signup", { json: { email: `  ${email.toUpperCase()} ` } });
    expect(first.status).toBe(201);
    expect(first.body.developer.email).toBe(email.toLowerCase());
    const again = await apiJson("/v1/developers/signup", { json: { email } });
    expectError(again, 409, "already exists");
    expect(again.body.error.code).toBe("conflict");
  });

  it("lets exactly one of two concurrent sign-ups with the same email win", async () => {
    const email = uniqueEmail("race");
    const results = await Promise.all(
      [1, 2, 3].map(() => apiJson("/v1/developers/signup", { json: { email } })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409]);
    const { rows } = await testDb().execute(sql`
      select (select count(*)::int from developers where email = ${email}) as developers,
             (select count(*)::int from projects p join developers d on d.id = p.developer_id where d.email = ${email}) as projects`);
    expect(rows[0]).toEqual({ developers: 1, projects: 1 });
  });

  it("accepts an optional project_name", async () => {
    const res = await apiJson("/v1/developers/signup", {
      json: { email: uniqueEmail(), project_name: "Recipes" },
    });
    expect(res.status).toBe(201);
    expect(res.body.project.name).toBe("Recipes");
  });

  it("rejects bad JSON, missing or mistyped fields and invalid emails with 400 naming the field", async () => {
    const bad = await api("/v1/developers/signup", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{not json",
    });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({
      error: { code: "invalid_input", message: "request body must be valid JSON" },
    });

    expectError(await apiJson("/v1/developers/signup", { json: {} }), 400, "email");
    expectError(await apiJson("/v1/developers/signup", { json: { email: 42 } }), 400, "email");
    expectError(await apiJson("/v1/developers/signup", { json: { email: "not-an-email" } }), 400, "email");
    expectError(await apiJson("/v1/developers/signup", { json: [] }), 400);
    expectError(
      await apiJson("/v1/developers/signup", { json: { email: uniqueEmail(), project_name: "" } }),
      400,
      "project_name",
    );
  });
});
