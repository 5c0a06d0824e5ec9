import { beforeAll, describe, expect, it } from "vitest";
import { expectError } from "../helpers.ts";
import { createCollection, type DataProject, data, dataProject, find, insert } from "./fixtures.ts";

let p: DataProject;
const ids: Record<string, string> = {};

const seed = [
  {
    title: "Apple pie",
    calories: 300,
    big: 10,
    price: 1.5,
    vegan: true,
    at: "2026-01-01T00:00:00Z",
    day: "2026-01-01",
    tags: ["dessert", "fruit"],
    meta: { a: 1, src: "x" },
  },
  {
    title: "Banana bread",
    calories: 250,
    big: 20,
    price: 2.5,
    vegan: false,
    at: "2026-02-01T00:00:00Z",
    day: "2026-02-01",
    tags: ["bread"],
    meta: { b: 2 },
  },
  {
    title: "Carrot cake",
    calories: 450,
    big: 30,
    price: 3.5,
    vegan: true,
    at: "2026-03-01T00:00:00Z",
    day: "2026-03-01",
    tags: ["dessert"],
    meta: { a: 2 },
  },
  {
    title: "Dal",
    calories: null,
    big: null,
    price: null,
    vegan: null,
    at: null,
    day: null,
    tags: null,
    meta: null,
  },
];

beforeAll(async () => {
  p = await dataProject();
  await createCollection(p, {
    name: "dishes",
    columns: [
      { name: "title", type: "text", required: true },
      { name: "calories", type: "integer" },
      { name: "big", type: "bigint" },
      { name: "price", type: "number" },
      { name: "vegan", type: "boolean" },
      { name: "at", type: "timestamp" },
      { name: "day", type: "date" },
      { name: "tags", type: "text[]" },
      { name: "meta", type: "json" },
    ],
  });
  for (const row of seed) ids[row.title] = (await insert(p, p.developer, "dishes", row)).id;
});

async function titles(where: unknown, order = "title asc"): Promise<string[]> {
  const res = await find(p, p.developer, "dishes", { where, order });
  return res.rows.map((r) => r.title as string);
}

