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

/**
 * The walk as it was before paths were spelled out only for the value at fault (session 11):
 * the reference the current one must agree with, message for message.
 */
function referenceViolation(value: unknown, root: string): string | null {
  const CONTROL = /[\u0000-\u001f\u007f]/;
  const label = (path: string) => (path.length > 160 ? `${path.slice(0, 160)}…` : path);
  const primitive = (item: unknown, path: string): string | null => {
    if (typeof item === "number" && !Number.isFinite(item)) {
      const got = Number.isNaN(item) ? "NaN" : item > 0 ? "Infinity (e.g. 1e999)" : "-Infinity";
      return `${label(path)}: numbers must be finite, got ${got}`;
    }
    if (typeof item === "string") {
      if (item.length > INPUT_LIMITS.stringChars)
        return `${label(path)}: string longer than ${INPUT_LIMITS.stringChars} characters`;
      if (item.includes("\u0000")) return `${label(path)}: strings must not contain NUL (\\u0000)`;
    }
    return null;
  };
  if (typeof value !== "object" || value === null) return primitive(value, root);
  const stack: Array<{ node: object; path: string; depth: number }> = [{ node: value, path: root, depth: 1 }];
  for (let frame = stack.pop(); frame !== undefined; frame = stack.pop()) {
    const { node, path, depth } = frame;
    if (depth > INPUT_LIMITS.depth)
      return `${label(path)}: nested deeper than ${INPUT_LIMITS.depth} levels (limit ${INPUT_LIMITS.depth})`;
    const entries: [string, unknown][] = Array.isArray(node)
      ? node.map((item, i) => [String(i), item])
      : Object.keys(node).map((key) => [key, (node as Record<string, unknown>)[key]]);
    if (Array.isArray(node) && node.length > INPUT_LIMITS.arrayItems)
      return `${label(path)}: more than ${INPUT_LIMITS.arrayItems} items (limit ${INPUT_LIMITS.arrayItems})`;
    if (!Array.isArray(node) && entries.length > INPUT_LIMITS.objectKeys)
      return `${label(path)}: more than ${INPUT_LIMITS.objectKeys} keys (limit ${INPUT_LIMITS.objectKeys})`;
    for (const [key, item] of entries) {
      if (!Array.isArray(node)) {
        if (key.length > INPUT_LIMITS.keyChars)
          return `${label(path)}: a key is longer than ${INPUT_LIMITS.keyChars} characters`;
        if (CONTROL.test(key))
          return `${label(path)}: key ${JSON.stringify(key)} contains a control character`;
      }
      if (typeof item === "object" && item !== null)
        stack.push({ node: item, path: `${path}.${key}`, depth: depth + 1 });
      else {
        const problem = primitive(item, `${path}.${key}`);
        if (problem) return problem;
      }
    }
  }
  return null;
}

describe("findLimitViolation, restructured for CPU (session 11)", () => {
  const long = "k".repeat(INPUT_LIMITS.keyChars + 1);
  const cases: [string, unknown][] = [
    ["a primitive root", Number.NaN],
    ["a string root with NUL", "a\u0000"],
    ["empty containers at every depth up to the limit", { a: nested(31), b: [{}, [], [[]]], c: {} }],
    ["an empty array one level too deep", { a: nested(32) }],
    ["an empty object one level too deep", JSON.parse(`${"[".repeat(32)}{}${"]".repeat(32)}`)],
    ["an empty container too deep before a bad number in the same array", [nested(40), 1, Number.NaN]],
    ["a bad number before a deep empty container", [Number.NaN, nested(40)]],
    ["a too-long key after a deep member", { deep: nested(40), [long]: 1 }],
    ["a control character in a nested key", { rows: [{ ok: 1 }, { "bad\u007fkey": 2 }] }],
    ["DEL and C0 in keys, deeper one last", { a: { "\u0001": 1 }, b: { "\u007f": 2 } }],
    ["too many items in a nested array", { a: [{ b: new Array(INPUT_LIMITS.arrayItems + 1).fill({}) }] }],
    ["too many keys", { a: Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`k${i}`, {}])) }],
    ["a long path cut at 160 characters", { [`${"p".repeat(150)}`]: { [`${"q".repeat(20)}`]: [Infinity] } }],
    ["keys that look like paths", { "a.b": { "0": [null, -Infinity] } }],
    ["350,000 empty objects in 35 arrays", { a: Array.from({ length: 35 }, () => Array(10_000).fill({})) }],
    ["the same with one NaN at the end", { a: [...Array(10_000).fill({}), Number.NaN] }],
  ];
  it.each(cases)("says what the previous walk said: %s", (_name, value) => {
    expect(findLimitViolation(value, "arguments")).toBe(referenceViolation(value, "arguments"));
  });

  it("agrees with the previous walk on any JSON value, bad values mixed in", () => {
    const spice = fc.oneof(
      fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, "nul\u0000", {}, [], nested(33)),
      fc.record({ "ctl\u0001": fc.constant(1) }),
    );
    const value = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: "small", withCrossShrink: true },
        fc.jsonValue({ maxDepth: 3 }),
        spice,
        fc.array(tie("node"), { maxLength: 4 }),
        fc.dictionary(fc.string({ maxLength: 4 }), tie("node"), { maxKeys: 4 }),
      ),
    })).node;
    fc.assert(
      fc.property(value, (v) => {
        expect(findLimitViolation(v, "v")).toBe(referenceViolation(v, "v"));
      }),
      { numRuns: 2000 },
    );
  });
});
