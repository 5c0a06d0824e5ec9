/**
 * Differential test of `find`: one collection with a column of every scalar and array type, ~60 rows
 * of awkward values (nulls, empty strings, unicode, LIKE metacharacters, -0, bigints past 2^53,
 * boundary dates and instants, nested json), then seeded random `where` trees and every `order`
 * paged with a small limit — each answer compared with a plain JavaScript evaluator of the
 * documented semantics (README "Decisions", the `where` schema in src/data/schemas.ts). The real
 * routes, workerd and the embedded database answer; a disagreement names the seed's case.
 */

import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectClient, resultJson } from "../app-mcp/mcp-client.ts";
import { apiJson, developerExposing, type TestDeveloper } from "../helpers.ts";

// ─── seeded randomness ──────────────────────────────────────────────────────────────────────────

/** mulberry32: a small deterministic PRNG (same cases every run). */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rand = prng(20261201);
const int = (n: number): number => Math.floor(rand() * n);
const pick = <T>(list: readonly T[]): T => list[int(list.length)] as T;
const some = <T>(list: readonly T[], max: number): T[] =>
  Array.from({ length: int(max + 1) }, () => pick(list));

// ─── the collection and its awkward values ──────────────────────────────────────────────────────

const U0 = "00000000-0000-0000-0000-000000000000";
const UF = "ffffffff-ffff-ffff-ffff-ffffffffffff";
const UA = "0189a3b4-1c2d-7e8f-9a0b-1c2d3e4f5a6b";
const UB = "7fffffff-0000-4000-8000-000000000001";
const UUIDS = [U0, UF, UF.toUpperCase(), UA, UB, "80000000-0000-4000-8000-000000000000"];
const TEXTS = [
  "",
  " ",
  " a",
  "a ",
  "a",
  "A",
  "abc",
  "ABC",
  "ß",
  "SS",
  "ss",
  "straße",
  "STRASSE",
  "İ",
  "i",
  "I",
  "ı",
  "é",
  "e\u0301",
  "café",
  "CAFÉ",
  "😀",
  "a😀b",
  "100%",
  "50%_off",
  "a_b",
  "a\\b",
  "\\",
  "%",
  "_",
  "O'Reilly",
  '"quoted"',
  "{x,y}",
  "NULL",
  "line\nbreak",
  "tab\t",
  "Ωmega",
  "ωmega",
  "日本語",
  "\uffff",
];
const INTS = [0, 1, -1, 2147483647, -2147483648, 42, 7, -7, 100];
const BIGINTS: (number | string)[] = [
  0,
  1,
  -1,
  42,
  9007199254740991,
  -9007199254740991,
  "9007199254740992",
  "9007199254740993",
  "9223372036854775807",
  "-9223372036854775808",
  "-9007199254740993",
];
const NUMBERS = [0, -0, 1.5, -1.5, 1e308, -1e308, 5e-324, 1e-10, 0.1, 0.30000000000000004, 42, 2147483648.5];
const TIMESTAMPS = [
  "1970-01-01T00:00:00Z",
  "2000-02-29T23:59:59.999Z",
  "2026-01-01T00:00:00+05:30",
  "2025-12-31T18:30:00Z",
  "1969-12-31T23:59:59.999999Z",
  "0001-01-01T00:00:00Z",
  "9999-12-31T23:59:59Z",
  "2026-06-15T12:00:00.5Z",
  "2026-06-15T12:00:00.500001Z",
  "0001-01-01T05:00:00+05:00",
  "9999-12-31T18:59:59.999999-05:00",
];
const DATES = [
  "1970-01-01",
  "2000-02-29",
  "0001-01-01",
  "9999-12-31",
  "2026-12-31",
  "2027-01-01",
  "1999-12-31",
];
const JSONS: unknown[] = [
  {},
  [],
  { a: 1 },
  { a: null },
  { a: { b: [1, 2, { c: null }] } },
  [1, 2, 2, null],
  ["a", "b"],
  "a",
  1,
  1.0,
  true,
  false,
  { a: "%" },
  { x: [], y: {} },
  [[1], [2]],
  { k: "ß" },
  [{ a: 1 }, { b: 2 }],
  0,
  "",
  { a: 1, b: { a: 2 } },
  ["a", { a: 1 }],
];

