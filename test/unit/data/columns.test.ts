import * as v from "valibot";
import { describe, expect, it } from "vitest";
import {
  AlterCollectionSchema,
  alterMeta,
  CollectionDefinitionSchema,
  type CollectionMeta,
  isValidValue,
  MAX_COLLECTION_NAME_LENGTH,
  nameProblem,
  pgType,
  timestampInRange,
} from "../../../src/data/columns.ts";
import { RECIPES_COLUMNS } from "../../fixtures.ts";

const parse = (input: unknown) => v.safeParse(CollectionDefinitionSchema, input);
const firstMessage = (input: unknown) => {
  const result = parse(input);
  return result.success ? null : result.issues[0].message;
};

describe("names", () => {
  it("accepts lowercase identifiers", () => {
    expect(nameProblem("recipes", "collection")).toBeNull();
    expect(nameProblem("a1_b2", "column")).toBeNull();
  });

  it("refuses names that are not lowercase identifiers, including SQL fragments", () => {
    for (const name of [
      "Recipes",
      "1abc",
      "_x",
      "a-b",
      "a b",
      'x"; drop table y; --',
      "x'y",
      "ключ",
      "",
      "a/*b*/",
    ]) {
      expect(nameProblem(name, "collection"), name).toMatch(/lowercase identifier/);
    }
  });

  it("keeps <name>_find_nearest within the 64-character MCP tool-name limit", () => {
    const longest = "a".repeat(MAX_COLLECTION_NAME_LENGTH);
    expect(nameProblem(longest, "collection")).toBeNull();
    expect(`${longest}_find_nearest`.length).toBe(64);
    expect(nameProblem(`${longest}a`, "collection")).toMatch(/at most 51/);
  });

  it("refuses reserved words and server-managed names", () => {
    expect(nameProblem("select", "collection")).toMatch(/reserved/);
    expect(nameProblem("order", "column")).toMatch(/reserved/);
    expect(nameProblem("and", "column")).toMatch(/reserved/);
    expect(nameProblem("pg_stat", "collection")).toMatch(/reserved/);
    for (const name of ["id", "created_at", "updated_at", "deleted_at", "owner_id"]) {
      expect(nameProblem(name, "column")).toMatch(/server-managed/);
    }
  });

  it("refuses Postgres system column names for columns (a 400, not a 409 'retry' from the database)", () => {
    for (const name of ["ctid", "xmin", "xmax", "cmin", "cmax", "tableoid"]) {
      expect(nameProblem(name, "column"), name).toBe(`"${name}" is a Postgres system column name`);
      expect(nameProblem(name, "collection"), name).toBeNull();
    }
  });
});

