import { toJsonSchema } from "@valibot/to-json-schema";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { AppError } from "../../../src/errors.ts";
import {
  checkInputSchema,
  type FunctionInputSchema,
  inputSchemaToValibot,
  MAX_SCHEMA_DEPTH,
} from "../../../src/functions/input-schema.ts";

/** The seed's example schema. */
const WELCOME = {
  type: "object",
  properties: {
    user_id: { type: "string", description: "The recipient app user id" },
    template: { type: "string", enum: ["short", "full"] },
  },
  required: ["user_id"],
};

const RICH = {
  type: "object",
  description: "Everything the subset allows",
  properties: {
    title: { type: "string" },
    price: { type: "number", description: "in EUR" },
    count: { type: "integer" },
    size: { type: "integer", enum: [1, 2, 3] },
    ratio: { type: "number", enum: [0.5, 1.5] },
    active: { type: "boolean" },
    tags: { type: "array", items: { type: "string", enum: ["a", "b"] } },
    anything: { type: "array" },
    matrix: { type: "array", items: { type: "array", items: { type: "integer" } } },
    address: {
      type: "object",
      properties: {
        street: { type: "string" },
        geo: {
          type: "object",
          properties: { lat: { type: "number" }, lng: { type: "number" } },
          required: ["lat"],
        },
      },
      required: ["street"],
    },
    meta: { type: "object" },
  },
  required: ["title", "address"],
};

/** Closed at the top and in `address`; `meta` inside it stays open. */
const CLOSED = {
  type: "object",
  properties: {
    name: { type: "string" },
    address: {
      type: "object",
      properties: { street: { type: "string" }, meta: { type: "object" } },
      required: ["street"],
      additionalProperties: false,
    },
  },
  required: ["name"],
  additionalProperties: false,
};

const ACCEPTED: Array<[string, unknown]> = [
  ["an empty object", { type: "object" }],
  ["an object with no required list", { type: "object", properties: { a: { type: "string" } } }],
  ["the seed's welcome-email schema", WELCOME],
  ["every supported type, nested", RICH],
  ["additionalProperties: false, top level and nested", CLOSED],
];

describe("checkInputSchema accepts the subset", () => {
  it.each(ACCEPTED)("%s", (_label, schema) => {
    expect(checkInputSchema(schema)).toEqual(schema);
  });
});