type Pool = readonly unknown[];
/** Column → its type and the pool its row values are drawn from (null is always added). */
const COLUMNS: Record<string, { type: string; pool: Pool }> = {
  t: { type: "text", pool: TEXTS },
  i: { type: "integer", pool: INTS },
  b: { type: "bigint", pool: BIGINTS },
  n: { type: "number", pool: NUMBERS },
  f: { type: "boolean", pool: [true, false] },
  ts: { type: "timestamp", pool: TIMESTAMPS },
  d: { type: "date", pool: DATES },
  j: { type: "json", pool: JSONS },
  u: { type: "uuid", pool: UUIDS },
  ta: {
    type: "text[]",
    pool: [
      [],
      [""],
      ["a", "a"],
      ["a", "b"],
      ["A"],
      ["ß"],
      ["%", "_", "\\"],
      ['"', ","],
      ["NULL"],
      ["😀"],
      [" a "],
    ],
  },
  ia: { type: "integer[]", pool: [[], [1, 1], [1, 2, 3], [-1], [2147483647], [0]] },
  ba: {
    type: "bigint[]",
    pool: [[], ["9223372036854775807"], [1, "9007199254740993"], [0, 0], ["9007199254740992"]],
  },
  na: { type: "number[]", pool: [[], [-0], [0], [1.5, 1.5], [1e308], [5e-324, -1.5]] },
  fa: { type: "boolean[]", pool: [[], [true], [false, false], [true, false]] },
  tsa: {
    type: "timestamp[]",
    pool: [
      [],
      ["2026-01-01T00:00:00+05:30"],
      ["2025-12-31T18:30:00Z"],
      ["1970-01-01T00:00:00Z", "1970-01-01T00:00:00Z"],
    ],
  },
  da: { type: "date[]", pool: [[], ["2000-02-29"], ["1970-01-01", "9999-12-31"], ["0001-01-01"]] },
  ua: { type: "uuid[]", pool: [[], [U0], [U0, UF], [UF.toUpperCase()], [UA, UA]] },
};
const NAME = "oddities";
const ROWS = 60;

// ─── reference semantics ────────────────────────────────────────────────────────────────────────

