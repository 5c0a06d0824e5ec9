/**
 * Typed results: `outputSchema` from a tool's awaited return type when that is a JSON-shaped object
 * type, `structuredContent` checked against it before it is sent (a tool whose value breaks its
 * declared type gets an `isError` result), only on versions that know structured results, never in
 * `session` or under `--untyped`. The checker itself is cross-checked against the SDK's validator.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import { describe, expect, it } from "vitest";
import { compileResultCheck } from "../../src/cli/validate-args.ts";
import { cleanEnv, cliSuite, LineClient, NODE, scratch } from "./helpers.ts";

const TOOLS = `
interface Forecast {
  city: string;
  /** degrees Celsius */
  temp: number;
  tags: string[];
  at: Date;
  note?: string | null;
}

/** Weather for a city. */
export async function forecast(city: string): Promise<Forecast> {
  return { city, temp: 21.5, tags: ["sunny"], at: new Date(0) };
}

/** Counts, or claims to: the value comes from elsewhere. */
export function tally(raw: string): { count: number; items: { id: number }[] } {
  return JSON.parse(raw);
}

/** Inferred from the body. */
export function stats({ xs }: { xs: number[] }) {
  return { n: xs.length, sum: xs.reduce((a, b) => a + b, 0) };
}

export function counts(): Record<string, number> {
  return { a: 1 };
}

export function twice(n: number) {
  return 2 * n;
}

export function names(): string[] {
  return ["a"];
}

export function failure(): Error {
  return new Error("x");
}

export function maybe(): { a: number } | undefined {
  return undefined;
}