const REJECTED: Array<[string, unknown, string]> = [
  ["a non-object root value", "object", "input_schema: expected a schema object"],
  [
    "a root that is not an object type",
    { type: "string" },
    'input_schema.type: the root must be {"type": "object"}',
  ],
  ["a root $ref", { type: "object", $ref: "#/defs/x" }, 'input_schema.$ref: keyword "$ref" is not supported'],
  [
    "oneOf on a property",
    { type: "object", properties: { a: { type: "string", oneOf: [] } } },
    'input_schema.properties.a.oneOf: keyword "oneOf" is not supported',
  ],
  [
    "pattern on a nested property",
    {
      type: "object",
      properties: { o: { type: "object", properties: { code: { type: "string", pattern: "^x" } } } },
    },
    'input_schema.properties.o.properties.code.pattern: keyword "pattern" is not supported',
  ],
  [
    "an unknown keyword inside items",
    { type: "object", properties: { t: { type: "array", items: { type: "string", minLength: 2 } } } },
    'input_schema.properties.t.items.minLength: keyword "minLength" is not supported',
  ],
  [
    "additionalProperties: true",
    { type: "object", additionalProperties: true },
    "input_schema.additionalProperties: only false is supported",
  ],
  [
    "additionalProperties as a schema, nested",
    { type: "object", properties: { o: { type: "object", additionalProperties: { type: "string" } } } },
    "input_schema.properties.o.additionalProperties: only false is supported",
  ],
  [
    "additionalProperties on a string",
    { type: "object", properties: { s: { type: "string", additionalProperties: false } } },
    'input_schema.properties.s.additionalProperties: "additionalProperties" is not allowed on type "string"',
  ],
  [
    "a type list",
    { type: "object", properties: { a: { type: ["string", "null"] } } },
    "input_schema.properties.a.type: type lists are not supported",
  ],
  [
    "an unknown type",
    { type: "object", properties: { a: { type: "null" } } },
    'input_schema.properties.a.type: unsupported type "null"',
  ],
  [
    "a property without a type",
    { type: "object", properties: { a: { description: "x" } } },
    'input_schema.properties.a: "type" is required',
  ],
  [
    "items on a string",
    { type: "object", properties: { a: { type: "string", items: { type: "string" } } } },
    'input_schema.properties.a.items: "items" is not allowed on type "string"',
  ],
  [
    "enum on a boolean",
    { type: "object", properties: { a: { type: "boolean", enum: [true] } } },
    'input_schema.properties.a.enum: "enum" is not allowed on type "boolean"',
  ],
  [
    "an enum value of the wrong type",
    { type: "object", properties: { a: { type: "string", enum: ["x", 2] } } },
    "input_schema.properties.a.enum[1]: 2 does not match the property's type",
  ],
  [
    "a fractional value in an integer enum",
    { type: "object", properties: { a: { type: "integer", enum: [1, 1.5] } } },
    "input_schema.properties.a.enum[1]: 1.5 does not match",
  ],
  [
    "an empty enum",
    { type: "object", properties: { a: { type: "string", enum: [] } } },
    "input_schema.properties.a.enum: expected a non-empty array",
  ],
  [
    "a duplicate enum value",
    { type: "object", properties: { a: { type: "string", enum: ["x", "x"] } } },
    'input_schema.properties.a.enum[1]: "x" is listed twice',
  ],
  [
    "required naming an undeclared property",
    { type: "object", properties: { a: { type: "string" } }, required: ["b"] },
    'input_schema.required[0]: "b" is not declared in properties',
  ],
  [
    "required that is not an array",
    { type: "object", required: "a" },
    "input_schema.required: expected an array",
  ],
  [
    "a non-string description",
    { type: "object", properties: { a: { type: "string", description: 5 } } },
    "input_schema.properties.a.description: expected a string",
  ],
  [
    "properties that is an array",
    { type: "object", properties: [] },
    "input_schema.properties: expected an object",
  ],
  [
    "a property name that is not an identifier",
    { type: "object", properties: { "first name": { type: "string", format: "x" } } },
    'input_schema.properties["first name"].format: keyword "format" is not supported',
  ],
  ["$schema at the root", { $schema: "x", type: "object" }, 'input_schema.$schema: keyword "$schema"'],
];

describe("checkInputSchema rejects everything outside the subset, naming the path", () => {
  it.each(REJECTED)("%s", (_label, schema, message) => {
    let error: unknown;
    try {
      checkInputSchema(schema);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).status).toBe(400);
    expect((error as AppError).code).toBe("invalid_input");
    expect((error as AppError).message.startsWith(message)).toBe(true);
  });

  it("uses the caller's base path", () => {
    expect(() => checkInputSchema({ type: "object", not: {} }, "mcp.input_schema")).toThrow(
      'mcp.input_schema.not: keyword "not" is not supported',
    );
  });

  it("rejects nesting deeper than the limit", () => {
    let schema: Record<string, unknown> = { type: "string" };
    for (let i = 0; i <= MAX_SCHEMA_DEPTH; i++) schema = { type: "array", items: schema };
    expect(() => checkInputSchema({ type: "object", properties: { deep: schema } })).toThrow(
      /nesting deeper/,
    );
  });

  it("returns a copy without sharing the caller's objects", () => {
    const schema = structuredClone(WELCOME);
    const checked = checkInputSchema(schema);
    schema.properties.user_id.description = "changed";
    expect(checked.properties?.user_id?.description).toBe("The recipient app user id");
  });
});

/** Fill JSON Schema defaults so equivalent schemas compare equal (`required: []`, `items: {}`, …). */
function canonical(schema: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...schema };
  delete out.$schema;
  if (out.type === "object") {
    const properties = (out.properties ?? {}) as Record<string, Record<string, unknown>>;
    out.properties = Object.fromEntries(Object.entries(properties).map(([k, p]) => [k, canonical(p)]));
    out.required = [...((out.required as string[]) ?? [])].sort();
  }
  if (out.type === "array") out.items = out.items ? canonical(out.items as Record<string, unknown>) : {};
  return out;
}

