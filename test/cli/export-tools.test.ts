import { mkdirSync, readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  parseToolsManifest,
  scanExportedFunctions,
  validatePrintedTools,
} from "../../src/cli/export-tools.ts";
import { buildTestCli, runCli, scratch } from "./helpers.ts";

const obj = { type: "object" };
const names = (source: string) => scanExportedFunctions(source).map((t) => t.name);
const descriptions = (source: string) => scanExportedFunctions(source).map((t) => t.description);

describe("source scan", () => {
  it("lists export function and export async function in source order", () => {
    expect(scanExportedFunctions("export function a() {}\n  export async function b$_1(x) {}\n")).toEqual([
      { name: "a", description: "Exported function `a`", inputSchema: obj },
      { name: "b$_1", description: "Exported function `b$_1`", inputSchema: obj },
    ]);
  });

  it("ignores const, arrows, default, generators, module.exports and split export lines", () => {
    const source = [
      "export const a = () => 1;",
      "export default function b() {}",
      "export function* c() {}",
      "export async function* d() {}",
      "export function *e() {}",
      "module.exports.f = function f() {};",
      "export",
      "function g() {}",
      "function h() {}",
      "exportfunction i() {}",
    ].join("\n");
    expect(names(source)).toEqual([]);
  });

  it("keeps the first of a duplicate name", () => {
    expect(
      scanExportedFunctions("/** one */\nexport function a() {}\n/** two */\nexport function a() {}\n"),
    ).toEqual([{ name: "a", description: "one", inputSchema: obj }]);
  });

  it("takes JSDoc, star and line comments, dropping empty and @ lines, joined by spaces", () => {
    const source = [
      "/**",
      " * Adds numbers.",
      " *",
      " * @param a first",
      " * Really.",
      " */",
      "export function add() {}",
    ];
    expect(descriptions(source.join("\n"))).toEqual(["Adds numbers. Really."]);
    expect(descriptions("// one\n// two\nexport function f() {}")).toEqual(["one two"]);
    expect(descriptions("/** Single line. */\nexport function f() {}")).toEqual(["Single line."]);
  });

  it("keeps a comment across blank lines, clears it on any other line", () => {
    expect(descriptions("/** kept */\n\n\nexport function f() {}")).toEqual(["kept"]);
    expect(descriptions("/** lost */\nconst x = 1;\nexport function f() {}")).toEqual([
      "Exported function `f`",
    ]);
  });

  it("uses the comment just above when an earlier one is separated by a blank line (the seed's header)", () => {
    const seed =
      "// tools.ts\n\n/** Add two numbers. */\nexport function add({ a, b }) {\n  return a + b;\n}\n";
    expect(descriptions(seed)).toEqual(["Add two numbers."]);
  });

  it("hides exports inside /* */ blocks, including the closing line and an unclosed block", () => {
    expect(
      names(
        "/*\nexport function hidden() {}\n*/ export function alsoHidden() {}\nexport function shown() {}",
      ),
    ).toEqual(["shown"]);
    expect(names("export function a() {}\n/* never closed\nexport function b() {}")).toEqual(["a"]);
    expect(names("/* one line */ export function c() {}\nexport function d() {}")).toEqual(["d"]);
  });

  it("an empty /** */ adds nothing and the export falls back to the default description", () => {
    expect(descriptions("/** */\nexport function f() {}")).toEqual(["Exported function `f`"]);
    expect(descriptions("/** @internal */\nexport function f() {}")).toEqual(["Exported function `f`"]);
  });

  it("handles CRLF line endings", () => {
    expect(scanExportedFunctions("// Hi\r\nexport function f() {}\r\n")).toEqual([
      { name: "f", description: "Hi", inputSchema: obj },
    ]);
  });
});

