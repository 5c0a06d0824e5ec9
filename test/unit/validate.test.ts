/** parseInput's messages (src/validate.ts): what a person or agent reads after a bad body. */
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { AppError } from "../../src/errors.ts";
import { parseInput } from "../../src/validate.ts";

const messageOf = (schema: v.GenericSchema, input: unknown): string => {
  try {
    parseInput(schema, input);
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return (error as AppError).message;
  }
  throw new Error("parseInput accepted the input");
};

describe("parseInput messages", () => {
  const body = v.strictObject({ name: v.string(), columns: v.optional(v.array(v.string())) });

  it("names a missing required field as required, not valibot's 'Invalid key' text", () => {
    // `amba collections create` without a name printed `name: Invalid key: Expected "name" but received undefined`.
    expect(messageOf(body, {})).toBe("name: is required");
    expect(messageOf(v.object({ a: v.object({ b: v.number() }) }), { a: {} })).toBe("a.b: is required");
    expect(messageOf(v.looseObject({ version: v.number() }), {})).toBe("version: is required");
  });

  it("keeps the other messages: unknown field, wrong type, a present key that is undefined", () => {
    expect(messageOf(body, { name: "x", extra: 1 })).toBe("extra: unknown field");
    expect(messageOf(body, { name: 5 })).toBe("name: Invalid type: Expected string but received 5");
    expect(messageOf(body, { name: "x", columns: "a" })).toMatch(/^columns: Invalid type/);
  });
});