describe("inputSchemaToValibot", () => {
  it.each(ACCEPTED)("round-trips %s through @valibot/to-json-schema", (_label, schema) => {
    const checked = checkInputSchema(schema);
    const json = toJsonSchema(inputSchemaToValibot(checked), { errorMode: "throw" });
    expect(canonical(json as Record<string, unknown>)).toEqual(canonical(schema as Record<string, unknown>));
  });

  const rich = inputSchemaToValibot(checkInputSchema(RICH) as FunctionInputSchema);
  const valid = {
    title: "Cake",
    price: 9.5,
    count: 3,
    size: 2,
    ratio: 1.5,
    active: true,
    tags: ["a"],
    anything: [1, "x", null],
    matrix: [[1, 2], [3]],
    address: { street: "Main", geo: { lat: 1, lng: 2 } },
    meta: { free: "form" },
    extra: "kept",
  };

  it("accepts valid arguments and keeps undeclared keys", () => {
    expect(v.parse(rich, valid)).toEqual(valid);
  });

  const INVALID: Array<[string, Record<string, unknown>, string]> = [
    ["a missing required property", { title: undefined }, "title"],
    ["a string where a number belongs", { price: "cheap" }, "price"],
    ["a fraction for an integer", { count: 1.5 }, "count"],
    ["a value outside an integer enum", { size: 4 }, "size"],
    ["a value outside a string enum in items", { tags: ["c"] }, "tags.0"],
    ["a non-integer in a nested array", { matrix: [[1, 0.5]] }, "matrix.0.1"],
    ["a missing nested required property", { address: { geo: { lat: 1 } } }, "address.street"],
    ["a wrong type deep inside", { address: { street: "x", geo: { lat: "north" } } }, "address.geo.lat"],
    ["a non-object for an object", { meta: "x" }, "meta"],
    ["a non-boolean", { active: "yes" }, "active"],
  ];

  it.each(INVALID)("rejects %s, naming the field", (_label, patch, path) => {
    const result = v.safeParse(rich, { ...valid, ...patch });
    expect(result.success).toBe(false);
    expect(result.issues?.map((issue) => v.getDotPath(issue))).toContain(path);
  });
});

describe("additionalProperties: false", () => {
  const closed = inputSchemaToValibot(checkInputSchema(CLOSED));
  const valid = { name: "a", address: { street: "s", meta: { free: "form" } } };

  it("accepts the declared keys, and extra keys inside an open object below a closed one", () => {
    expect(v.parse(closed, valid)).toEqual(valid);
  });

  it.each([
    ["at the top", { ...valid, is_admin: true }, "is_admin"],
    ["in a nested object", { ...valid, address: { street: "s", is_admin: true } }, "address.is_admin"],
  ])("refuses an undeclared key %s, naming it", (_label, input, path) => {
    const result = v.safeParse(closed, input);
    expect(result.success).toBe(false);
    expect(result.issues?.map((issue) => [v.getDotPath(issue), issue.message])).toEqual([
      [path, "not a declared property (additionalProperties is false)"],
    ]);
  });

  it("keeps the default message for a non-object", () => {
    const result = v.safeParse(closed, { ...valid, address: "x" });
    expect(result.issues?.[0]?.message).toMatch(/^Invalid type: Expected Object/);
  });
});

describe("property names every object inherits", () => {
  // valibot reads a declared property with `key in input`: for `toString` that is true of every
  // object, so an optional `toString` a caller left out was read as Object.prototype's function and
  // every such call failed ("expected string, received Function"). JSON.parse keeps `__proto__` as
  // an own key, which a plain object would turn into its prototype.
  const inherited = JSON.parse('["toString", "valueOf", "hasOwnProperty", "constructor", "__proto__"]');
  it.each(inherited as string[])("refuses %s at deploy, naming the path", (name) => {
    const schema = JSON.parse(`{"type":"object","properties":{${JSON.stringify(name)}:{"type":"string"}}}`);
    expect(() => checkInputSchema(schema, "mcp.input_schema")).toThrow(
      `mcp.input_schema.properties.${name}: "${name}" cannot be a property name`,
    );
  });
});
