/**
 * `whereDepthProblem` walks a filter with an explicit stack and spells a node's path out only for its
 * message (it used to build a path string per node). The messages below were recorded from the
 * version that built them per node (main at 70bfc7a): same refusals, same paths, same order of
 * search (the first too-deep node found).
 */
import { describe, expect, it } from "vitest";
import { whereDepthProblem } from "../../../src/data/schemas.ts";

const nots = (n: number, inner: unknown = { a: 1 }): unknown => {
  let w = inner;
  for (let i = 0; i < n; i++) w = { not: w };
  return w;
};
const chain = (n: number, key: "and" | "or", at: number): unknown => {
  let w: unknown = { a: 1 };
  for (let i = 0; i < n; i++) w = { [key]: [...Array(at).fill({ b: 2 }), w] };
  return w;
};
const mixed = (n: number): unknown => {
  let w: unknown = { a: 1 };
  for (let i = 0; i < n; i++)
    w = i % 3 === 0 ? { not: w } : i % 3 === 1 ? { and: [{ x: 1 }, w] } : { or: [w, { y: 2 }] };
  return w;
};
const INPUTS: Record<string, [unknown, string?]> = {
  "8 nots": [nots(8)],
  "9 nots": [nots(9)],
  "10 nots": [nots(10)],
  "2,000 nots": [nots(2000)],
  "and chain 9 at index 2": [chain(9, "and", 2)],
  "or chain 9 at index 0": [chain(9, "or", 0)],
  "or chain 8": [chain(8, "or", 1)],
  "mixed 9": [mixed(9)],
  "mixed 12": [mixed(12)],
  "mixed 8": [mixed(8)],
  "not a filter": [42],
  null: [null],
  "array at top": [[nots(20)]],
  "and of non-objects": [{ and: [1, "x", null, [nots(20)]] }],
  "both and and or deep": [{ and: [nots(9)], or: [nots(9)] }],
  "custom root": [nots(9), "arguments.where"],
};

/** [input, the message before the change (null: accepted)] */
const CASES: [string, string | null][] = [
  ["8 nots", null],
  ["9 nots", "where.not.not.not.not.not.not.not.not.not: filters nest deeper than 8 levels"],
  ["10 nots", "where.not.not.not.not.not.not.not.not.not: filters nest deeper than 8 levels"],
  ["2,000 nots", "where.not.not.not.not.not.not.not.not.not: filters nest deeper than 8 levels"],
  [
    "and chain 9 at index 2",
    "where.and.2.and.2.and.2.and.2.and.2.and.2.and.2.and.2.and.2: filters nest deeper than 8 levels",
  ],
  [
    "or chain 9 at index 0",
    "where.or.0.or.0.or.0.or.0.or.0.or.0.or.0.or.0.or.0: filters nest deeper than 8 levels",
  ],
  ["or chain 8", null],
  ["mixed 9", "where.or.0.and.1.not.or.0.and.1.not.or.0.and.1.not: filters nest deeper than 8 levels"],
  ["mixed 12", "where.or.0.and.1.not.or.0.and.1.not.or.0.and.1.not: filters nest deeper than 8 levels"],
  ["mixed 8", null],
  ["not a filter", null],
  ["null", null],
  ["array at top", null],
  ["and of non-objects", null],
  ["both and and or deep", "where.or.0.not.not.not.not.not.not.not.not: filters nest deeper than 8 levels"],
  ["custom root", "arguments.where.not.not.not.not.not.not.not.not.not: filters nest deeper than 8 levels"],
];

describe("whereDepthProblem", () => {
  it.each(CASES)("%s → %s", (name, expected) => {
    const [where, root] = INPUTS[name]!;
    expect(whereDepthProblem(where, root)).toBe(expected);
  });
});
