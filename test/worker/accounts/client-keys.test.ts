import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { apiJson, expectError, signupDeveloper, testDb, uniqueEmail } from "../helpers.ts";

describe("/v1/admin/projects/:id/client-keys", () => {
  it("creates a key shown once, lists keys without secrets, and revokes", async () => {
    const dev = await signupDeveloper();
    const base = `/v1/admin/projects/${dev.projectId}/client-keys`;
    const created = await apiJson(base, { token: dev.token, json: { name: "ios" } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      id: expect.any(String),
      name: "ios",
      revoked: false,
      client_key: expect.stringMatching(/^amba_ck_/),
    });
    const secret = created.body.client_key.slice(-43);
    expect(created.body.client_key.startsWith(created.body.prefix)).toBe(true);

    const list = await apiJson(base, { token: dev.token });
    expect(list.status).toBe(200);
    expect(list.body.client_keys).toHaveLength(2);
    expect(list.body.client_keys.map((k: { name: string }) => k.name)).toEqual(["default", "ios"]);
    const text = JSON.stringify(list.body);
    expect(text).not.toContain(secret);
    expect(text).not.toContain(dev.clientKey.slice(-43));
    expect(text).not.toContain("secret_hash");
    for (const key of list.body.client_keys) {
      expect(Object.keys(key).sort()).toEqual([
        "created_at",
        "id",
        "name",
        "prefix",
        "revoked",
        "revoked_at",
      ]);
    }

    const { rows } = await testDb().execute(
      sql`select secret_hash from client_keys where id = ${created.body.id}::uuid`,
    );
    expect((rows[0] as { secret_hash: string }).secret_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(rows)).not.toContain(secret);

    // The new key works for end-user sign-up until revoked.
    const signup = await apiJson("/v1/auth/signup", {
      apiKey: created.body.client_key,
      json: { email: uniqueEmail(), password: "password-123" },
    });
    expect(signup.status).toBe(201);

    const revoked = await apiJson(`${base}/${created.body.id}`, { token: dev.token, method: "DELETE" });
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({
      id: created.body.id,
      revoked: true,
      revoked_at: expect.any(String),
    });
    expect(JSON.stringify(revoked.body)).not.toContain(secret);
    const again = await apiJson(`${base}/${created.body.id}`, { token: dev.token, method: "DELETE" });
    expect(again.body.revoked_at).toBe(revoked.body.revoked_at);

    const after = await apiJson("/v1/auth/signup", {
      apiKey: created.body.client_key,
      json: { email: uniqueEmail(), password: "password-123" },
    });
    expectError(after, 401);
    const listed = await apiJson(base, { token: dev.token });
    expect(listed.body.client_keys.find((k: { id: string }) => k.id === created.body.id).revoked).toBe(true);
  });

  it("names the key 'default' when no name is given, and validates the name", async () => {
    const dev = await signupDeveloper();
    const base = `/v1/admin/projects/${dev.projectId}/client-keys`;
    const created = await apiJson(base, { token: dev.token, method: "POST" });
    expect(created.status).toBe(201);
    expect(created.body.name).toBe("default");
    expectError(await apiJson(base, { token: dev.token, json: { name: 5 } }), 400, "name");
    expectError(await apiJson(base, { token: dev.token, json: { name: "" } }), 400, "name");
  });

  it("answers 404 for unknown, malformed and other projects' key ids", async () => {
    const dev = await signupDeveloper();
    const other = await signupDeveloper();
    const base = `/v1/admin/projects/${dev.projectId}/client-keys`;
    expectError(await apiJson(`${base}/${crypto.randomUUID()}`, { token: dev.token, method: "DELETE" }), 404);
    expectError(await apiJson(`${base}/nope`, { token: dev.token, method: "DELETE" }), 404);
    const otherKeys = await apiJson(`/v1/admin/projects/${other.projectId}/client-keys`, {
      token: other.token,
    });
    const otherKeyId = otherKeys.body.client_keys[0].id;
    expectError(await apiJson(`${base}/${otherKeyId}`, { token: dev.token, method: "DELETE" }), 404);
    const stillThere = await apiJson(`/v1/admin/projects/${other.projectId}/client-keys`, {
      token: other.token,
    });
    expect(stillThere.body.client_keys[0].revoked).toBe(false);
  });
});
