import { beforeAll, describe, expect, it } from "vitest";
import { expectError } from "../helpers.ts";
import { needsPgvector, vectorColumns, vectorValues } from "../pgvector.ts";
import { createCollection, type DataProject, data, dataProject, insert } from "./fixtures.ts";

let p: DataProject;

beforeAll(async () => {
  p = await dataProject();
  await createCollection(p, {
    name: "meals",
    columns: vectorColumns([
      { name: "title", type: "text", required: true },
      { name: "course", type: "text" },
      { name: "calories", type: "integer" },
      { name: "price", type: "number" },
      { name: "served", type: "date" },
      { name: "embedding", type: "vector", dimensions: 3 },
    ]),
  });
  const rows = [
    { title: "Soup", course: "starter", calories: 150, price: 4, served: "2026-01-02", embedding: [1, 0, 0] },
    {
      title: "Salad",
      course: "starter",
      calories: 200,
      price: 5.5,
      served: "2026-01-01",
      embedding: [0.9, 0.1, 0],
    },
    { title: "Steak", course: "main", calories: 690, price: 20, served: "2026-01-03", embedding: [0, 1, 0] },
    { title: "Tofu", course: "main", calories: 340, price: 12, served: null, embedding: [0.2, 0.7, 0.7] },
    { title: "Water", course: null, calories: null, price: null, served: null, embedding: null },
  ];
  for (const row of rows) await insert(p, p.developer, "meals", vectorValues(row));
});

const aggregate = (json: unknown) => data(p, p.developer, "meals", "aggregate", { json });

describe("aggregate", () => {
  it("computes count / sum / avg / min / max at once as JSON numbers", async () => {
    const res = await aggregate({
      metrics: [
        { fn: "count" },
        { fn: "count", column: "calories" },
        { fn: "sum", column: "calories" },
        { fn: "avg", column: "price" },
        { fn: "min", column: "served" },
        { fn: "max", column: "calories" },
      ],
    });
    expect(res).toEqual({
      status: 200,
      body: {
        rows: [
          {
            count: 5,
            count_calories: 4,
            sum_calories: 1380,
            avg_price: 10.375,
            min_served: "2026-01-01",
            max_calories: 690,
          },
        ],
      },
    });
  });

  it("groups by columns (groups ordered, NULL group included) with a where", async () => {
    const res = await aggregate({
      metrics: [{ fn: "count" }, { fn: "sum", column: "calories" }],
      group_by: ["course"],
    });
    expect(res.body.rows).toEqual([
      { count: 2, sum_calories: 1030, course: "main" },
      { count: 2, sum_calories: 350, course: "starter" },
      { count: 1, sum_calories: null, course: null },
    ]);
    const filtered = await aggregate({
      metrics: [{ fn: "count" }, { fn: "avg", column: "calories" }],
      group_by: ["course"],
      where: { calories: { gt: 160 } },
    });
    expect(filtered.body.rows).toEqual([
      { count: 2, avg_calories: 515, course: "main" },
      { count: 1, avg_calories: 200, course: "starter" },
    ]);
  });

  it("answers 400 for sums of text, unknown columns and empty metrics", async () => {
    expectError(await aggregate({ metrics: [{ fn: "sum", column: "title" }] }), 400);
    expectError(await aggregate({ metrics: [{ fn: "max", column: "nope" }] }), 400);
    expectError(await aggregate({ metrics: [] }), 400);
    expectError(await aggregate({ metrics: [{ fn: "count" }], group_by: ["embedding"] }), 400);
    expectError(await aggregate({ metrics: [{ fn: "median", column: "price" }] }), 400);
  });
});

describe("nearest", () => {
  it("orders by cosine distance, returns distance, honours limit and where", async (ctx) => {
    needsPgvector(ctx);
    const res = await data(p, p.developer, "meals", "nearest", { json: { vector: [1, 0, 0], limit: 3 } });
    expect(res.status).toBe(200);
    expect(res.body.rows.map((r: { title: string }) => r.title)).toEqual(["Soup", "Salad", "Tofu"]);
    const distances = res.body.rows.map((r: { distance: number }) => r.distance);
    expect(distances[0]).toBeCloseTo(0, 5);
    expect(distances[1]).toBeCloseTo(1 - 0.9 / Math.sqrt(0.82), 5);
    expect([...distances].sort((x, y) => x - y)).toEqual(distances);
    const mains = await data(p, p.developer, "meals", "nearest", {
      json: { vector: [1, 0, 0], where: { course: "main" } },
    });
    expect(mains.body.rows.map((r: { title: string }) => r.title)).toEqual(["Tofu", "Steak"]);
  });

  it("checks the vector length and refuses collections without vectors", async (ctx) => {
    needsPgvector(ctx);
    expectError(
      await data(p, p.developer, "meals", "nearest", { json: { vector: [1, 0] } }),
      400,
      "3 numbers",
    );
    expectError(await data(p, p.developer, "meals", "nearest", { json: { vector: [1, 0, "x"] } }), 400);
    expectError(
      await data(p, p.developer, "meals", "nearest", { json: { vector: [0, 0, 0] } }),
      400,
      "all zeros",
    );
    await createCollection(p, { name: "plain", columns: [{ name: "t", type: "text" }] });
    expectError(
      await data(p, p.developer, "plain", "nearest", { json: { vector: [1] } }),
      400,
      "no vector column",
    );
  });

  it('answers a stored zero vector with distance null, after every row with a distance (was the string "NaN")', async (ctx) => {
    needsPgvector(ctx);
    await createCollection(p, {
      name: "zeros",
      columns: vectorColumns([
        { name: "t", type: "text" },
        { name: "e", type: "vector", dimensions: 2 },
      ]),
    });
    await insert(p, p.developer, "zeros", vectorValues({ t: "zero", e: [0, 0] }));
    await insert(p, p.developer, "zeros", vectorValues({ t: "x", e: [1, 0] }));
    const res = await data(p, p.developer, "zeros", "nearest", { json: { vector: [0, 1] } });
    expect(res.status).toBe(200);
    expect(res.body.rows.map((r: { t: string; distance: number | null }) => [r.t, r.distance])).toEqual([
      ["x", 1],
      ["zero", null],
    ]);
  });
});
