import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { apiJson, expectError, testDb } from "../helpers.ts";
import { createCollection, type DataProject, data, dataProject, find, insert } from "./fixtures.ts";

let p: DataProject;

const PAYLOADS = [
  "'; DROP TABLE collections; --",
  '"; DROP TABLE projects; --',
  "1); SELECT pg_sleep(5); --",
  "x' OR '1'='1",
  "/* comment */ -- line",
  "$1 $$ dollar $$ \\ backslash",
  "ünïcödé 🍰 \u202e rtl \u200b zero-width",
];

beforeAll(async () => {
  p = await dataProject();
  await createCollection(p, {
    name: "notes",
    columns: [
      { name: "body", type: "text" },
      { name: "tags", type: "text[]" },
      { name: "meta", type: "json" },
      { name: "label", type: "text", default: "it's -- ; /* */ 'quoted'" },
    ],
  });
});

describe("SQL in values is stored literally, never executed", () => {
  it("round-trips hostile strings through insert, get, find, patch and arrays/json", async () => {
    for (const payload of PAYLOADS) {
      const row = await insert(p, p.developer, "notes", {
        body: payload,
        tags: [payload, "{x}", ","],
        meta: { [payload]: payload },
      });
      expect(row).toMatchObject({ body: payload, tags: [payload, "{x}", ","], meta: { [payload]: payload } });
      expect(row.label).toBe("it's -- ; /* */ 'quoted'");
      const found = await find(p, p.developer, "notes", {
        where: { body: payload, tags: { contains: [payload] }, meta: { has_key: payload } },
      });
      expect(found.rows.map((r) => r.id)).toEqual([row.id]);
      const ilike = await find(p, p.developer, "notes", { where: { body: { starts_with: payload } } });
      expect(ilike.rows.map((r) => r.id)).toContain(row.id);
      const patched = await data(p, p.developer, "notes", `rows/${row.id}`, {
        method: "PATCH",
        json: { body: `${payload}!` },
      });
      expect(patched.body.body).toBe(`${payload}!`);
    }
    // The platform tables are intact.
    const count = await testDb().execute(sql`select count(*)::int as n from collections`);
    expect(Number(count.rows[0]?.n)).toBeGreaterThan(0);
  });

  it("a pg_sleep payload in every value position returns promptly", async () => {
    const started = Date.now();
    await find(p, p.developer, "notes", {
      where: {
        or: [{ body: { in: ["x'); select pg_sleep(3); --"] } }, { meta: { contains: { a: "pg_sleep(3)" } } }],
      },
    });
    expect(Date.now() - started).toBeLessThan(2500);
  });

  it("refuses NUL characters with a 400, not a 500", async () => {
    expectError(await data(p, p.developer, "notes", "rows", { json: { body: "a\u0000b" } }), 400);
    expectError(await data(p, p.developer, "notes", "rows", { json: { meta: { k: "a\u0000b" } } }), 400);
  });
});

describe("SQL in identifiers is rejected", () => {
  it("in where keys, operators, order, metrics, group_by and cursors", async () => {
    const bad: unknown[] = [
      { where: { 'body" = body; --': 1 } },
      { where: { body: { "eq; drop": "x" } } },
      { where: { "1=1) or (": true } },
      { order: "body; select pg_sleep(5)" },
      { order: 'created_at desc, (select 1)"' },
      { cursor: "eyJhIjoxfQ'; --" },
    ];
    for (const input of bad) expectError(await data(p, p.developer, "notes", "find", { json: input }), 400);
    for (const input of [
      { metrics: [{ fn: "count", column: "body); drop table notes; --" }] },
      { metrics: [{ fn: "sum(1); --" }] },
      { metrics: [{ fn: "count" }], group_by: ["body, pg_sleep(5)"] },
    ]) {
      expectError(await data(p, p.developer, "notes", "aggregate", { json: input }), 400);
    }
  });

  it("in collection names, column names and row ids in the URL", async () => {
    const base = `/v1/admin/projects/${p.dev.projectId}/collections`;
    for (const name of ['notes"; drop table x; --', "ünïcödé", "notes--", "NOTES"]) {
      expectError(await apiJson(base, { token: p.dev.token, json: { name } }), 400);
      expectError(
        await apiJson(base, {
          token: p.dev.token,
          json: { name: "ok_name", columns: [{ name, type: "text" }] },
        }),
        400,
      );
    }
    expectError(await data(p, p.developer, encodeURIComponent("notes; drop table notes"), "rows"), 404);
    expectError(await data(p, p.developer, "notes", `rows/${encodeURIComponent("' or 1=1 --")}`), 404);
    expectError(
      await apiJson(`${base}/notes`, {
        method: "PATCH",
        token: p.dev.token,
        json: { drop_columns: ["body; --"] },
      }),
      400,
    );
    // Still there, still working.
    expect((await data(p, p.developer, "notes", "rows")).status).toBe(200);
  });
});
