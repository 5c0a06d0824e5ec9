/**
 * Column filter and value schemas are shared by every column of the same type and operators
 * (src/data/schemas.ts `filterSchema`, `sharedValue`), with a column's description added on top.
 * The outcomes below were recorded from the schemas before they were shared (main at 70bfc7a):
 * same accepted and refused filters and values, same first messages, for columns that share a
 * schema and columns that differ only by description or vector size.
 */
import { toJsonSchema } from "@valibot/to-json-schema";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import type { CollectionMeta } from "../../../src/data/columns.ts";
import { buildOperationSchemas, SERVER_ONLY_ACTIONS } from "../../../src/data/schemas.ts";

const shared: CollectionMeta = {
  projectId: "00000000-0000-4000-8000-000000000000",
  name: "shared",
  columns: [
    { name: "a", type: "text", description: "first text" },
    { name: "b", type: "text" },
    { name: "n", type: "integer", description: "a number" },
    { name: "m", type: "integer" },
    { name: "tags", type: "text[]" },
    { name: "more", type: "text[]", description: "more tags" },
    { name: "v2", type: "vector", dimensions: 2 },
    { name: "v3", type: "vector", dimensions: 3 },
    { name: "doc", type: "json" },
    { name: "big", type: "bigint" },
  ],
  access: { read: "public", write: "owner" },
};

/** [where, the first two issues of `find` (null: accepted)] */
const CASES: [unknown, string[] | null][] = [
  [{ a: "x", b: "y" }, null],
  [{ a: { like: "%x%" }, b: { ilike: "%y%" } }, null],
  [
    { a: { gt: "x" } },
    ['where.a: unknown operator "gt"; allowed: eq, neq, in, nin, like, ilike, starts_with, is_null'],
  ],
  [
    { b: { gt: "x" } },
    ['where.b: unknown operator "gt"; allowed: eq, neq, in, nin, like, ilike, starts_with, is_null'],
  ],
  [
    { a: 1 },
    [
      "where.a: Expected a text value or an object of operators (eq, neq, in, nin, like, ilike, starts_with, is_null)",
    ],
  ],
  [
    { b: 1 },
    [
      "where.b: Expected a text value or an object of operators (eq, neq, in, nin, like, ilike, starts_with, is_null)",
    ],
  ],
  [{ a: { in: ["x", 2] } }, ["where.a: in.1: Invalid type: Expected string but received 2"]],
  [{ b: { in: ["x", "y"] } }, null],
  [
    {
      a: {
        like: "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
      },
    },
    ["where.a.like: patterns are at most 256 characters"],
  ],
  [
    { b: { starts_with: "\ud83d" } },
    ["where.b.starts_with: Expected well-formed Unicode text (a lone UTF-16 surrogate has no UTF-8 form)"],
  ],
  [{ n: 1, m: { lt: 2 } }, null],
  [{ n: 1.5 }, ["where.n: Expected a whole number"]],
  [{ m: 2147483648 }, ["where.m: Expected a 32-bit integer"]],
  [
    { n: { between: 1 } },
    ['where.n: unknown operator "between"; allowed: eq, neq, gt, gte, lt, lte, in, nin, is_null'],
  ],
  [{ m: { in: [1, "2"] } }, ['where.m: in.1: Invalid type: Expected number but received "2"']],
  [{ tags: { contains: "x" }, more: { overlaps: ["y"] } }, null],
  [{ tags: "x" }, ["where.tags: Expected a value or an object of operators (contains, overlaps, is_null)"]],
  [
    { more: { contains: [1] } },
    ["where.more.contains: Invalid type: Expected (Array | string) but received Array"],
  ],
  [{ v2: { is_null: true }, v3: { is_null: false } }, null],
  [{ v2: [1, 2] }, ['where.v2.0: unknown operator "0"; allowed: is_null']],
  [{ v3: { eq: [1, 2, 3] } }, ['where.v3.eq: unknown operator "eq"; allowed: is_null']],
  [
    { doc: { contains: { k: 1 } }, big: "12345678901234567890" },
    ["where.big: Expected a whole number (digits)"],
  ],
  [{ big: { in: [1, "2", 3.5] } }, ["where.big.in.2: Invalid safe integer: Received 3.5"]],
  [
    { and: [{ a: "x" }, { or: [{ b: 1 }, { n: 2 }] }] },
    [
      "where.and.1.or.0.b: Expected a text value or an object of operators (eq, neq, in, nin, like, ilike, starts_with, is_null)",
    ],
  ],
  [{ not: { m: { neq: "x" } } }, ['where.not.m: neq: Invalid type: Expected number but received "x"']],
  [
    { created_at: { gte: "2026-01-01T00:00:00Z" }, id: { in: ["00000000-0000-4000-8000-000000000000"] } },
    null,
  ],
  [
    { id: { neq: "00000000-0000-4000-8000-000000000000" } },
    ['where.id: unknown operator "neq"; allowed: eq, in'],
  ],
  [
    { owner_id: { is_null: "yes" } },
    ['where.owner_id: is_null: Invalid type: Expected boolean but received "yes"'],
  ],
];