describe("find operators", () => {
  it("text: eq (bare and explicit), neq, in, nin, like, ilike, starts_with, is_null", async () => {
    expect(await titles({ title: "Dal" })).toEqual(["Dal"]);
    expect(await titles({ title: { eq: "Dal" } })).toEqual(["Dal"]);
    expect(await titles({ title: { neq: "Dal" } })).toEqual(["Apple pie", "Banana bread", "Carrot cake"]);
    expect(await titles({ title: { in: ["Dal", "Apple pie", "none"] } })).toEqual(["Apple pie", "Dal"]);
    expect(await titles({ title: { nin: ["Dal", "Apple pie"] } })).toEqual(["Banana bread", "Carrot cake"]);
    expect(await titles({ title: { like: "%a_e%" } })).toEqual(["Carrot cake"]);
    expect(await titles({ title: { ilike: "%BREAD" } })).toEqual(["Banana bread"]);
    expect(await titles({ title: { starts_with: "Ca" } })).toEqual(["Carrot cake"]);
    expect(await titles({ title: { is_null: false } })).toHaveLength(4);
  });

  it("numbers: eq, neq (null counts as not equal), gt, gte, lt, lte, in, nin, is_null", async () => {
    expect(await titles({ calories: 300 })).toEqual(["Apple pie"]);
    expect(await titles({ calories: { neq: 300 } })).toEqual(["Banana bread", "Carrot cake", "Dal"]);
    expect(await titles({ calories: { gt: 250 } })).toEqual(["Apple pie", "Carrot cake"]);
    expect(await titles({ calories: { gte: 250, lt: 450 } })).toEqual(["Apple pie", "Banana bread"]);
    expect(await titles({ calories: { lte: 250 } })).toEqual(["Banana bread"]);
    expect(await titles({ calories: { in: [250, 450] } })).toEqual(["Banana bread", "Carrot cake"]);
    expect(await titles({ calories: { nin: [250, 450] } })).toEqual(["Apple pie", "Dal"]);
    expect(await titles({ calories: { is_null: true } })).toEqual(["Dal"]);
    expect(await titles({ big: { gt: 15 } })).toEqual(["Banana bread", "Carrot cake"]);
    expect(await titles({ big: { in: ["10", 30] } })).toEqual(["Apple pie", "Carrot cake"]);
    expect(await titles({ price: { lt: 3 } })).toEqual(["Apple pie", "Banana bread"]);
  });

  it("timestamps and dates compare chronologically", async () => {
    expect(await titles({ at: { gte: "2026-02-01T00:00:00Z" } })).toEqual(["Banana bread", "Carrot cake"]);
    expect(await titles({ at: { lt: "2026-01-15T00:00:00+01:00" } })).toEqual(["Apple pie"]);
    expect(await titles({ day: { in: ["2026-03-01", "2026-01-01"] } })).toEqual(["Apple pie", "Carrot cake"]);
    expect(await titles({ day: { is_null: true } })).toEqual(["Dal"]);
  });

  it("boolean: eq, neq, is_null", async () => {
    expect(await titles({ vegan: true })).toEqual(["Apple pie", "Carrot cake"]);
    expect(await titles({ vegan: { neq: true } })).toEqual(["Banana bread", "Dal"]);
    expect(await titles({ vegan: { is_null: true } })).toEqual(["Dal"]);
  });

  it("arrays: contains, overlaps, is_null; json: contains, has_key, is_null", async () => {
    expect(await titles({ tags: { contains: ["dessert", "fruit"] } })).toEqual(["Apple pie"]);
    // One element alone reads as it is meant (seed 004 names `contains` among the find operators).
    expect(await titles({ tags: { contains: "fruit" } })).toEqual(["Apple pie"]);
    expect(await titles({ tags: { overlaps: ["bread", "fruit"] } })).toEqual(["Apple pie", "Banana bread"]);
    expect(await titles({ tags: { is_null: true } })).toEqual(["Dal"]);
    expect(await titles({ meta: { contains: { a: 1 } } })).toEqual(["Apple pie"]);
    expect(await titles({ meta: { has_key: "a" } })).toEqual(["Apple pie", "Carrot cake"]);
    expect(await titles({ meta: { is_null: true } })).toEqual(["Dal"]);
  });

  it("server-managed columns: id, owner_id, created_at", async () => {
    expect(await titles({ id: ids.Dal })).toEqual(["Dal"]);
    expect(await titles({ owner_id: { is_null: true } })).toHaveLength(4);
    expect(await titles({ created_at: { lt: "2000-01-01T00:00:00Z" } })).toEqual([]);
  });

  it("and / or / not combine, and not is the exact complement", async () => {
    expect(await titles({ or: [{ calories: { lt: 260 } }, { title: "Dal" }] })).toEqual([
      "Banana bread",
      "Dal",
    ]);
    expect(await titles({ and: [{ vegan: true }, { calories: { gt: 400 } }] })).toEqual(["Carrot cake"]);
    expect(await titles({ not: { calories: { gt: 260 } } })).toEqual(["Banana bread", "Dal"]);
    expect(await titles({ not: { or: [{ vegan: true }, { tags: { contains: ["bread"] } }] } })).toEqual([
      "Dal",
    ]);
  });

  it("answers 400 for operators a type lacks, unknown columns, bad values and bad orders", async () => {
    const bad = [
      { where: { calories: { like: "3%" } } },
      { where: { tags: { gt: 1 } } },
      { where: { nope: 1 } },
      { where: { calories: { gt: "many" } } },
      { where: { at: { gt: "yesterday" } } },
      { where: { or: [] } },
      { order: "tags asc" },
      { order: "title sideways" },
      { limit: 0 },
      { limit: 201 },
    ];
    for (const input of bad) expectError(await data(p, p.developer, "dishes", "find", { json: input }), 400);
  });
});