/** An ISO timestamp as microseconds since the epoch (Postgres' precision; JS Dates stop at ms). */
function micros(text: string): bigint {
  const m = /^(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:[.,](\d+))?(Z|[+-]\d\d(?::?\d\d)?)$/.exec(text);
  if (!m) throw new Error(`bad timestamp ${text}`);
  const date = new Date(0);
  date.setUTCFullYear(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  date.setUTCHours(Number(m[4]), Number(m[5]), Number(m[6]), 0);
  let offset = 0;
  if (m[8] !== "Z") {
    const [h, min = "0"] = (m[8] as string).slice(1).split(/:?(?=\d\d$)/);
    offset = (m[8]?.startsWith("-") ? -1 : 1) * (Number(h) * 60 + Number(min));
  }
  const fraction = BigInt((m[7] ?? "").padEnd(6, "0").slice(0, 6));
  return BigInt(date.getTime() - offset * 60_000) * 1000n + fraction;
}

type Key = string | number | bigint | boolean;
/** A scalar value as something JS compares the way Postgres does for its type. */
function key(type: string, value: unknown): Key {
  switch (type) {
    case "bigint":
      return BigInt(value as string | number);
    case "timestamp":
      return micros(value as string);
    case "uuid":
      return (value as string).toLowerCase();
    default:
      return value as Key;
  }
}
const elementOf = (type: string): string => type.slice(0, -2);

/** Code point order (collation "C"; JS `<` compares UTF-16 units, which differs past U+FFFF). */
function codePointCompare(a: string, b: string): number {
  const x = Array.from(a, (c) => c.codePointAt(0) as number);
  const y = Array.from(b, (c) => c.codePointAt(0) as number);
  for (let i = 0; i < Math.min(x.length, y.length); i++)
    if (x[i] !== y[i]) return (x[i] as number) - (y[i] as number);
  return x.length - y.length;
}
function compareKeys(a: Key, b: Key): number {
  if (typeof a === "string") return codePointCompare(a, b as string);
  if (typeof a === "boolean") return Number(a) - Number(b);
  const x = a as number; // number or bigint: both compare with < (-0 equals 0)
  const y = b as number;
  return x < y ? -1 : x > y ? 1 : 0;
}

/**
 * LIKE → RegExp (`\` escapes; a trailing `\` is invalid: null). ILIKE lowercases each character of
 * the pattern and the value as Postgres' `lower()` does — one character to one (`İ` → `i`, where
 * JavaScript's case-insensitive match keeps `İ` apart), so `ß` stays apart from `SS`.
 */
function likeRegex(pattern: string, insensitive: boolean): RegExp | null {
  let source = "";
  const chars = Array.from(insensitive ? lowerEach(pattern) : pattern);
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i] as string;
    if (c === "\\") {
      if (i + 1 >= chars.length) return null;
      source += escapeRegex(chars[++i] as string);
    } else if (c === "%") source += "[^]*";
    else if (c === "_") source += "[^]";
    else source += escapeRegex(c);
  }
  return new RegExp(`^${source}$`, "u");
}
/** Each code point lowercased to one code point (the first of a longer lowercase: `İ` → `i`). */
const lowerEach = (text: string): string => Array.from(text, (c) => Array.from(c.toLowerCase())[0]).join("");
const escapeRegex = (c: string): string => c.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&");

/** jsonb `@>`: objects by key, arrays as sets of contained elements, a top-level scalar in an array. */
function jsonContains(a: unknown, b: unknown, top = true): boolean {
  if (Array.isArray(b)) {
    return Array.isArray(a) && b.every((y) => a.some((x) => sameKind(x, y) && jsonContains(x, y, false)));
  }
  if (isObject(b)) {
    return isObject(a) && Object.entries(b).every(([k, y]) => k in a && jsonContains(a[k], y, false));
  }
  if (top && Array.isArray(a)) return a.some((x) => x === b);
  return a === b;
}
const isObject = (x: unknown): x is Record<string, unknown> =>
  typeof x === "object" && x !== null && !Array.isArray(x);
const sameKind = (x: unknown, y: unknown): boolean =>
  Array.isArray(x) === Array.isArray(y) && isObject(x) === isObject(y);

/** jsonb `?`: a top-level object key, a string element of an array, or the string itself. */
function jsonHasKey(a: unknown, k: string): boolean {
  if (isObject(a)) return Object.hasOwn(a, k);
  if (Array.isArray(a)) return a.includes(k);
  return a === k;
}

type Row = Record<string, unknown> & { id: string };
class Invalid extends Error {}

