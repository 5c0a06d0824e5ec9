import { describe, expect, it } from "vitest";
import { jsonNestingExceeds, MAX_JSON_NESTING } from "../../src/mcp/json-text.ts";

const nested = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;
/** `depth` levels of `{"a":…}` padded with a long string so the text is looked at. */
const objects = (depth: number, pad = "") => `${'{"a":'.repeat(depth)}"${pad}"${"}".repeat(depth)}`;

describe("jsonNestingExceeds", () => {
  it("counts arrays and objects inside one another, up to the bound", () => {
    expect(jsonNestingExceeds(nested(MAX_JSON_NESTING))).toBe(false);
    expect(jsonNestingExceeds(nested(MAX_JSON_NESTING + 1))).toBe(true);
    expect(jsonNestingExceeds(objects(11, "x".repeat(40)), 11)).toBe(false);
    expect(jsonNestingExceeds(objects(11, "x".repeat(40)), 10)).toBe(true);
    expect(jsonNestingExceeds(`[${Array(50).fill("[[]]").join(",")}]`, 3)).toBe(false);
  });

  it("skips strings, escaped quotes and backslashes included", () => {
    const brackets = `"${"[".repeat(100)}"`;
    expect(jsonNestingExceeds(`[${brackets}]`, 3)).toBe(false);
    expect(jsonNestingExceeds(`["\\"${"[".repeat(100)}"]`, 3)).toBe(false);
    // An escaped backslash ends before the quote: the brackets after it are outside the string.
    expect(jsonNestingExceeds(`["\\\\",${nested(100)}]`, 3)).toBe(true);
    expect(jsonNestingExceeds(`["unterminated ${"[".repeat(100)}`, 3)).toBe(false);
  });

  it("does not look at a text too short to nest past the bound", () => {
    expect(jsonNestingExceeds("[[[[", 2)).toBe(false);
    expect(jsonNestingExceeds("[[[[[", 2)).toBe(true);
  });
});
