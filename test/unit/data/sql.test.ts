import type { SQL } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import { describe, expect, it } from "vitest";
import type { CollectionMeta } from "../../../src/data/columns.ts";
import { encodeCursor } from "../../../src/data/cursor.ts";
import {
  aggregateRows,
  compileWhere,
  createTableStatements,
  keysetCondition,
  parseOrder,
  projectSchemaName,
  whereBudgetProblem,
} from "../../../src/data/sql.ts";
import { arrayLiteral, quoteLiteral } from "../../../src/data/values.ts";

const dialect = new PgDialect();
const q = (s: SQL) => dialect.sqlToQuery(s);
const meta: CollectionMeta = {
  projectId: "0190f2a4-aaaa-4bbb-8ccc-0123456789ab",
  name: "recipes",
  columns: [
    { name: "title", type: "text", required: true, default: "it's \\ here" },
    { name: "calories", type: "integer" },
    { name: "tags", type: "text[]" },
    { name: "meta", type: "json" },
    { name: "embedding", type: "vector", dimensions: 3 },
  ],
  access: { read: "owner", write: "owner" },
};

describe("DDL", () => {
  it("creates the table in the project schema with indexes and an HNSW index for vectors", () => {
    expect(projectSchemaName(meta.projectId)).toBe("app_0190f2a4aaaa4bbb8ccc0123456789ab");
    const statements = createTableStatements(meta).map((s) => q(s).sql);
    expect(statements[0]).toBe('CREATE SCHEMA IF NOT EXISTS "app_0190f2a4aaaa4bbb8ccc0123456789ab"');
    expect(statements[1]).toContain(`"title" text NOT NULL DEFAULT E'it''s \\\\ here'::text`);
    expect(statements[1]).toContain('"embedding" vector(3)');
    expect(statements).toContain(
      'CREATE INDEX "_recipes:created" ON "app_0190f2a4aaaa4bbb8ccc0123456789ab"."recipes" (created_at, id) WHERE deleted_at IS NULL',
    );
    expect(statements.at(-1)).toContain('USING hnsw ("embedding" vector_cosine_ops)');
    for (const s of createTableStatements(meta)) expect(q(s).params).toEqual([]);
  });

  it("refuses a project id that is not a uuid", () => {
    expect(() => projectSchemaName('x"; drop schema public; --')).toThrow(/invalid project id/);
  });
});