describe("tools.json manifest", () => {
  it("keeps file order, defaults description and inputSchema, ignores extra fields", () => {
    const text = JSON.stringify({
      extra: 1,
      tools: [
        { name: "b", x: true },
        {
          name: "a",
          description: "A",
          inputSchema: { type: "object", properties: { q: { type: "string" } } },
        },
      ],
    });
    expect(parseToolsManifest(text, "/m/tools.json")).toEqual([
      { name: "b", description: "", inputSchema: obj },
      { name: "a", description: "A", inputSchema: { type: "object", properties: { q: { type: "string" } } } },
    ]);
  });

  it("quotes none of a manifest's text in its parse error (a tools.json may be a link to a file the tool may not read, /proc/self/environ)", () => {
    const parse = (text: string) => () => parseToolsManifest(text, "/m/tools.json");
    expect(parse("PATH=/usr/bin:/secret-token-abc")).toThrow(
      /^Failed to parse tools manifest \/m\/tools.json as JSON: /,
    );
    for (const text of [
      "PATH=/usr/bin:/secret-token-abc",
      '["secret-token-abc",]',
      '{"secret-token-abc" 1}',
    ]) {
      expect(parse(text)).toThrow(/not valid JSON|position/);
      expect(parse(text)).not.toThrow(/secret-token-abc|PATH=/);
    }
  });

  it("rejects bad manifests with the contract's messages", () => {
    expect(() => parseToolsManifest("{", "/m/tools.json")).toThrow("Failed to parse tools manifest");
    expect(() => parseToolsManifest('{"tools":[]}', "/m/tools.json")).toThrow("empty tools array");
    expect(() => parseToolsManifest("{}", "/m/tools.json")).toThrow("empty tools array");
    expect(() => validatePrintedTools(parseToolsManifest('{"tools":[{"name":""}]}', "p"))).toThrow(
      "tool name must be non-empty",
    );
    expect(() =>
      validatePrintedTools(parseToolsManifest('{"tools":[{"name":"a"},{"name":"a"}]}', "p")),
    ).toThrow("duplicate tool name 'a'");
    expect(() =>
      validatePrintedTools(parseToolsManifest('{"tools":[{"name":"a","inputSchema":[]}]}', "p")),
    ).toThrow("inputSchema for 'a' must be a JSON object");
  });
});

