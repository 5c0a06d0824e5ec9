import { toJsonSchema } from "@valibot/to-json-schema";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import type { CollectionMeta } from "../../../src/data/columns.ts";
import { buildOperationSchemas, SERVER_ONLY_ACTIONS } from "../../../src/data/schemas.ts";

const recipes: CollectionMeta = {
  projectId: "00000000-0000-4000-8000-000000000000",
  name: "recipes",
  columns: [
    { name: "title", type: "text", required: true, description: "Dish name" },
    { name: "calories", type: "integer" },
    { name: "tags", type: "text[]" },
    { name: "meta", type: "json" },
    { name: "served", type: "date", required: true, default: "2026-01-01" },
    { name: "embedding", type: "vector", dimensions: 3 },
  ],
  access: { read: "owner", write: "owner" },
};
const schemas = buildOperationSchemas(recipes);
const issue = (schema: v.GenericSchema, input: unknown) => {
  const result = v.safeParse(schema, input);
  return result.success ? null : `${v.getDotPath(result.issues[0]) ?? ""}: ${result.issues[0].message}`;
};

describe("insert schema", () => {
  it("accepts writable columns and needs required ones without a default", () => {
    expect(
      issue(schemas.insert, { title: "Cake", calories: 540, tags: ["x"], embedding: [1, 2, 3] }),
    ).toBeNull();
    expect(issue(schemas.insert, { calories: 1 })).toMatch(/^title: required column is missing/);
    expect(issue(schemas.insert, { title: "x", calories: null })).toBeNull();
    expect(issue(schemas.insert, { title: null })).not.toBeNull();
  });

  it("names unknown and server-managed keys and lists the writable columns", () => {
    expect(issue(schemas.insert, { title: "x", colour: "red" })).toBe(
      'colour: unknown column "colour"; writable columns: title, calories, tags, meta, served, embedding',
    );
    expect(issue(schemas.insert, { title: "x", owner_id: "00000000-0000-4000-8000-000000000000" })).toMatch(
      /"owner_id" is server-managed and cannot be set; writable columns: title/,
    );
    expect(issue(schemas.insert, { title: "x", id: "y" })).toMatch(/server-managed/);
  });

  it("checks value types per column", () => {
    expect(issue(schemas.insert, { title: "x", calories: 1.5 })).toMatch(/^calories:/);
    expect(issue(schemas.insert, { title: "x", calories: 2 ** 31 })).toMatch(/32-bit/);
    expect(issue(schemas.insert, { title: "x", tags: "a" })).toMatch(/^tags:/);
    expect(issue(schemas.insert, { title: "x", embedding: [1, 2] })).toMatch(/3 numbers/);
    expect(issue(schemas.insert, { title: "x", served: "yesterday" })).toMatch(/date like/);
  });
});

describe("find schema", () => {
  it("accepts typed operators, bare values and combinators", () => {
    expect(
      issue(schemas.find, {
        where: {
          calories: { lt: 200 },
          title: { ilike: "%cake%" },
          or: [{ tags: { contains: ["x"] } }, { not: { meta: { has_key: "k" } } }],
          created_at: { gte: "2026-01-01T00:00:00Z" },
        },
        order: "calories desc",
        limit: 20,
      }),
    ).toBeNull();
    expect(issue(schemas.find, { where: { title: "Cake" } })).toBeNull();
  });

  it("offers server-managed columns only the operators that can select something", () => {
    const id = "0190f2a4-0000-7000-8000-000000000001";
    expect(issue(schemas.find, { where: { id, owner_id: { in: [id] } } })).toBeNull();
    expect(
      issue(schemas.find, {
        where: { owner_id: { is_null: true }, updated_at: { lt: "2026-01-01T00:00:00Z" } },
      }),
    ).toBeNull();
    expect(issue(schemas.find, { where: { id: { neq: id } } })).toMatch(
      /unknown operator "neq"; allowed: eq, in$/,
    );
    expect(issue(schemas.find, { where: { id: { is_null: false } } })).toMatch(/unknown operator "is_null"/);
    expect(issue(schemas.find, { where: { created_at: "2026-01-01T00:00:00Z" } })).not.toBeNull();
    expect(issue(schemas.find, { where: { created_at: { eq: "2026-01-01T00:00:00Z" } } })).toMatch(
      /unknown operator "eq"; allowed: gt, gte, lt, lte/,
    );
    // What the advertised filter leaves out (bounds) the server still checks, with an actionable message.
    expect(issue(schemas.find, { where: { calories: { lt: 2 ** 40 } } })).toMatch(/32-bit integer/);
    // What they no longer name directly is still one `not` away.
    expect(issue(schemas.find, { where: { not: { id: { in: [id] } } } })).toBeNull();
  });

  it("refuses operators a type does not have, unknown columns and unsortable orders", () => {
    expect(issue(schemas.find, { where: { calories: { like: "1%" } } })).toMatch(
      /^where.calories: unknown operator "like"; allowed: eq, neq, gt/,
    );
    expect(issue(schemas.find, { where: { tags: "x" } })).not.toBeNull();
    expect(issue(schemas.find, { where: { nope: 1 } })).toMatch(/unknown column "nope"/);
    expect(issue(schemas.find, { order: "tags asc" })).not.toBeNull();
    expect(issue(schemas.find, { order: "title; drop table x" })).not.toBeNull();
    expect(issue(schemas.find, { limit: 201 })).toMatch(/limit must be 1 to 200/);
  });

  it("bounds like / ilike patterns (matching costs text length × pattern length in Postgres)", () => {
    expect(issue(schemas.find, { where: { title: { like: `%${"a".repeat(254)}%` } } })).toBeNull();
    expect(issue(schemas.find, { where: { title: { ilike: `%${"a".repeat(255)}%` } } })).toBe(
      "where.title.ilike: patterns are at most 256 characters",
    );
    expect(issue(schemas.find, { where: { title: { like: "x".repeat(100_000) } } })).toMatch(/at most 256/);
  });
});