export function nothing(): void {}
`;

const FORECAST_SCHEMA = {
  type: "object",
  properties: {
    city: { type: "string" },
    temp: { type: "number", description: "degrees Celsius" },
    tags: { type: "array", items: { type: "string" } },
    at: { type: "string", format: "date-time" },
    note: { anyOf: [{ type: "null" }, { type: "string" }] },
  },
  required: ["city", "temp", "tags", "at"],
};

describe("typed results (outputSchema, structuredContent)", () => {
  const { bin, dir } = cliSuite({ "tools.ts": TOOLS });
  const env = { XDG_CACHE_HOME: join(dir, "cache") };

  const connect = async (...flags: string[]) => {
    const transport = new StdioClientTransport({
      command: NODE,
      args: [bin, "mcp", ...flags, "tools.ts"],
      cwd: dir,
      env: cleanEnv(env) as Record<string, string>,
      stderr: "pipe",
    });
    const client = new Client({ name: "test", version: "1.0.0" });
    await client.connect(transport);
    return client;
  };

  it("the SDK client lists output schemas for object return types only and gets validated structuredContent", async () => {
    const client = await connect("--sandbox");
    const { tools } = await client.listTools();
    const outputs = Object.fromEntries(tools.map((t) => [t.name, t.outputSchema]));
    expect(outputs.forecast).toEqual(FORECAST_SCHEMA);
    expect(outputs.tally).toEqual({
      type: "object",
      properties: {
        count: { type: "number" },
        items: {
          type: "array",
          items: { type: "object", properties: { id: { type: "number" } }, required: ["id"] },
        },
      },
      required: ["count", "items"],
    });
    expect(outputs.stats).toEqual({
      type: "object",
      properties: { n: { type: "number" }, sum: { type: "number" } },
      required: ["n", "sum"],
    });
    expect(outputs.counts).toEqual({
      type: "object",
      properties: {},
      additionalProperties: { type: "number" },
    });
    for (const name of ["twice", "names", "failure", "maybe", "nothing"])
      expect(outputs[name]).toBeUndefined();

    // The SDK validates structuredContent against the listed outputSchema (it throws otherwise).
    const weather = await client.callTool({ name: "forecast", arguments: { city: "Oslo" } });
    const expected = { city: "Oslo", temp: 21.5, tags: ["sunny"], at: "1970-01-01T00:00:00.000Z" };
    expect(weather).toEqual({
      content: [{ type: "text", text: JSON.stringify(expected) }],
      structuredContent: expected,
      isError: false,
    });
    const honest = await client.callTool({ name: "tally", arguments: { raw: '{"count":2,"items":[]}' } });
    expect(honest.structuredContent).toEqual({ count: 2, items: [] });

    const plain = await client.callTool({ name: "twice", arguments: { n: 4 } });
    expect(plain).toEqual({ content: [{ type: "text", text: "8" }], isError: false });
    await client.close();
  });

  it("a tool whose value breaks its declared return type gets an isError result naming the place", async () => {
    const client = await connect();
    await client.listTools();
    const cases: [string, string][] = [
      ['{"count":"many","items":[]}', "result.count must be number, got string"],
      ['{"count":1,"items":[{"id":1},{"id":"2"}]}', "result.items[1].id must be number, got string"],
      ['{"count":1}', "result is missing required property `items`"],
      ["[1,2]", "result must be object, got array"],
    ];
    for (const [raw, problem] of cases) {
      const result = await client.callTool({ name: "tally", arguments: { raw } });
      expect(result).toEqual({
        content: [
          {
            type: "text",
            text: `tool \`tally\` returned a value that does not match its declared return type: ${problem}`,
          },
        ],
        isError: true,
      });
    }
    await client.close();
  });

  it("a client on 2025-03-26 sees no outputSchema and today's results; --untyped lists none", async () => {
    const old = new LineClient(bin, ["mcp", "tools.ts"], { cwd: dir, env });
    const init = await old.request("initialize", {
      protocolVersion: "2025-03-26",
      capabilities: {},
      clientInfo: { name: "old", version: "1" },
    });
    expect(init.result).toMatchObject({ protocolVersion: "2025-03-26" });
    const list = (await old.request("tools/list")).result as { tools: Record<string, unknown>[] };
    for (const tool of list.tools) expect(tool).not.toHaveProperty("outputSchema");
    expect((await old.call("tally", { raw: '{"count":"many"}' })).result).toEqual({
      content: [{ type: "text", text: '{"count":"many"}' }],
      isError: false,
    });
    expect(await old.close()).toBe(0);

    const untyped = await connect("--untyped");
    const { tools } = await untyped.listTools();
    for (const tool of tools) expect(tool.outputSchema).toBeUndefined();
    const result = await untyped.callTool({ name: "tally", arguments: { raw: '{"count":"many"}' } });
    expect(result.isError).toBe(false);
    await untyped.close();
  });

  it("session --typed keeps the contract's tools/list and raw results", async () => {
    const session = new LineClient(bin, ["session", "--typed", "tools.ts"], { cwd: dir, env });
    const list = (await session.request("tools/list")).result as { tools: Record<string, unknown>[] };
    for (const tool of list.tools) expect(Object.keys(tool)).toEqual(["name", "description", "inputSchema"]);
    expect(await session.call("tally", { raw: '{"count":"many"}' })).toMatchObject({
      result: { count: "many" },
    });
    expect(await session.close()).toBe(0);
  });

  it("output schemas come from the schema cache on a second start", async () => {
    const own = scratch({
      "t.ts": "export function point(x: number): { x: number; y: number } { return { x, y: 0 }; }\n",
    });
    const ownEnv = { XDG_CACHE_HOME: join(own, "cache") };
    const listOutput = async () => {
      const client = new LineClient(bin, ["mcp", "t.ts"], { cwd: own, env: ownEnv });
      await client.request("initialize", { protocolVersion: "2025-06-18", capabilities: {} });
      const list = (await client.request("tools/list")).result as { tools: { outputSchema?: unknown }[] };
      await client.close();
      return list.tools[0]?.outputSchema;
    };
    const schema = {
      type: "object",
      properties: { x: { type: "number" }, y: { type: "number" } },
      required: ["x", "y"],
    };
    expect(await listOutput()).toEqual(schema);
    const files = readdirSync(join(own, "cache", "amber")).filter((f) => f.startsWith("schemas-"));
    expect(files).toHaveLength(1);
    const cached = JSON.parse(readFileSync(join(own, "cache", "amber", files[0]!), "utf8"));
    expect(cached.analysis.signatures.point.outputSchema).toEqual(schema);
    // Served from the cache entry: prove it by editing the entry (an analysis would not say this).
    cached.analysis.signatures.point.outputSchema = { ...schema, description: "from the cache" };
    writeFileSync(join(own, "cache", "amber", files[0]!), JSON.stringify(cached));
    expect(await listOutput()).toEqual({ ...schema, description: "from the cache" });
  });
});

describe("compileResultCheck agrees with the SDK's validator", () => {
  const ajv = new AjvJsonSchemaValidator();
  const schemas: Record<string, unknown>[] = [
    FORECAST_SCHEMA,
    { type: "object", properties: {}, additionalProperties: { type: "number" } },
    {
      type: "object",
      properties: {
        kind: { type: "string", enum: ["a", "b"] },
        pair: {
          type: "array",
          prefixItems: [{ type: "string" }, { type: "number" }],
          minItems: 2,
          maxItems: 2,
        },
        flag: { type: "boolean", const: true },
      },
      required: ["kind"],
    },
  ];
  const values: unknown[] = [
    { city: "x", temp: 1, tags: [], at: "2026-11-30T12:00:00Z" },
    { city: "x", temp: 1, tags: [], at: "2026-11-30T12:00:00.123+01:00", note: null },
    { city: "x", temp: 1, tags: [], at: "2026-02-30T12:00:00Z" },
    { city: "x", temp: 1, tags: [], at: "2026-11-30" },
    { city: "x", temp: "1", tags: [], at: "2026-11-30T12:00:00Z" },
    { city: "x", temp: 1, tags: [1], at: "2026-11-30T12:00:00Z" },
    { city: "x", temp: 1, tags: [], at: "2026-11-30T12:00:00Z", note: 3 },
    { a: 1, b: 2.5 },
    { a: "1" },
    {},
    { kind: "a", pair: ["x", 1], flag: true },
    { kind: "c" },
    { kind: "a", pair: ["x"] },
    { kind: "a", pair: ["x", 1, 2] },
    { kind: "a", flag: false },
    null,
    [],
    "text",
  ];
  it("whatever passes here passes the SDK's Ajv, and the ones it rejects are rejected here", () => {
    for (const schema of schemas) {
      const ours = compileResultCheck(schema);
      const theirs = ajv.getValidator(schema);
      for (const value of values) {
        const passed = ours(value) === undefined;
        // prefixItems is a 2020-12 keyword the SDK's draft-07 Ajv ignores: we are stricter there only.
        if (passed) expect(theirs(value).valid, JSON.stringify({ schema, value })).toBe(true);
        if (!theirs(value).valid) expect(passed, JSON.stringify({ schema, value })).toBe(false);
      }
    }
  });
});