describe("amber run --export-tools (black box)", () => {
  let bin: string;
  let cleanup: () => void;
  beforeAll(async () => {
    ({ bin, cleanup } = await buildTestCli());
  });
  afterAll(() => cleanup());

  const SEED = `// tools.ts

/** Add two numbers. */
export function add({ a, b }: { a: number; b: number }) {
  return a + b;
}

/** Read a UTF-8 file. */
export function readText({ path }: { path: string }) {
  return require("node:fs").readFileSync(path, "utf8");
}
`;

  it("prints the seed's tools as pretty JSON with a trailing newline and exit 0", () => {
    const dir = scratch({ "tools.ts": SEED });
    const result = runCli(bin, ["run", "--export-tools", "tools.ts"], { cwd: dir });
    expect(result.status).toBe(0);
    expect(result.stderr).toBe("");
    expect(result.stdout).toBe(
      `${JSON.stringify(
        {
          tools: [
            { name: "add", description: "Add two numbers.", inputSchema: obj },
            { name: "readText", description: "Read a UTF-8 file.", inputSchema: obj },
          ],
        },
        null,
        2,
      )}\n`,
    );
  });

  it("never runs the module", () => {
    const dir = scratch({
      "t.js":
        'require("node:fs").writeFileSync("ran.txt", "x");\nconsole.log("side effect");\nexport function f() {}\n',
    });
    const result = runCli(bin, ["run", "--export-tools", "t.js"], { cwd: dir });
    expect(result.status).toBe(0);
    expect(JSON.parse(result.stdout).tools.map((t: { name: string }) => t.name)).toEqual(["f"]);
    expect(() => readFileSync(join(dir, "ran.txt"))).toThrow();
  });

  it("uses tools.json next to the entry, not the one in the working directory", () => {
    const dir = scratch({
      "tools.json": JSON.stringify({ tools: [{ name: "fromCwd" }] }),
      "sub/t.ts": "export function scanned() {}\n",
      "sub/tools.json": JSON.stringify({ tools: [{ name: "fromManifest", description: "d" }] }),
      "other/t.ts": "export function scanned() {}\n",
    });
    const sub = runCli(bin, ["run", "--export-tools", "sub/t.ts"], { cwd: dir });
    expect(JSON.parse(sub.stdout)).toEqual({
      tools: [{ name: "fromManifest", description: "d", inputSchema: obj }],
    });
    const other = runCli(bin, ["run", "--export-tools", "other/t.ts"], { cwd: dir });
    expect(JSON.parse(other.stdout).tools[0].name).toBe("scanned");
  });

  it("ignores a directory named tools.json", () => {
    const dir = scratch({ "t.ts": "export function f() {}\n" });
    mkdirSync(join(dir, "tools.json"));
    expect(
      JSON.parse(runCli(bin, ["run", "--export-tools", "t.ts"], { cwd: dir }).stdout).tools[0].name,
    ).toBe("f");
  });

  const failures: [string, Record<string, string>, string[], string][] = [
    ["missing entry", {}, ["missing.ts"], "entry file not found:"],
    ["directory entry", { "d/x": "" }, ["d"], "entry must be a file:"],
    [
      "unparsable manifest",
      // A file ends with a newline, which the JSON parser's message quotes: still one stderr line.
      { "t.ts": "", "tools.json": "not json\n" },
      ["t.ts"],
      "Failed to parse tools manifest",
    ],
    ["empty tools array", { "t.ts": "", "tools.json": '{"tools":[]}' }, ["t.ts"], "empty tools array"],
    [
      "empty name",
      { "t.ts": "", "tools.json": '{"tools":[{"name":""}]}' },
      ["t.ts"],
      "tool name must be non-empty",
    ],
    [
      "duplicate name",
      { "t.ts": "", "tools.json": '{"tools":[{"name":"a"},{"name":"a"}]}' },
      ["t.ts"],
      "duplicate tool name",
    ],
    [
      "non-object schema",
      { "t.ts": "", "tools.json": '{"tools":[{"name":"a","inputSchema":"x"}]}' },
      ["t.ts"],
      "must be a JSON object",
    ],
    ["no exports", { "t.ts": "export const a = 1;\n" }, ["t.ts"], "no exported functions found"],
    ["invalid UTF-8", { "t.ts": "\u0000" }, ["t.ts"], "no exported functions found"],
    ["--deny-fs", { "t.ts": "export function f() {}\n" }, ["--deny-fs", "t.ts"], "permission denied"],
    [
      "policy deny_fs without sandbox",
      { "t.ts": "export function f() {}\n", "p.json": '{"permissions":{"deny_fs":true}}' },
      ["--permission-policy", "p.json", "t.ts"],
      "permission denied",
    ],
    [
      "missing policy",
      { "t.ts": "export function f() {}\n" },
      ["--permission-policy", "nope.json", "t.ts"],
      "Failed to read permission policy",
    ],
    [
      "unparsable policy",
      { "t.ts": "export function f() {}\n", "p.json": "not json\n" },
      ["--permission-policy", "p.json", "t.ts"],
      "Failed to parse permission policy",
    ],
  ];
  for (const [label, files, args, message] of failures) {
    it(`fails with "${message}" on ${label}`, () => {
      const dir = scratch(files);
      const result = runCli(bin, ["run", ...args.slice(0, -1), "--export-tools", args.at(-1)!], { cwd: dir });
      expect(result.status).not.toBe(0);
      expect(result.stdout).toBe("");
      const lines = result.stderr.trimEnd().split("\n");
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^error: amber run --export-tools: /);
      expect(lines[0]).toContain(message);
    });
  }

  for (const [text, messages] of [
    ["[]", ["Failed to parse tools manifest", "must be a JSON object"]],
    ['"x"', ["Failed to parse tools manifest", "must be a JSON object"]],
    ["null", ["Failed to parse tools manifest", "must be a JSON object"]],
    ['{"tools":null}', ["Failed to parse tools manifest"]],
    ['{"tools":{}}', ["Failed to parse tools manifest"]],
    ['{"tools":[]}', ["empty tools array"]],
  ] as [string, string[]][]) {
    it(`fails on a tools.json of ${text} with ${messages.join(" + ")}`, () => {
      const dir = scratch({ "t.ts": "export function f() {}\n", "tools.json": text });
      const result = runCli(bin, ["run", "--export-tools", "t.ts"], { cwd: dir });
      expect(result.status).not.toBe(0);
      expect(result.stdout).toBe("");
      expect(result.stderr).toMatch(/^error: amber run --export-tools: [^\n]*\n$/);
      for (const message of messages) expect(result.stderr).toContain(message);
    });
  }

  it("fails with Failed to read on a file that is not UTF-8", () => {
    const dir = scratch({});
    const { writeFileSync } = require("node:fs") as typeof import("node:fs");
    writeFileSync(join(dir, "t.ts"), Buffer.from([0x65, 0xff, 0xfe, 0x0a]));
    const result = runCli(bin, ["run", "--export-tools", "t.ts"], { cwd: dir });
    expect(result.status).not.toBe(0);
    expect(result.stderr).toMatch(/^error: amber run --export-tools: Failed to read/);
  });

  it("--sandbox still reads the entry and its manifest, and audits both reads", () => {
    const dir = scratch({ "t.ts": "", "tools.json": '{"tools":[{"name":"m"}]}' });
    const result = runCli(
      bin,
      ["run", "--sandbox", "--deny-fs", "--audit-log", "logs/a.jsonl", "--export-tools", "t.ts"],
      {
        cwd: dir,
      },
    );
    expect(result.status).toBe(0);
    const lines = readFileSync(join(dir, "logs/a.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => [l.kind, l.action, l.resource, l.decision])).toEqual([
      ["FileSystem", "Read", join(dir, "t.ts"), "Allow"],
      ["FileSystem", "Read", join(dir, "tools.json"), "Allow"],
    ]);
    expect(Number.isNaN(Date.parse(lines[0].ts))).toBe(false);
  });

  it("--deny-fs with allow_read covering the entry succeeds", () => {
    const dir = scratch({
      "t.ts": "export function f() {}\n",
      "p.json": '{"permissions":{"deny_fs":true,"allow_read":["."]}}',
    });
    expect(
      runCli(bin, ["run", "--permission-policy", "p.json", "--export-tools", "t.ts"], { cwd: dir }).status,
    ).toBe(0);
  });

  it("resolves symlinks when checking the entry", () => {
    const dir = scratch({ "real/t.ts": "export function f() {}\n" });
    symlinkSync(join(dir, "real"), join(dir, "link"));
    const result = runCli(bin, ["run", "--deny-fs", "--allow-read", "real", "--export-tools", "link/t.ts"], {
      cwd: dir,
    });
    expect(result.status).toBe(0);
  });

  it("ignores run-only flags and script arguments", () => {
    const dir = scratch({ "t.ts": "export function f() {}\n" });
    const result = runCli(
      bin,
      ["run", "--watch", "--preload", "x.js", "--export-tools", "t.ts", "arg1", "arg2"],
      {
        cwd: dir,
      },
    );
    expect(result.status).toBe(0);
  });

  it("--typed derives schemas, and without it the output is the plain contract", () => {
    const dir = scratch({
      "t.ts": [
        "/**",
        " * Greets.",
        " * @param name who to greet",
        " */",
        "export function greet({ name, times }: { name: string; times?: number }) {}",
      ].join("\n"),
    });
    const plain = JSON.parse(runCli(bin, ["run", "--export-tools", "t.ts"], { cwd: dir }).stdout);
    expect(plain.tools[0].inputSchema).toEqual(obj);
    const typed = JSON.parse(runCli(bin, ["run", "--export-tools", "--typed", "t.ts"], { cwd: dir }).stdout);
    expect(typed.tools[0]).toEqual({
      name: "greet",
      description: "Greets.",
      inputSchema: {
        type: "object",
        properties: { name: { type: "string", description: "who to greet" }, times: { type: "number" } },
        required: ["name"],
      },
    });
  });
});