describe("other operations", () => {
  it("aggregate only sums numeric columns", () => {
    expect(
      issue(schemas.aggregate, { metrics: [{ fn: "count" }, { fn: "sum", column: "calories" }] }),
    ).toBeNull();
    expect(issue(schemas.aggregate, { metrics: [{ fn: "sum", column: "title" }] })).not.toBeNull();
    expect(issue(schemas.aggregate, { metrics: [] })).toMatch(/at least one metric/);
  });

  it("nearest exists only with a vector column and checks its length", () => {
    expect(schemas.nearest).toBeDefined();
    expect(issue(schemas.nearest as v.GenericSchema, { vector: [1, 2, 3], limit: 5 })).toBeNull();
    expect(issue(schemas.nearest as v.GenericSchema, { vector: [1, 2] })).toMatch(/3 numbers/);
    const plain = buildOperationSchemas({ ...recipes, columns: [{ name: "title", type: "text" }] });
    expect(plain.nearest).toBeUndefined();
  });

  it("update takes {id, patch}; delete takes {id, hard?}", () => {
    const id = "0190f2a4-0000-7000-8000-000000000001";
    expect(issue(schemas.update, { id, patch: { calories: 3 } })).toBeNull();
    expect(issue(schemas.update, { id, patch: { created_at: "x" } })).toMatch(/server-managed/);
    expect(issue(schemas.delete, { id, hard: true })).toBeNull();
    expect(issue(schemas.get, { id: "1 or 1=1" })).toMatch(/uuid/);
  });
});

describe("JSON Schema conversion", () => {
  it("converts every operation schema with @valibot/to-json-schema", () => {
    for (const [name, schema] of Object.entries(schemas)) {
      expect(
        () => toJsonSchema(schema as v.GenericSchema, { ignoreActions: SERVER_ONLY_ACTIONS }),
        name,
      ).not.toThrow();
    }
  });

  it("shows writable columns with their descriptions and no server-managed columns", () => {
    const json = toJsonSchema(schemas.insert, { ignoreActions: SERVER_ONLY_ACTIONS }) as {
      properties: Record<string, { description?: string }>;
      required: string[];
      additionalProperties: boolean;
    };
    expect(Object.keys(json.properties)).toEqual([
      "title",
      "calories",
      "tags",
      "meta",
      "served",
      "embedding",
    ]);
    expect(json.properties.title).toEqual({ type: "string", description: "Dish name" });
    expect(json.required).toEqual(["title"]);
    expect(json.additionalProperties).toBe(false);
    expect(json.properties.embedding).toMatchObject({
      anyOf: [{ type: "array", minItems: 3, maxItems: 3 }, { type: "null" }],
    });
  });

  it("gives find a recursive, typed where", () => {
    const json = toJsonSchema(schemas.find, { ignoreActions: SERVER_ONLY_ACTIONS }) as {
      properties: { where: { $ref: string }; order: { enum: string[] } };
      $defs: Record<string, { properties: Record<string, { anyOf?: unknown[]; description?: string }> }>;
    };
    expect(json.properties.order.enum).toContain("created_at desc");
    const where = Object.values(json.$defs)[0];
    expect(Object.keys(where?.properties ?? {})).toEqual(
      expect.arrayContaining(["id", "created_at", "title", "calories", "and", "or", "not"]),
    );
    // The operators are the filter's own properties; the description is the developer's alone.
    expect(where?.properties.title?.description).toBe("Dish name");
    expect(where?.properties.title?.anyOf?.[1]).toMatchObject({
      properties: { eq: {}, neq: {}, in: {}, nin: {}, like: {}, ilike: {}, starts_with: {}, is_null: {} },
    });
  });
});