/** Whether `row` matches one operator of a column (SQL: comparisons with NULL never match). */
function matchOp(type: string, op: string, cell: unknown, operand: unknown): boolean {
  if (op === "is_null") return (cell === null) === operand;
  if (op === "neq") return cell === null || compareKeys(key(type, cell), key(type, operand)) !== 0;
  if (op === "nin")
    return (
      cell === null || (operand as unknown[]).every((o) => compareKeys(key(type, cell), key(type, o)) !== 0)
    );
  if (cell === null) return false;
  const element = type.endsWith("[]") ? elementOf(type) : null;
  const has = (list: unknown[], x: unknown) =>
    list.some((y) => compareKeys(key(element as string, y), key(element as string, x)) === 0);
  switch (op) {
    case "eq":
      return compareKeys(key(type, cell), key(type, operand)) === 0;
    case "gt":
      return compareKeys(key(type, cell), key(type, operand)) > 0;
    case "gte":
      return compareKeys(key(type, cell), key(type, operand)) >= 0;
    case "lt":
      return compareKeys(key(type, cell), key(type, operand)) < 0;
    case "lte":
      return compareKeys(key(type, cell), key(type, operand)) <= 0;
    case "in":
      return (operand as unknown[]).some((o) => compareKeys(key(type, cell), key(type, o)) === 0);
    case "like":
    case "ilike": {
      const regex = likeRegex(operand as string, op === "ilike");
      if (!regex) throw new Invalid("LIKE pattern ends with the escape character");
      return regex.test(op === "ilike" ? lowerEach(cell as string) : (cell as string));
    }
    case "starts_with":
      return (cell as string).startsWith(operand as string);
    case "contains":
      if (type === "json") return jsonContains(cell, operand);
      return (Array.isArray(operand) ? operand : [operand]).every((x) => has(cell as unknown[], x));
    case "overlaps":
      return (operand as unknown[]).some((x) => has(cell as unknown[], x));
    case "has_key":
      return jsonHasKey(cell, operand as string);
  }
  throw new Error(`no reference for ${op}`);
}

type Where = Record<string, unknown>;
/** Reference `where`: entries ANDed; `not` is the complement (a NULL inside counts as no match). */
function matches(row: Row, where: Where): boolean {
  return Object.entries(where).every(([k, value]) => {
    if (k === "and") return (value as Where[]).every((w) => matches(row, w));
    if (k === "or") return (value as Where[]).some((w) => matches(row, w));
    if (k === "not") return !matches(row, value as Where);
    const type = typeOfColumn(k);
    const ops = isObject(value) ? Object.entries(value) : [["eq", value] as [string, unknown]];
    return ops.every(([op, operand]) => matchOp(type, op, row[k], operand));
  });
}
const SERVER_TYPES: Record<string, string> = {
  id: "uuid",
  owner_id: "uuid",
  created_at: "timestamp",
  updated_at: "timestamp",
};
const typeOfColumn = (name: string): string => SERVER_TYPES[name] ?? (COLUMNS[name]?.type as string);

/** Reference order: the column (NULL greatest) then id, both in the direction asked. */
function referenceOrder(rows: Row[], column: string, desc: boolean): string[] {
  const type = typeOfColumn(column);
  const sign = desc ? -1 : 1;
  return [...rows]
    .sort((x, y) => {
      const a = x[column];
      const b = y[column];
      const byValue =
        a === null && b === null
          ? 0
          : a === null
            ? 1
            : b === null
              ? -1
              : compareKeys(key(type, a), key(type, b));
      return sign * (byValue || compareKeys(x.id, y.id));
    })
    .map((r) => r.id);
}

// ─── random filters ─────────────────────────────────────────────────────────────────────────────

const OPS: Record<string, string[]> = {
  text: ["eq", "neq", "in", "nin", "like", "ilike", "starts_with", "is_null"],
  ordered: ["eq", "neq", "gt", "gte", "lt", "lte", "in", "nin", "is_null"],
  boolean: ["eq", "neq", "is_null"],
  uuid: ["eq", "neq", "in", "nin", "is_null"],
  json: ["contains", "has_key", "is_null"],
  array: ["contains", "overlaps", "is_null"],
};
function opsOf(type: string): string[] {
  if (type.endsWith("[]")) return OPS.array as string[];
  if (["integer", "bigint", "number", "timestamp", "date"].includes(type)) return OPS.ordered as string[];
  return OPS[type] as string[];
}

const PATTERN_PIECES = [
  "%",
  "_",
  "\\%",
  "\\_",
  "\\\\",
  "a",
  "A",
  "é",
  "É",
  "ß",
  "ss",
  "😀",
  "b",
  " ",
  "İ",
  "i",
  "café",
  "\n",
];
function pattern(): string {
  if (rand() < 0.3) return pick(TEXTS);
  let p = "";
  for (let n = 1 + int(4); n > 0; n--) p += pick(PATTERN_PIECES);
  return p;
}

