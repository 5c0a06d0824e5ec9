/**
 * Tool exports and parameters named after JavaScript object machinery (`then`, `__proto__`,
 * `constructor`, …): each one a regression test of a hole a red-team pass found (each failed before
 * its fix).
 */
import { describe, expect, it } from "vitest";
import { cliSuite, runCli } from "./helpers.ts";

const THEN = `
export function then(x: string) { return "then:" + x; }
export function ok(x: string) { return "ok:" + x; }
`;

const TOOLS = `
export function __proto__(a: string) { return "proto:" + a; }
export function ok(x: string) { return "ok:" + x; }
export function pos(constructor?: string, __proto__?: string) { return [typeof constructor, __proto__ ?? null]; }
export function obj(o: { __proto__: string; title: string }) { return Object.keys(o); }
/**
 * @param opts.constructor who builds it
 */
export function docs(opts: { name: string }) { return opts.name; }
`;

const { bin, dir } = cliSuite({ "tools.ts": TOOLS, "then.ts": THEN });

const session = (calls: [string, unknown][], flags: string[] = [], file = "tools.ts") => {
  const lines = [
    { jsonrpc: "2.0", id: 0, method: "initialize", params: {} },
    ...calls.map(([name, args], i) => ({
      jsonrpc: "2.0",
      id: i + 1,
      method: "tools/call",
      params: { name, arguments: args },
    })),
  ];
  const run = runCli(bin, ["session", ...flags, file], {
    cwd: dir,
    input: `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`,
  });
  expect(run.status, run.stderr).toBe(0);
  const answers = run.stdout
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as { id: number; result?: unknown; error?: { message: string } });
  return answers.slice(1);
};

describe("amber tool names and parameters named after object machinery", () => {
  it("serves a module that exports `then` (the module was awaited as a thenable: every call hung)", () => {
    const answers = session(
      [
        ["then", { x: "T" }],
        ["ok", { x: "K" }],
      ],
      [],
      "then.ts",
    );
    expect(answers.map((a) => a.result)).toEqual(["then:T", "ok:K"]);
  }, 60_000);

  it("maps the positional parameters of an export named `__proto__` (it received the whole arguments object)", () => {
    expect(session([["__proto__", { a: "A" }]])[0]?.result).toBe("proto:A");
  }, 60_000);

  it("lists parameters and properties named `__proto__` in typed schemas (they set the schema's prototype and vanished)", () => {
    const out = runCli(bin, ["run", "--export-tools", "--typed", "tools.ts"], { cwd: dir });
    expect(out.status, out.stderr).toBe(0);
    const tools = (
      JSON.parse(out.stdout) as { tools: { name: string; inputSchema: Record<string, unknown> }[] }
    ).tools;
    const schema = (name: string) => tools.find((t) => t.name === name)?.inputSchema;
    expect(schema("pos")?.properties).toEqual(
      JSON.parse('{"constructor":{"type":"string"},"__proto__":{"type":"string"}}'),
    );
    expect(Object.keys(schema("obj")?.properties as object)).toEqual(["__proto__", "title"]);
    expect(schema("obj")?.required).toEqual(["__proto__", "title"]);
    // A `@param` of a property the type does not have describes nothing.
    expect(JSON.stringify(schema("docs"))).not.toContain("who builds it");
    const typed = session(
      [
        ["pos", {}],
        ["pos", JSON.parse('{"__proto__":"P"}')],
        ["obj", { title: "t" }],
        ["obj", JSON.parse('{"__proto__":"p","title":"t"}')],
      ],
      ["--typed"],
    );
    expect(typed[0]?.result).toEqual(["undefined", null]);
    expect(typed[1]?.result).toEqual(["undefined", "P"]);
    expect(typed[2]?.error?.message).toContain("missing required argument `__proto__`");
    expect(typed[3]?.result).toEqual(["__proto__", "title"]);
  }, 60_000);
});