describe("where filters with shared column schemas", () => {
  const find = buildOperationSchemas(shared).find;
  const outcome = (where: unknown) => {
    const result = v.safeParse(find, { where });
    return result.success
      ? null
      : result.issues.slice(0, 2).map((issue) => `${v.getDotPath(issue) ?? ""}: ${issue.message}`);
  };

  it.each(CASES)("%j → %j", (where, expected) => {
    expect(outcome(where)).toEqual(expected);
  });

  it("keeps each column's own description on a shared schema", () => {
    const where = buildOperationSchemas(shared).where as unknown as v.LazySchema<v.GenericSchema>;
    const json = toJsonSchema(where.getter(undefined), { ignoreActions: SERVER_ONLY_ACTIONS }) as {
      properties: Record<string, { description?: string }>;
    };
    const described = (name: string) => json.properties[name]?.description;
    expect([described("a"), described("b"), described("n"), described("m")]).toEqual([
      "first text",
      undefined,
      "a number",
      undefined,
    ]);
    expect([described("tags"), described("more")]).toEqual([undefined, "more tags"]);
  });
});

/** [row values, the first two issues of `insert`, and of `update` with them as its patch] */
const WRITES: [unknown, string[] | null, string[] | null][] = [
  [{ a: "x", b: "y" }, null, null],
  [
    { a: "x", b: 1 },
    ["b: Invalid type: Expected string but received 1"],
    ["patch.b: Invalid type: Expected string but received 1"],
  ],
  [
    { a: 1 },
    ["a: Invalid type: Expected string but received 1"],
    ["patch.a: Invalid type: Expected string but received 1"],
  ],
  [
    { n: 1.5, m: "x" },
    ["n: Expected a whole number", 'm: Invalid type: Expected number but received "x"'],
    ["patch.n: Expected a whole number", 'patch.m: Invalid type: Expected number but received "x"'],
  ],
  [{ n: 2147483648 }, ["n: Expected a 32-bit integer"], ["patch.n: Expected a 32-bit integer"]],
  [{ m: -1 }, null, null],
  [{ v2: [1, 2], v3: [1, 2, 3] }, null, null],
  [{ v2: [1, 2, 3] }, ["v2: Expected an array of 2 numbers"], ["patch.v2: Expected an array of 2 numbers"]],
  [{ v3: [1, 2] }, ["v3: Expected an array of 3 numbers"], ["patch.v3: Expected an array of 3 numbers"]],
  [
    { tags: ["x", 1] },
    ["tags.1: Invalid type: Expected string but received 1"],
    ["patch.tags.1: Invalid type: Expected string but received 1"],
  ],
  [{ more: ["y"] }, null, null],
  [
    { big: "1e5" },
    ["big: Expected a whole number (digits)"],
    ["patch.big: Expected a whole number (digits)"],
  ],
  [
    { big: 9007199254740992 },
    ["big: Invalid safe integer: Received 9007199254740992"],
    ["patch.big: Invalid safe integer: Received 9007199254740992"],
  ],
  [{ doc: { x: [1] } }, null, null],
  [
    { b: "\ud83d" },
    ["b: Expected well-formed Unicode text (a lone UTF-16 surrogate has no UTF-8 form)"],
    ["patch.b: Expected well-formed Unicode text (a lone UTF-16 surrogate has no UTF-8 form)"],
  ],
  [{ a: null, n: null }, null, null],
  [
    { zz: 1 },
    ['zz: unknown column "zz"; writable columns: a, b, n, m, tags, more, v2, v3, doc, big'],
    ['patch.zz: unknown column "zz"; writable columns: a, b, n, m, tags, more, v2, v3, doc, big'],
  ],
];

describe("insert and update values with shared column value schemas", () => {
  const schemas = buildOperationSchemas(shared);
  const outcome = (schema: v.GenericSchema, input: unknown) => {
    const result = v.safeParse(schema, input);
    return result.success
      ? null
      : result.issues.slice(0, 2).map((issue) => `${v.getDotPath(issue) ?? ""}: ${issue.message}`);
  };

  it.each(WRITES)("%j → %j / %j", (values, insert, update) => {
    expect(outcome(schemas.insert, values)).toEqual(insert);
    expect(outcome(schemas.update, { id: "00000000-0000-4000-8000-000000000000", patch: values })).toEqual(
      update,
    );
  });
});