/** A random operand for one operator of a column (values from its pool and from the rows). */
function operand(column: string, type: string, op: string, rows: Row[]): unknown {
  // owner_id is null on every row (the developer inserts): filter it with uuids that match nothing.
  const pool = COLUMNS[column]?.pool ?? (column === "owner_id" ? [U0, UA] : rows.map((r) => r[column]));
  const scalar = () => pick(pool);
  switch (op) {
    case "is_null":
      return rand() < 0.5;
    case "in":
    case "nin":
      return some(pool, 4);
    case "like":
    case "ilike":
      return pattern();
    case "starts_with":
      return pick(TEXTS).slice(0, int(3));
    case "has_key":
      return pick(["a", "b", "x", "k", "", "c", "1"]);
    case "contains":
      if (type === "json") return rand() < 0.7 ? jsonPart(pick(JSONS)) : pick(JSONS);
      return rand() < 0.3 ? pick(pool.flat()) : some(pool.flat(), 2);
    case "overlaps":
      return some(pool.flat(), 3);
    default:
      return scalar();
  }
}

/** A piece of a json value (a sub-object / sub-array / element), for containment that may hold. */
function jsonPart(value: unknown): unknown {
  if (Array.isArray(value)) return value.length && rand() < 0.6 ? [pick(value)] : value;
  if (isObject(value)) {
    const entries = Object.entries(value);
    return entries.length && rand() < 0.6 ? Object.fromEntries([pick(entries)]) : value;
  }
  return value;
}

// Text twice more: its operators (like / ilike / starts_with over unicode) have the most to get wrong.
const FILTERABLE = [...Object.keys(COLUMNS), "t", "t", "id", "owner_id", "created_at", "updated_at"];
const SERVER_OPS: Record<string, string[]> = {
  id: ["eq", "in"],
  owner_id: ["eq", "in", "is_null"],
  created_at: ["gt", "gte", "lt", "lte"],
  updated_at: ["gt", "gte", "lt", "lte"],
};

function columnFilter(column: string, rows: Row[]): unknown {
  const type = typeOfColumn(column);
  const allowed = SERVER_OPS[column] ?? opsOf(type);
  const chosen = [...new Set(some(allowed, 2))];
  if (!chosen.length) chosen.push(pick(allowed));
  if (chosen.length === 1 && chosen[0] === "eq" && rand() < 0.5) return operand(column, type, "eq", rows);
  return Object.fromEntries(chosen.map((op) => [op, operand(column, type, op, rows)]));
}

function randomWhere(rows: Row[], depth: number): Where {
  const where: Where = {};
  for (let n = 1 + int(2); n > 0; n--) {
    const roll = rand();
    if (depth < 3 && roll < 0.15)
      where.and = Array.from({ length: 1 + int(3) }, () => randomWhere(rows, depth + 1));
    else if (depth < 3 && roll < 0.35)
      where.or = Array.from({ length: 1 + int(3) }, () => randomWhere(rows, depth + 1));
    else if (depth < 3 && roll < 0.45) where.not = randomWhere(rows, depth + 1);
    else {
      const column = pick(FILTERABLE);
      where[column] = columnFilter(column, rows);
    }
  }
  return where;
}

// ─── the test ───────────────────────────────────────────────────────────────────────────────────

const CASES = 220;
const MCP_CASES = 30;
const PAGE = 9;
const ORDERABLE = ["id", "owner_id", "created_at", "updated_at", "t", "i", "b", "n", "f", "ts", "d", "u"];

let dev: TestDeveloper;
let rows: Row[];
let client: Client;

/** A data route of the collection, as the developer: `rows` or `find`. */
const dataRoute = (path: string, json: unknown) =>
  apiJson(`/v1/projects/${dev.projectId}/collections/${NAME}/${path}`, { token: dev.token, json });