describe("CollectionDefinitionSchema", () => {
  it("parses the DESIGN.md example with the default policy (read owner, write owner)", () => {
    const result = parse({
      name: "recipes",
      columns: RECIPES_COLUMNS,
    });
    expect(result.success).toBe(true);
    expect(result.output).toEqual({
      name: "recipes",
      columns: RECIPES_COLUMNS,
      access: { read: "owner", write: "owner" },
    });
  });

  it("checks vector dimensions, unknown types, duplicates and defaults", () => {
    expect(firstMessage({ name: "a", columns: [{ name: "v", type: "vector" }] })).toMatch(/dimensions/);
    expect(firstMessage({ name: "a", columns: [{ name: "v", type: "vector", dimensions: 0 }] })).toMatch(
      /dimensions/,
    );
    expect(firstMessage({ name: "a", columns: [{ name: "n", type: "int" }] })).toMatch(/type must be one of/);
    expect(
      firstMessage({
        name: "a",
        columns: [
          { name: "n", type: "text" },
          { name: "n", type: "integer" },
        ],
      }),
    ).toMatch(/duplicate column "n"/);
    expect(firstMessage({ name: "a", columns: [{ name: "n", type: "integer", default: "x" }] })).toMatch(
      /default is not a valid integer/,
    );
    expect(firstMessage({ name: "a", columns: [{ name: "n", type: "text", dimensions: 2 }] })).toMatch(
      /only applies to vector/,
    );
    expect(firstMessage({ name: "a", columns: [{ name: "id", type: "text" }] })).toMatch(/server-managed/);
    expect(firstMessage({ name: "a", access: { read: "everyone" } })).not.toBeNull();
  });

  it("takes DESIGN.md's vector(N) spelling as a vector of N dimensions", () => {
    const vector = { name: "embedding", type: "vector", dimensions: 3 };
    for (const column of [
      { name: "embedding", type: "vector(3)" },
      { ...vector, type: "vector(3)" },
    ]) {
      expect(parse({ name: "a", columns: [column] }).output).toMatchObject({ columns: [vector] });
    }
    expect(firstMessage({ name: "a", columns: [{ ...vector, type: "vector(4)" }] })).toMatch(/disagree/);
    expect(firstMessage({ name: "a", columns: [{ name: "v", type: "vector(0)" }] })).toMatch(/dimensions/);
    expect(firstMessage({ name: "a", columns: [{ name: "v", type: "vector(x)" }] })).toMatch(
      /type must be one of/,
    );
  });

  it("maps column types to Postgres types", () => {
    expect(pgType({ type: "number" })).toBe("double precision");
    expect(pgType({ type: "timestamp" })).toBe("timestamptz");
    expect(pgType({ type: "json" })).toBe("jsonb");
    expect(pgType({ type: "date[]" })).toBe("date[]");
    expect(pgType({ type: "vector", dimensions: 3 })).toBe("vector(3)");
  });
});

describe("timestamp values", () => {
  it("are instants of the years 0001–9999 UTC, offsets and fraction rounding included", () => {
    for (const inside of [
      "0001-01-01T00:00:00Z",
      "0001-01-01T05:00:00+05:00",
      "0001-01-01T00:00:00-01:00",
      "9999-12-31T23:59:59.999999Z",
      "9999-12-31T18:59:59.999999-05:00",
      "9999-12-31T23:59:59+0100",
      "2026-11-01T12:00:00Z",
    ]) {
      expect(timestampInRange(inside), inside).toBe(true);
      expect(isValidValue("timestamp", inside), inside).toBe(true);
    }
    for (const outside of [
      "0001-01-01T00:00:00+05:00",
      "0001-01-01T04:59:59.999999+05",
      "9999-12-31T23:59:59-05:00",
      "9999-12-31T23:59:59.9999996Z",
    ]) {
      expect(timestampInRange(outside), outside).toBe(false);
      expect(isValidValue("timestamp", outside), outside).toBe(false);
    }
  });
});

describe("alterMeta", () => {
  const meta: CollectionMeta = {
    projectId: "00000000-0000-4000-8000-000000000000",
    name: "recipes",
    columns: [
      { name: "title", type: "text" },
      { name: "tags", type: "text[]" },
    ],
    access: { read: "owner", write: "owner" },
  };
  const change = (input: unknown) => v.parse(AlterCollectionSchema, input);

  it("adds, drops and changes the policy", () => {
    const next = alterMeta(
      meta,
      change({
        add_columns: [{ name: "calories", type: "integer" }],
        drop_columns: ["tags"],
        access: { read: "public" },
      }),
    );
    expect(next.columns.map((c) => c.name)).toEqual(["title", "calories"]);
    expect(next.access).toEqual({ read: "public", write: "owner" });
  });

  it("refuses unknown or server-managed drops and duplicate adds", () => {
    expect(() => alterMeta(meta, change({ drop_columns: ["nope"] }))).toThrow(/no column "nope"/);
    expect(() => alterMeta(meta, change({ drop_columns: ["id"] }))).toThrow(/server-managed/);
    expect(() => alterMeta(meta, change({ add_columns: [{ name: "title", type: "text" }] }))).toThrow(
      /already exists/,
    );
  });

  it("requires something to change", () => {
    expect(v.safeParse(AlterCollectionSchema, {}).success).toBe(false);
  });
});
