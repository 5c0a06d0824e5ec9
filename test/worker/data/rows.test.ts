import { beforeAll, describe, expect, it } from "vitest";
import { expectError } from "../helpers.ts";
import { createCollection, type DataProject, data, dataProject, insert } from "./fixtures.ts";

let p: DataProject;

beforeAll(async () => {
  p = await dataProject();
  await createCollection(p, {
    name: "things",
    columns: [
      { name: "title", type: "text", required: true },
      { name: "calories", type: "integer" },
      { name: "big", type: "bigint" },
      { name: "price", type: "number" },
      { name: "done", type: "boolean", default: false },
      { name: "at", type: "timestamp" },
      { name: "day", type: "date" },
      { name: "ref", type: "uuid" },
      { name: "meta", type: "json" },
      { name: "tags", type: "text[]" },
      { name: "nums", type: "integer[]" },
      { name: "sku", type: "text", unique: true },
      { name: "kind", type: "text", default: "plain" },
    ],
    access: { read: "public", write: "owner" },
  });
});

describe("rows", () => {
  it("inserts every column type and reads it back unchanged (201)", async () => {
    const input = {
      title: "All types",
      calories: 540,
      big: 9007199254740991,
      price: 12.25,
      done: true,
      at: "2026-11-01T12:30:00Z",
      day: "2026-11-02",
      ref: "0190f2a4-0000-7000-8000-000000000001",
      meta: { nested: { list: [1, "two", null] } },
      tags: ["a", "b"],
      nums: [1, 2, 3],
      sku: "sku-1",
    };
    const row = await insert(p, p.developer, "things", input);
    expect(row).toMatchObject({ ...input, at: "2026-11-01T12:30:00+00:00", kind: "plain", owner_id: null });
    expect(row.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7/);
    expect(Date.parse(row.created_at)).not.toBeNaN();
    const got = await data(p, p.developer, "things", `rows/${row.id}`);
    expect(got).toEqual({ status: 200, body: row });
  });

  it("stamps owner_id from the session and ignores nothing silently", async () => {
    const row = await insert(p, p.userA, "things", { title: "mine" });
    expect(row.owner_id).toBe(p.userA.user.userId);
    expect(row.done).toBe(false);
  });

  it("rejects unknown and server-managed keys with the writable columns listed", async () => {
    const unknown = await data(p, p.developer, "things", "rows", { json: { title: "x", colour: "red" } });
    expectError(unknown, 400, 'unknown column "colour"; writable columns: title, calories');
    for (const key of ["id", "owner_id", "created_at", "updated_at", "deleted_at"]) {
      const res = await data(p, p.userA, "things", "rows", { json: { title: "x", [key]: null } });
      expectError(res, 400, `"${key}" is server-managed`);
    }
  });

  it("answers 400 naming the field for wrong types and a missing required column", async () => {
    expectError(await data(p, p.developer, "things", "rows", { json: { calories: 1 } }), 400, "title");
    expectError(
      await data(p, p.developer, "things", "rows", { json: { title: "x", calories: "many" } }),
      400,
      "calories",
    );
    expectError(
      await data(p, p.developer, "things", "rows", { json: { title: "x", at: "soon" } }),
      400,
      "at",
    );
    // Valid shape, impossible date: Postgres refuses it → still a 400, never a 500.
    expectError(
      await data(p, p.developer, "things", "rows", { json: { title: "x", day: "2026-02-30" } }),
      400,
    );
    expectError(
      await data(p, p.developer, "things", "rows", { json: { title: "x", big: "99999999999999999999" } }),
      400,
    );
    expectError(await data(p, p.developer, "things", "rows", { json: [1, 2] }), 400);
    const res = await data(p, p.developer, "things", "rows", { method: "POST" });
    expectError(res, 400, "title");
  });

  it("answers 409 on a unique violation", async () => {
    await insert(p, p.developer, "things", { title: "a", sku: "dup" });
    expectError(await data(p, p.developer, "things", "rows", { json: { title: "b", sku: "dup" } }), 409);
  });

  it("merge-patches a row, bumps updated_at, and clears with null", async () => {
    const row = await insert(p, p.developer, "things", { title: "before", calories: 100, price: 1 });
    const patched = await data(p, p.developer, "things", `rows/${row.id}`, {
      method: "PATCH",
      json: { calories: 200, price: null },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ id: row.id, title: "before", calories: 200, price: null });
    expect(Date.parse(patched.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(row.updated_at));
    expect(patched.body.created_at).toBe(row.created_at);
    expectError(
      await data(p, p.developer, "things", `rows/${row.id}`, { method: "PATCH", json: { title: null } }),
      400,
      "title",
    );
    expectError(
      await data(p, p.developer, "things", `rows/${row.id}`, { method: "PATCH", json: { id: row.id } }),
      400,
      "server-managed",
    );
  });

  it("soft-deletes: the row disappears from get, list, find, update and delete", async () => {
    const row = await insert(p, p.developer, "things", { title: "soft" });
    const deleted = await data(p, p.developer, "things", `rows/${row.id}`, { method: "DELETE" });
    expect(deleted).toEqual({ status: 200, body: { id: row.id, deleted: true, hard: false } });
    expectError(await data(p, p.developer, "things", `rows/${row.id}`), 404);
    const found = await data(p, p.developer, "things", "find", { json: { where: { id: row.id } } });
    expect(found.body.rows).toEqual([]);
    expectError(
      await data(p, p.developer, "things", `rows/${row.id}`, { method: "PATCH", json: { calories: 1 } }),
      404,
    );
    expectError(await data(p, p.developer, "things", `rows/${row.id}`, { method: "DELETE" }), 404);
  });

  it("hard-deletes in developer scope only", async () => {
    const row = await insert(p, p.userA, "things", { title: "hard" });
    expectError(
      await data(p, p.userA, "things", `rows/${row.id}?hard=true`, { method: "DELETE" }),
      403,
      "developer",
    );
    expect((await data(p, p.userA, "things", `rows/${row.id}`)).status).toBe(200);
    const deleted = await data(p, p.developer, "things", `rows/${row.id}?hard=true`, { method: "DELETE" });
    expect(deleted).toEqual({ status: 200, body: { id: row.id, deleted: true, hard: true } });
    expectError(await data(p, p.developer, "things", `rows/${row.id}`), 404);
  });

  it("answers 404 for unknown rows, malformed ids and unknown collections", async () => {
    expectError(await data(p, p.developer, "things", "rows/0190f2a4-0000-7000-8000-00000000ffff"), 404);
    expectError(await data(p, p.developer, "things", "rows/not-a-uuid"), 404, "not found");
    expectError(await data(p, p.developer, "nothing_here", "rows"), 404);
  });
});