describe("where", () => {
  it("binds every value and quotes every identifier", () => {
    const { sql, params } = q(
      compileWhere(meta, {
        title: { ilike: "%'; select pg_sleep(10); --%" },
        calories: { in: [1, 2] },
        or: [{ tags: { overlaps: ["a", 'b"c'] } }, { not: { meta: { has_key: "k" } } }],
      }),
    );
    expect(sql).toBe(
      '(t."title" ILIKE $1::text AND t."calories" = ANY($2::integer[]) AND ((t."tags" && $3::text[]) OR (NOT COALESCE((jsonb_exists(t."meta", $4::text)), false))))',
    );
    expect(params).toEqual(["%'; select pg_sleep(10); --%", '{"1","2"}', '{"a","b\\"c"}', "k"]);
  });

  it("bounds the like / ilike pattern characters of one where in total", () => {
    const p = (c: string) => `%${c.repeat(254)}%`;
    const four = { or: ["a", "b", "c", "d"].map((c) => ({ title: { like: p(c) } })) };
    expect(() => compileWhere(meta, four)).not.toThrow();
    expect(() => compileWhere(meta, { ...four, title: { ilike: "%e%" } })).toThrow(
      "where: like / ilike patterns of one where are at most 1024 characters in total",
    );
  });

  it("bounds the list values of one where in total, lists under or/not included", () => {
    const list = (n: number, from = 0) => Array.from({ length: n }, (_, i) => i + from);
    const split = { or: [{ calories: { in: list(600) } }, { not: { calories: { nin: list(400) } } }] };
    expect(() => compileWhere(meta, split)).not.toThrow();
    expect(() => compileWhere(meta, { ...split, id: { in: [meta.projectId] } })).toThrow(
      "where.id.in: in / nin / overlaps / contains lists of one where hold at most 1000 values in total; filter with fewer values or split the call",
    );
  });

  it("counts conditions and list values before the schema, with the compiler's messages", () => {
    const conditions = (n: number) => ({
      or: Array.from({ length: n }, (_, i) => ({ calories: { gte: i } })),
    });
    expect(whereBudgetProblem(conditions(100))).toBeNull();
    expect(() => compileWhere(meta, conditions(101))).toThrow("where.or.100: more than 100 conditions");
    expect(whereBudgetProblem(conditions(101))).toBe("where.or.100: more than 100 conditions");
    // Invalid operands count too: the budget is checked before anything is parsed.
    expect(whereBudgetProblem({ calories: "x", or: [{ title: { in: Array(1001).fill(1) } }] })).toBe(
      "where.or.0.title.in: in / nin / overlaps / contains lists of one where hold at most 1000 values in total; filter with fewer values or split the call",
    );
    expect(whereBudgetProblem({ title: { in: Array(1000).fill("a") } })).toBeNull();
    expect(whereBudgetProblem("not an object")).toBeNull();
  });

  it("bounds overlaps / contains values of one where, a json operand by every value in it", () => {
    const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`);
    expect(() => compileWhere(meta, { tags: { overlaps: words(100) } })).not.toThrow();
    const refused =
      "overlaps / contains take at most 100 values in one where, all together (a json value counts every value in it); filter with fewer values or split the call";
    expect(() => compileWhere(meta, { tags: { overlaps: words(101) } })).toThrow(
      `where.tags.overlaps: ${refused}`,
    );
    expect(() =>
      compileWhere(meta, { or: [{ tags: { contains: words(60) } }, { tags: { overlaps: words(41) } }] }),
    ).toThrow(`where.or.1.tags.overlaps: ${refused}`);
    // {a: [99 values]} is 100 values; one more anywhere inside passes the bound.
    expect(() => compileWhere(meta, { meta: { contains: { a: words(99) } } })).not.toThrow();
    expect(() => compileWhere(meta, { meta: { contains: { a: words(99), b: 1 } } })).toThrow(
      `where.meta.contains: ${refused}`,
    );
    // `in` lists are hashed by Postgres: 1,000 of them stay allowed next to the matching operators.
    expect(() =>
      compileWhere(meta, { title: { in: words(900) }, tags: { overlaps: words(100) } }),
    ).not.toThrow();
  });

  it("treats a bare value as eq and null-safe neq/nin", () => {
    expect(q(compileWhere(meta, { title: "x" })).sql).toBe('(t."title" = $1::text)');
    expect(q(compileWhere(meta, { calories: { neq: 3 } })).sql).toBe(
      '(t."calories" IS DISTINCT FROM $1::integer)',
    );
    expect(q(compileWhere(meta, { calories: { is_null: true } })).sql).toBe('(t."calories" IS NULL)');
  });

  it("refuses unknown columns and operators outside the column type", () => {
    expect(() => compileWhere(meta, { nope: 1 })).toThrow(/unknown column/);
    expect(() => compileWhere(meta, { tags: { gt: 1 } })).toThrow(/not available for text\[\]/);
  });
});

describe("order and keyset", () => {
  it("defaults to created_at desc and uses a row comparison for non-null columns", () => {
    const order = parseOrder(meta);
    expect(order.signature).toBe("created_at desc");
    const position = {
      order: order.signature,
      value: "2026-01-01T00:00:00Z",
      id: "0190f2a4-0000-7000-8000-000000000001",
    };
    expect(q(keysetCondition(order, position)).sql).toBe(
      '(t."created_at", t.id) < ($1::timestamptz, $2::uuid)',
    );
    expect(encodeCursor(position)).toMatch(/^[A-Za-z0-9_-]+$/);
  });

  it("is NULL-safe for nullable columns", () => {
    const asc = parseOrder(meta, "calories asc");
    const id = "0190f2a4-0000-7000-8000-000000000001";
    expect(q(keysetCondition(asc, { order: asc.signature, value: null, id })).sql).toBe(
      '(t."calories" IS NULL AND t.id > $1::uuid)',
    );
    expect(q(keysetCondition(asc, { order: asc.signature, value: 5, id })).sql).toContain(
      'OR t."calories" IS NULL',
    );
  });

  it("refuses unsortable or unknown order columns", () => {
    expect(() => parseOrder(meta, "tags asc")).toThrow(/sortable/);
    expect(() => parseOrder(meta, "title; drop")).toThrow(/sortable/);
  });
});

describe("aggregate", () => {
  it("names results count / <fn>_<column> and groups", () => {
    const { sql, params } = q(
      aggregateRows(meta, [{ fn: "count" }, { fn: "sum", column: "calories" }], ["title"], []),
    );
    expect(sql).toContain(
      'json_build_object($1::text, count(*), $2::text, sum(t."calories"), $3::text, t."title")',
    );
    expect(sql).toContain('GROUP BY t."title" ORDER BY t."title"');
    expect(params.slice(0, 3)).toEqual(["count", "sum_calories", "title"]);
  });
});

describe("literals", () => {
  it("escapes array elements and string literals", () => {
    expect(arrayLiteral(['a"b', "c\\d", "{x}"])).toBe('{"a\\"b","c\\\\d","{x}"}');
    expect(quoteLiteral("it's \\")).toBe("E'it''s \\\\'");
  });
});