describe("order and cursors", () => {
  it("defaults to created_at desc (newest first) for list and find", async () => {
    const list = await data(p, p.developer, "dishes", "rows");
    expect(list.body.rows.map((r: { title: string }) => r.title)).toEqual([
      "Dal",
      "Carrot cake",
      "Banana bread",
      "Apple pie",
    ]);
    expect(list.body.next_cursor).toBeNull();
    const found = await find(p, p.developer, "dishes", {});
    expect(found.rows.map((r) => r.title)).toEqual(["Dal", "Carrot cake", "Banana bread", "Apple pie"]);
  });

  it("orders by any sortable column with NULLs last ascending / first descending, and pages NULL-safely", async () => {
    for (const [order, expected] of [
      ["calories asc", ["Banana bread", "Apple pie", "Carrot cake", "Dal"]],
      ["calories desc", ["Dal", "Carrot cake", "Apple pie", "Banana bread"]],
      ["price desc", ["Dal", "Carrot cake", "Banana bread", "Apple pie"]],
      ["vegan asc", ["Banana bread", expect.any(String), expect.any(String), "Dal"]],
    ] as const) {
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page = await find(p, p.developer, "dishes", { order, limit: 1, cursor });
        seen.push(...page.rows.map((r) => r.title as string));
        cursor = page.next_cursor;
      } while (cursor);
      expect(seen, order).toEqual(expected);
    }
  });

  it("refuses a cursor from another order (400) and garbage cursors", async () => {
    const page = await find(p, p.developer, "dishes", { order: "title asc", limit: 1 });
    expect(page.next_cursor).toEqual(expect.any(String));
    expectError(
      await data(p, p.developer, "dishes", "find", {
        json: { order: "calories asc", cursor: page.next_cursor },
      }),
      400,
      "cursor",
    );
    expectError(
      await data(p, p.developer, "dishes", "find", { json: { cursor: page.next_cursor } }),
      400,
      "cursor",
    );
    expectError(await data(p, p.developer, "dishes", "rows?cursor=%27%3B--"), 400, "cursor");
  });
});

describe("cursor walks", () => {
  it("walks several pages: no row twice, none missed, stable under concurrent inserts", async () => {
    const q = await dataProject();
    await createCollection(q, { name: "events", columns: [{ name: "n", type: "integer", required: true }] });
    const originals: string[] = [];
    for (let batch = 0; batch < 5; batch++) {
      const rows = await Promise.all(
        Array.from({ length: 10 }, (_, i) => insert(q, q.developer, "events", { n: batch * 10 + i })),
      );
      originals.push(...rows.map((r) => r.id as string));
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = `rows?limit=7${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
      const page = await data(q, q.developer, "events", query);
      expect(page.status).toBe(200);
      seen.push(...page.body.rows.map((r: { id: string }) => r.id));
      cursor = page.body.next_cursor;
      pages++;
      // Concurrent writers: new rows land while we page.
      await Promise.all([
        insert(q, q.developer, "events", { n: 1000 + pages }),
        insert(q, q.userA, "events", { n: 2000 + pages }),
      ]);
    } while (cursor);
    expect(pages).toBe(8);
    expect(new Set(seen).size).toBe(seen.length);
    expect([...seen].sort()).toEqual([...originals].sort());

    const byN: number[] = [];
    cursor = null;
    do {
      const page = await find(q, q.developer, "events", {
        where: { n: { lt: 1000 } },
        order: "n asc",
        limit: 9,
        cursor,
      });
      byN.push(...page.rows.map((r) => r.n as number));
      cursor = page.next_cursor;
    } while (cursor);
    expect(byN).toEqual(Array.from({ length: 50 }, (_, i) => i));
  });
});
