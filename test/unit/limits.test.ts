/** The input limits walk (src/limits.ts): literals, plus a property against a recursive reference. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { findLimitViolation, INPUT_LIMITS, nameProblem } from "../../src/limits.ts";

const nested = (depth: number): unknown => JSON.parse(`${"[".repeat(depth)}${"]".repeat(depth)}`);

/** Reference depth by recursion (only used on small values). */
function depthOf(value: unknown): number {
  if (typeof value !== "object" || value === null) return 0;
  const children = Array.isArray(value) ? value : Object.values(value);
  return 1 + Math.max(0, ...children.map(depthOf));
}

describe("findLimitViolation", () => {
  it("allows 32 levels and names the path of the 33rd", () => {
    expect(findLimitViolation({ a: nested(31) }, "body")).toBeNull();
    expect(findLimitViolation({ a: nested(32) }, "body")).toMatch(
      /^body\.a(\.0)+: nested deeper than 32 levels/,
    );
  });

  it("walks 100,000 levels without recursion", () => {
    expect(findLimitViolation(nested(100_000), "body")).toContain("nested deeper than 32");
  });

  it("refuses non-finite numbers, NUL in strings, control characters in keys, and oversize values", () => {
    expect(findLimitViolation(JSON.parse('{"n":1e999}'), "body")).toBe(
      "body.n: numbers must be finite, got Infinity (e.g. 1e999)",
    );
    expect(findLimitViolation({ v: [1, Number.NaN] }, "arguments")).toContain(
      "arguments.v.1: numbers must be finite",
    );
    expect(findLimitViolation({ s: "a\u0000b" }, "body")).toContain("body.s: strings must not contain NUL");
    expect(findLimitViolation({ "a\u0000b": 1 }, "body")).toContain("contains a control character");
    expect(findLimitViolation({ s: "x".repeat(INPUT_LIMITS.stringChars + 1) }, "body")).toContain(
      "string longer",
    );
    expect(findLimitViolation({ a: new Array(INPUT_LIMITS.arrayItems + 1).fill(0) }, "body")).toContain(
      "items",
    );
    expect(findLimitViolation({ s: "tab\tand newline\n are fine in values" }, "body")).toBeNull();
  });

  it("agrees with a recursive depth count on any JSON value", () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 40 }), (value) => {
        const tooDeep = depthOf(value) > INPUT_LIMITS.depth;
        const problem = findLimitViolation(value, "v");
        if (tooDeep) expect(problem).toContain("nested deeper");
        else expect(problem === null || !problem.includes("nested deeper")).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});

describe("nameProblem", () => {
  it("refuses C0 controls and DEL, allows everything else", () => {
    expect(nameProblem("a\u0000b")).not.toBeNull();
    expect(nameProblem("a\u007fb")).not.toBeNull();
    expect(nameProblem("recipes")).toBeNull();
    expect(nameProblem("café")).toBeNull();
  });
});