beforeAll(async () => {
  dev = await developerExposing({
    name: NAME,
    columns: Object.entries(COLUMNS).map(([name, { type }]) => ({ name, type })),
  });
  const values = Array.from({ length: ROWS }, (_, r) =>
    Object.fromEntries(
      Object.entries(COLUMNS).map(([name, { pool }], c) => {
        const all = [null, ...pool];
        // Every pool value at least once (staggered per column), then random ones.
        return [name, r < all.length ? all[(r + c) % all.length] : pick(all)];
      }),
    ),
  );
  rows = await inBatches(values, async (row) => {
    const res = await dataRoute("rows", row);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const { id, owner_id, created_at, updated_at } = res.body;
    return { ...row, id, owner_id, created_at, updated_at };
  });
  client = await connectClient(`http://local/app/${dev.projectId}/mcp`, {
    authorization: `Bearer ${dev.token}`,
  });
});

afterAll(async () => {
  await client?.close();
});

/** An escaped lone surrogate in JSON text (JSON.stringify escapes those, and only those). */
const ESCAPED_LONE_SURROGATE = /\\ud[89a-f][0-9a-f]{2}/i;

/** What the reference says: the matching ids (sorted), or "invalid" for an input it refuses. */
function expected(where: Where): string[] | "invalid" {
  // Half an emoji has no UTF-8 form: not a value any operator can compare.
  if (ESCAPED_LONE_SURROGATE.test(JSON.stringify(where))) return "invalid";
  try {
    return rows
      .filter((row) => matches(row, where))
      .map((r) => r.id)
      .sort();
  } catch (err) {
    if (err instanceof Invalid) return "invalid";
    throw err;
  }
}

describe("find agrees with the reference evaluator", () => {
  it(`${CASES} random where trees over REST, ${MCP_CASES} over the app MCP`, async () => {
    const cases = Array.from({ length: CASES + MCP_CASES }, (_, n) => ({ n, where: randomWhere(rows, 0) }));
    const failures = await inBatches(cases, async ({ n, where }) => {
      const want = expected(where);
      const input = { where, order: "id asc", limit: 200 };
      const { status, got, body } = n < CASES ? await viaRest(input) : await viaMcp(input);
      const agree =
        want === "invalid" ? status === 400 : status === 200 && JSON.stringify(got) === JSON.stringify(want);
      return agree ? null : `case ${n} ${JSON.stringify(where)}: ${difference(want, status, got, body)}`;
    }).then((all) => all.filter((f) => f !== null));
    expect(failures, failures.slice(0, 8).join("\n")).toEqual([]);
  });

  it("like and ilike with every seeded text as the pattern", async () => {
    const patterns = [
      ...TEXTS.map((t) => ({ t: { ilike: t } })),
      ...TEXTS.filter((_, i) => i % 2).map((t) => ({ t: { like: t.toUpperCase() } })),
    ];
    const failures = await inBatches(patterns, async (where) => {
      const want = expected(where);
      const { status, got, body } = await viaRest({ where, order: "id asc", limit: 200 });
      const agree =
        want === "invalid" ? status === 400 : status === 200 && JSON.stringify(got) === JSON.stringify(want);
      return agree ? null : `${JSON.stringify(where)}: ${difference(want, status, got, body)}`;
    });
    expect(failures.filter((f) => f !== null)).toEqual([]);
  });

  it("pages every orderable column both ways: each row once, in the reference order", async () => {
    const orders = ORDERABLE.flatMap((column) => [false, true].map((desc) => ({ column, desc })));
    const failures = (await inBatches(orders, pageThrough)).filter((f) => f !== null);
    expect(failures, failures.join("\n")).toEqual([]);
  });
});

