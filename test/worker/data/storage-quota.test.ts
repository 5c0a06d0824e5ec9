/**
 * The storage quota of an app (src/data/storage-quota.ts; 2 MiB in the tests, vitest.config.ts):
 * once a background measurement finds the app's collection tables over it, inserts and updates are
 * refused with 403 `quota_exceeded` through REST and the app MCP alike, while reads and deletes go
 * on and other apps are not affected. When the measurement is due again is covered by
 * test/unit/data/storage-quota.test.ts (it needs a clock).
 */
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { projectSchemaName } from "../../../src/data/sql.ts";
import { connectClient, resultJson } from "../app-mcp/mcp-client.ts";
import { apiJson, expectError, testDb } from "../helpers.ts";
import { createCollection, type DataProject, data, dataProject, find, insert } from "./fixtures.ts";

const NOTES = {
  name: "notes",
  columns: [{ name: "title", type: "text", required: true }],
  access: { read: "public", write: "owner" },
};

let p: DataProject;
let client: Awaited<ReturnType<typeof connectClient>>;
let kept: string;
let gone: string;

beforeAll(async () => {
  p = await dataProject();
  await createCollection(p, NOTES);
  const exposure = `/v1/admin/projects/${p.dev.projectId}/app-mcp/exposure`;
  const exposed = await apiJson(exposure, {
    token: p.dev.token,
    method: "PUT",
    json: { collections: ["notes"] },
  });
  expect(exposed.status, JSON.stringify(exposed.body)).toBe(200);
  // Two rows to delete later (written directly: no write through the Worker before the filler), and
  // ≈ 3.2 MB of hex (pglz barely compresses it) in a table of the app's schema: past the 2 MiB quota.
  const schema = projectSchemaName(p.dev.projectId);
  kept = crypto.randomUUID();
  gone = crypto.randomUUID();
  await testDb().execute(sql`INSERT INTO ${sql.identifier(schema)}.notes (id, owner_id, title)
    VALUES (${kept}::uuid, NULL, 'kept'), (${gone}::uuid, ${p.userA.user.userId}::uuid, 'gone')`);
  await testDb().execute(sql`CREATE TABLE ${sql.identifier(schema)}.filler AS
    SELECT string_agg(md5(random()::text), '') AS blob FROM generate_series(1, 100000)`);
  client = await connectClient(`http://local/app/${p.dev.projectId}/mcp`, {
    authorization: `Bearer ${p.dev.token}`,
  });
});

afterAll(() => client?.close());

describe("storage quota", () => {
  it("refuses inserts and updates past the quota (REST and app MCP), never reads, deletes or other apps", async () => {
    // The first insert is admitted (nothing measured yet) and starts the measurement in the
    // background; polled, as it answers after the response (an insert admitted meanwhile is harmless).
    const refused = await vi.waitFor(
      async () => {
        const res = await data(p, p.developer, "notes", "rows", { json: { title: "more" } });
        expect(res.status).toBe(403);
        return res;
      },
      { timeout: 10_000, interval: 50 },
    );
    expectError(refused, 403, "over its storage quota of 2.0 MiB");
    expect(refused.body.error.code).toBe("quota_exceeded");

    const patch = { method: "PATCH", json: { title: "changed" } };
    expect((await data(p, p.developer, "notes", `rows/${kept}`, patch)).body.error.code).toBe(
      "quota_exceeded",
    );
    expect((await data(p, p.userA, "notes", "rows", { json: { title: "x" } })).status).toBe(403);

    const mcpInsert = await client.callTool({ name: "notes_insert", arguments: { title: "via mcp" } });
    expect(mcpInsert.isError).toBe(true);
    expect(resultJson(mcpInsert).error.code).toBe("quota_exceeded");
    const mcpUpdate = await client.callTool({
      name: "notes_update",
      arguments: { id: kept, patch: { title: "changed" } },
    });
    expect(resultJson(mcpUpdate).error.code).toBe("quota_exceeded");

    // Reads and deletes (the way back under the quota) go on.
    const mcpFind = await client.callTool({ name: "notes_find", arguments: {} });
    expect(mcpFind.isError).toBe(false);
    expect((await find(p, p.developer, "notes", {})).rows.map((r) => r.title).sort()).toContain("kept");
    expect((await data(p, p.userA, "notes", `rows/${gone}`, { method: "DELETE" })).status).toBe(200);
    const hard = await data(p, p.developer, "notes", `rows/${kept}?hard=true`, { method: "DELETE" });
    expect(hard.status, JSON.stringify(hard.body)).toBe(200);

    // The quota is the app's: another app of the same isolate still writes.
    const other = await dataProject();
    await createCollection(other, NOTES);
    expect((await insert(other, other.developer, "notes", { title: "fine" })).title).toBe("fine");
  });
});
