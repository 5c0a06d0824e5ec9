import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { RECIPES_COLUMNS } from "../../fixtures.ts";
import { apiJson, expectError, signupDeveloper, testDb } from "../helpers.ts";
import { needsPgvector, vectorColumns } from "../pgvector.ts";

const recipes = { name: "recipes", columns: vectorColumns(RECIPES_COLUMNS) };

async function indexDefinitions(projectId: string, table: string): Promise<string> {
  const result = await testDb().execute(
    sql`select indexdef from pg_indexes where schemaname = ${`app_${projectId.replace(/-/g, "")}`} and tablename = ${table}`,
  );
  return result.rows.map((r) => String(r.indexdef)).join("\n");
}

async function metaRev(projectId: string): Promise<number> {
  const result = await testDb().execute(sql`select meta_rev from projects where id = ${projectId}::uuid`);
  return Number(result.rows[0]?.meta_rev);
}

describe("collections admin", () => {
  it("creates a collection (201, DESIGN.md shape), lists it and bumps meta_rev", async () => {
    const dev = await signupDeveloper();
    const before = await metaRev(dev.projectId);
    const base = `/v1/admin/projects/${dev.projectId}/collections`;
    const created = await apiJson(base, { token: dev.token, json: recipes });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ ...recipes, access: { read: "owner", write: "owner" } });
    expect(await metaRev(dev.projectId)).toBe(before + 1);

    const listed = await apiJson(base, { token: dev.token });
    expect(listed.status).toBe(200);
    expect(listed.body.collections).toEqual([created.body]);

    const defs = await indexDefinitions(dev.projectId, "recipes");
    expect(defs).toContain("(created_at, id)");
    expect(defs).toContain("(owner_id, created_at, id)");
  });

  it("indexes vector columns with HNSW (cosine)", async (ctx) => {
    needsPgvector(ctx);
    const dev = await signupDeveloper();
    const created = await apiJson(`/v1/admin/projects/${dev.projectId}/collections`, {
      token: dev.token,
      json: recipes,
    });
    expect(created.status).toBe(201);
    expect(await indexDefinitions(dev.projectId, "recipes")).toContain("hnsw (embedding vector_cosine_ops)");
  });

  it("answers 409 for a duplicate name and 400 for invalid definitions", async () => {
    const dev = await signupDeveloper();
    const base = `/v1/admin/projects/${dev.projectId}/collections`;
    expect((await apiJson(base, { token: dev.token, json: recipes })).status).toBe(201);
    expectError(await apiJson(base, { token: dev.token, json: recipes }), 409, "already exists");
    expectError(
      await apiJson(base, { token: dev.token, json: { name: "Bad-Name" } }),
      400,
      "lowercase identifier",
    );
    expectError(await apiJson(base, { token: dev.token, json: { name: "select" } }), 400, "reserved");
    expectError(await apiJson(base, { token: dev.token, json: { name: "a".repeat(52) } }), 400, "at most 51");
    expectError(
      await apiJson(base, {
        token: dev.token,
        json: { name: "x", columns: [{ name: "owner_id", type: "uuid" }] },
      }),
      400,
      "server-managed",
    );
    expectError(
      await apiJson(base, { token: dev.token, json: { name: 'x"; drop table projects; --' } }),
      400,
      "lowercase identifier",
    );
    expectError(await apiJson(base, { token: dev.token, json: { name: "ok", columns: "nope" } }), 400);
  });

  it("alters: add / drop columns and change the policy, each bumping meta_rev", async () => {
    const dev = await signupDeveloper();
    const base = `/v1/admin/projects/${dev.projectId}/collections`;
    await apiJson(base, { token: dev.token, json: recipes });
    const rev = await metaRev(dev.projectId);
    const altered = await apiJson(`${base}/recipes`, {
      method: "PATCH",
      token: dev.token,
      json: {
        add_columns: [{ name: "rating", type: "number", default: 2.5, required: true }],
        drop_columns: ["tags"],
        access: { read: "public" },
      },
    });
    expect(altered.status).toBe(200);
    expect(altered.body.columns.map((c: { name: string }) => c.name)).toEqual(
      vectorColumns([
        { name: "title", type: "text" },
        { name: "calories", type: "integer" },
        { name: "embedding", type: "vector" },
        { name: "rating", type: "number" },
      ]).map((c) => c.name),
    );
    expect(altered.body.access).toEqual({ read: "public", write: "owner" });
    expect(await metaRev(dev.projectId)).toBe(rev + 1);

    const row = await apiJson(`/v1/projects/${dev.projectId}/collections/recipes/rows`, {
      token: dev.token,
      json: { title: "Soup" },
    });
    expect(row.body).toMatchObject({ title: "Soup", rating: 2.5 });
    expect(row.body).not.toHaveProperty("tags");

    expectError(
      await apiJson(`${base}/recipes`, {
        method: "PATCH",
        token: dev.token,
        json: { drop_columns: ["nope"] },
      }),
      400,
      'no column "nope"',
    );
    expectError(
      await apiJson(`${base}/recipes`, {
        method: "PATCH",
        token: dev.token,
        json: { add_columns: [{ name: "title", type: "text" }] },
      }),
      409,
    );
    expectError(
      await apiJson(`${base}/missing`, { method: "PATCH", token: dev.token, json: { access: {} } }),
      404,
    );
  });

  it("drops a collection: table gone, rows routes 404, meta_rev bumped", async () => {
    const dev = await signupDeveloper();
    const base = `/v1/admin/projects/${dev.projectId}/collections`;
    await apiJson(base, { token: dev.token, json: recipes });
    const rev = await metaRev(dev.projectId);
    const dropped = await apiJson(`${base}/recipes`, { method: "DELETE", token: dev.token });
    expect(dropped).toEqual({ status: 200, body: { name: "recipes", deleted: true } });
    expect(await metaRev(dev.projectId)).toBe(rev + 1);
    expectError(
      await apiJson(`/v1/projects/${dev.projectId}/collections/recipes/rows`, { token: dev.token }),
      404,
    );
    expectError(await apiJson(`${base}/recipes`, { method: "DELETE", token: dev.token }), 404);
    // The name can be reused.
    expect((await apiJson(base, { token: dev.token, json: recipes })).status).toBe(201);
  });

  it("needs the owning developer's token", async () => {
    const [dev, other] = await Promise.all([signupDeveloper(), signupDeveloper()]);
    const base = `/v1/admin/projects/${dev.projectId}/collections`;
    expectError(await apiJson(base, { json: recipes }), 401);
    expectError(await apiJson(base, { token: other.token, json: recipes }), 404);
    expectError(await apiJson(base, { token: other.token }), 404);
  });
});