describe("inputs the reference cannot evaluate are refused with 400, never 500", () => {
  const refusals: [string, unknown][] = [
    // Instants outside the years 0001–9999 UTC: Postgres writes them back as `10000-…` / `… BC`,
    // which no input accepts (a page ending on such a row had a cursor find refused).
    ["insert ts", { ts: "9999-12-31T23:59:59-05:00" }],
    ["insert tsa", { tsa: ["0001-01-01T00:00:00+05:00"] }],
    ["insert ts rounded", { ts: "9999-12-31T23:59:59.9999999Z" }],
    ["where ts", { where: { ts: { gt: "0001-01-01T00:00:00+00:01" } } }],
    ["where bigint past int8", { where: { b: { gt: "9999999999999999999" } } }],
    ["where date that does not exist", { where: { d: { lt: "2026-02-30" } } }],
    ["where year 0", { where: { d: "0000-01-01" } }],
    ["insert lone surrogate", { t: "\ud83d" }],
    ["insert lone surrogate in an array", { ta: ["a", "\ude00"] }],
    ["insert lone surrogate in json", { j: { a: "\ud83d" } }],
    ["where lone surrogate", { where: { t: { starts_with: "\ud83d" } } }],
    ["where NUL", { where: { t: { eq: "a\u0000b" } } }],
    ["where trailing escape", { where: { t: { like: "ab\\" } } }],
    ["where json NUL", { where: { j: { contains: { a: "\u0000" } } } }],
  ];
  for (const [label, body] of refusals) {
    it(label, async () => {
      const res = await dataRoute(label.startsWith("insert") ? "rows" : "find", body);
      expect(res.status, JSON.stringify(res.body)).toBe(400);
    });
  }
});

/** Every page of one order with a small limit; null when the ids come in the reference order. */
async function pageThrough({ column, desc }: { column: string; desc: boolean }): Promise<string | null> {
  const order = `${column} ${desc ? "desc" : "asc"}`;
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const res = await dataRoute("find", { order, limit: PAGE, cursor });
    if (res.status !== 200) return `${order}: ${res.status} ${JSON.stringify(res.body)}`;
    seen.push(...res.body.rows.map((r: Row) => r.id));
    cursor = res.body.next_cursor;
  } while (cursor && seen.length <= ROWS);
  const want = referenceOrder(rows, column, desc);
  if (JSON.stringify(seen) === JSON.stringify(want)) return null;
  return `${order}: got ${seen.map(describe_).join(" ")}\n  want ${want.map(describe_).join(" ")}`;
}

type Answer = { status: number; got?: string[]; body: unknown };

async function viaRest(input: unknown): Promise<Answer> {
  const res = await dataRoute("find", input);
  return { status: res.status, body: res.body, got: res.body.rows?.map((r: Row) => r.id) };
}

async function viaMcp(input: Record<string, unknown>): Promise<Answer> {
  const result = await client.callTool({ name: `${NAME}_find`, arguments: input });
  const body = resultJson(result);
  return { status: result.isError ? 400 : 200, body, got: body.rows?.map((r: Row) => r.id) };
}

/** What differs, by row index: extra and missing rows, or the refusal. */
function difference(
  want: string[] | "invalid",
  status: number,
  got: string[] | undefined,
  body: unknown,
): string {
  const expected = want === "invalid" ? "400" : `${want.length} rows`;
  if (!got || want === "invalid") return `expected ${expected}, got ${status} ${JSON.stringify(body)}`;
  const extra = got.filter((id) => !want.includes(id)).map(describe_);
  const missing = want.filter((id) => !got.includes(id)).map(describe_);
  return `expected ${expected}, got ${got.length}; extra ${extra.join(" ")}; missing ${missing.join(" ")}`;
}

/** `fn` over `items`, a few at a time (the Worker and the database overlap the calls), in order. */
async function inBatches<T, R>(items: T[], fn: (item: T) => Promise<R>, size = 6): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += size)
    out.push(...(await Promise.all(items.slice(i, i + size).map(fn))));
  return out;
}

/** A row id with its index (for readable failures). */
function describe_(id: string): string {
  return `#${rows.findIndex((r) => r.id === id)}`;
}