describe("which return types get an outputSchema", () => {
  it("JSON-shaped object types do; classes, library objects, toJSON types and unions do not", async () => {
    const dir = scratch({
      "kinds.ts": `
interface Point { x: number; y: number }
class Box { w = 1; area() { return this.w; } }
interface Stamp { at: number; toJSON(): string }
export function partial(): Partial<Point> { return {}; }
export function picked(): Pick<Point, "x"> { return { x: 1 }; }
export function maybeUndefined(): { a: string | undefined } { return { a: undefined }; }
export function box(): Box { return new Box(); }
export function regexp(): RegExp { return /x/; }
export function stamp(): Stamp { return { at: 1, toJSON: () => "1" }; }
export function either(): Point | { z: number } { return { z: 1 }; }
export function empty(): {} { return 5; }
export async function later(): Promise<Point> { return { x: 1, y: 2 }; }
`,
    });
    const { analyzeToolFile } = await import("../../src/cli/typed-schema.ts");
    const names = [
      "partial",
      "picked",
      "maybeUndefined",
      "box",
      "regexp",
      "stamp",
      "either",
      "empty",
      "later",
    ];
    const before = process.env.XDG_CACHE_HOME;
    process.env.XDG_CACHE_HOME = join(dir, "cache");
    const { signatures } = await analyzeToolFile(join(dir, "kinds.ts"), names, "test").finally(() => {
      if (before === undefined) delete process.env.XDG_CACHE_HOME;
      else process.env.XDG_CACHE_HOME = before;
    });
    const outputs = Object.fromEntries(names.map((n) => [n, signatures[n]?.outputSchema]));
    const point = { x: { type: "number" }, y: { type: "number" } };
    expect(outputs).toEqual({
      partial: { type: "object", properties: point },
      picked: { type: "object", properties: { x: { type: "number" } }, required: ["x"] },
      maybeUndefined: { type: "object", properties: { a: { type: "string" } } },
      box: undefined,
      regexp: undefined,
      stamp: undefined,
      either: undefined,
      empty: undefined,
      later: { type: "object", properties: point, required: ["x", "y"] },
    });
  });
});

describe("the analysis reads only the files it may", () => {
  it("a type from a file it may not read is unknown, and an analysis cached without that limit is not reused", async () => {
    const dir = scratch({
      "secret-types.ts": 'export const KEY = "s3cr3t-typed-13";\n',
      "jail/typed.ts": 'export function leak(key: typeof import("../secret-types.ts").KEY) { return key; }\n',
    });
    const { analyzeToolFile } = await import("../../src/cli/typed-schema.ts");
    const before = process.env.XDG_CACHE_HOME;
    process.env.XDG_CACHE_HOME = join(dir, "cache");
    const asked: string[] = [];
    const jailed = (path: string) => {
      asked.push(path);
      return !path.endsWith("secret-types.ts");
    };
    const entry = join(dir, "jail/typed.ts");
    try {
      // Unlimited, the literal type is the schema's (and cached) …
      const open = await analyzeToolFile(entry, ["leak"], "test");
      expect(JSON.stringify(open)).toContain("s3cr3t-typed-13");
      // … limited, neither the compiler nor the cached analysis shows it (nor is that one cached).
      for (let i = 0; i < 2; i++) {
        const limited = await analyzeToolFile(entry, ["leak"], "test", jailed);
        expect(JSON.stringify(limited)).not.toContain("s3cr3t-typed-13");
      }
      expect(asked).toContain(join(dir, "secret-types.ts"));
      expect(JSON.stringify(await analyzeToolFile(entry, ["leak"], "test"))).toContain("s3cr3t-typed-13");
    } finally {
      if (before === undefined) delete process.env.XDG_CACHE_HOME;
      else process.env.XDG_CACHE_HOME = before;
    }
  });
});
