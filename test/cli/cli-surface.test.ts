/**
 * The command line around the contract's three commands (audit 2026-12-01, third pass): the original
 * runtime's short `-i` for `mcp --inspect`, its `--policy` alias and `version` command, usage errors
 * for what it refused (a second file, an unknown short option), and `amber run <file>` — the seed's
 * "same runtime … as `amber run`", without which a file using `amber:mcp`'s `startStdio()` could not
 * be served at all.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { beforeAll, describe, expect, it } from "vitest";
import { buildTestCli, cleanEnv, LineClient, NODE, runCli, scratch } from "./helpers.ts";

const TOOLS = `
import { readFileSync } from "node:fs";
/** Add two numbers. */
export function add({ a, b }: { a: number; b: number }) {
  return a + b;
}
/** Read a UTF-8 file. */
export function readText({ path }: { path: string }) {
  return readFileSync(path, "utf8");
}
`;

describe("amber command line", () => {
  let bin: string;
  beforeAll(async () => {
    ({ bin } = await buildTestCli());
  });

  it("mcp -i is --inspect (the original's short flag)", () => {
    const dir = scratch({ "tools.ts": TOOLS });
    const long = runCli(bin, ["mcp", "--inspect", "tools.ts"], { cwd: dir });
    const short = runCli(bin, ["mcp", "-i", "tools.ts"], { cwd: dir });
    expect(long.status).toBe(0);
    expect(short).toEqual(long);
    expect(short.stdout).toContain("Add two numbers.");
  });

  it("refuses an unknown short option and a second file as usage errors (exit 2, one stderr line)", () => {
    const dir = scratch({ "tools.ts": TOOLS, "other.ts": TOOLS });
    for (const [args, text] of [
      [["session", "-x", "tools.ts"], "error: amber session: unknown option -x"],
      [["mcp", "tools.ts", "-q"], "error: amber mcp: unknown option -q"],
      [["session", "tools.ts", "other.ts"], "error: amber session: unexpected argument 'other.ts'"],
      [["mcp", "tools.ts", "other.ts"], "error: amber mcp: unexpected argument 'other.ts'"],
      // Names Object.prototype has are no options (`--constructor` took the file as its value).
      [["session", "--constructor", "tools.ts"], "error: amber session: unknown option --constructor"],
      [["toString"], "error: unknown command 'toString' (try `amber --help`)"],
      // An empty value is none: it read as no audit log at all, and as `--timeout 0` (never).
      [["session", "--audit-log=", "tools.ts"], "error: amber session: --audit-log needs a value"],
      [["mcp", "--timeout=", "tools.ts"], "error: amber mcp: --timeout needs a value"],
      [
        ["session", "--permission-policy=", "tools.ts"],
        "error: amber session: --permission-policy needs a value",
      ],
    ] as const) {
      const result = runCli(bin, [...args], { cwd: dir });
      expect({ args, ...result }).toEqual({ args, status: 2, stdout: "", stderr: `${text}\n` });
    }
    // `--` still ends the options: a file whose name starts with a dash.
    writeFileSync(join(dir, "-dash.ts"), TOOLS);
    const dashed = runCli(bin, ["session", "--", "-dash.ts"], {
      cwd: dir,
      input:
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}\n',
    });
    expect(dashed).toMatchObject({ status: 0, stdout: '{"jsonrpc":"2.0","id":1,"result":3}\n' });
  });

  it("--policy is --permission-policy (the original's alias), in both forms", () => {
    const dir = scratch({
      "tools.ts": TOOLS,
      "data/x.txt": "x",
      "secret.txt": "s",
      "policy.json": JSON.stringify({ permissions: { deny_fs: true, allow_read: ["data"] } }),
    });
    for (const flag of [["--policy", "policy.json"], ["--policy=policy.json"]]) {
      const result = runCli(bin, ["session", ...flag, "tools.ts"], {
        cwd: dir,
        input: [
          '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"readText","arguments":{"path":"data/x.txt"}}}',
          '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"readText","arguments":{"path":"secret.txt"}}}',
          "",
        ].join("\n"),
      });
      expect(result.status).toBe(0);
      const [first, second] = result.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l));
      expect(first).toEqual({ jsonrpc: "2.0", id: 1, result: "x" });
      expect(second.error).toMatchObject({
        code: -32000,
        message: expect.stringMatching(/^permission denied: /),
      });
    }
  });

  it("--allow-listen / allow_listen grant listening only (the original's flag and policy key)", () => {
    const NET = `import net from "node:net";
export function listen() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on("error", (e) => reject(e));
    server.listen(0, "127.0.0.1", () => { server.close(); resolve("listening"); });
  });
}
export function connect() {
  return new Promise((resolve, reject) => {
    const socket = net.connect(1, "127.0.0.1");
    socket.on("error", (e) => reject(e));
    socket.on("connect", () => { socket.destroy(); resolve("connected"); });
  });
}
`;
    const dir = scratch({
      "tools.ts": NET,
      "policy.json": JSON.stringify({ permissions: { deny_net: true, allow_listen: ["127.0.0.1"] } }),
    });
    const input = [
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"listen","arguments":{}}}',
      '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"connect","arguments":{}}}',
      "",
    ].join("\n");
    for (const flags of [
      ["--sandbox", "--allow-listen", "127.0.0.1"],
      ["--sandbox", "--allow-listen=127.0.0.1"],
      ["--permission-policy", "policy.json"],
    ]) {
      const result = runCli(bin, ["session", ...flags, "tools.ts"], { cwd: dir, input });
      expect({ flags, status: result.status }).toEqual({ flags, status: 0 });
      const [listened, connected] = result.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l));
      expect({ flags, listened }).toEqual({
        flags,
        listened: { jsonrpc: "2.0", id: 1, result: "listening" },
      });
      expect({ flags, connected: connected.error }).toEqual({
        flags,
        connected: { code: -32000, message: "permission denied: Network Connect 127.0.0.1:1" },
      });
    }
    // Without the grant the listen is refused as before.
    const denied = runCli(bin, ["session", "--sandbox", "tools.ts"], { cwd: dir, input });
    expect(JSON.parse(denied.stdout.split("\n")[0]!).error.message).toMatch(
      /^permission denied: Network Listen 127\.0\.0\.1:/,
    );
  });

  it("amber version / --version / -V print the version", () => {
    const outputs = [["version"], ["--version"], ["-V"]].map((args) => runCli(bin, args));
    for (const out of outputs) expect(out).toMatchObject({ status: 0, stderr: "" });
    expect(outputs[0]!.stdout).toMatch(/^amber \d+\.\d+\.\d+\S*\n$/);
    expect(new Set(outputs.map((o) => o.stdout)).size).toBe(1);
  });

  it("amber run <file> runs a TypeScript script with its arguments and exit code", () => {
    const dir = scratch({
      "lib.ts": 'export const greet = (name: string): string => "hello " + name;\n',
      "script.ts": `import { greet } from "./lib.ts";
const [, , ...rest]: string[] = process.argv;
const wait = await Promise.resolve(rest.length);
console.log(JSON.stringify({ out: greet(rest[0] ?? "nobody"), rest, wait, meta: import.meta.filename }));
console.error("to stderr");
process.exitCode = 3;
`,
    });
    const result = runCli(bin, ["run", "script.ts", "world", "--", "--help"], { cwd: dir });
    expect(result.stderr).toBe("to stderr\n");
    expect(result.status).toBe(3);
    expect(JSON.parse(result.stdout)).toEqual({
      out: "hello world",
      rest: ["world", "--help"],
      wait: 2,
      meta: join(dir, "script.ts"),
    });
  });

  it("amber run <file>: a throw ends it with exit 1 and its message on stderr; a missing file is exit 1 too", () => {
    const dir = scratch({ "boom.ts": 'throw new Error("boom");\n' });
    expect(runCli(bin, ["run", "boom.ts"], { cwd: dir })).toMatchObject({ status: 1, stdout: "" });
    expect(runCli(bin, ["run", "boom.ts"], { cwd: dir }).stderr).toMatch(/boom/);
    expect(runCli(bin, ["run", "nope.ts"], { cwd: dir })).toEqual({
      status: 1,
      stdout: "",
      stderr: "error: amber run: entry file not found: nope.ts\n",
    });
  });

  it("amber run <file> with permission flags is refused, never run unconfined", () => {
    const dir = scratch({ "script.ts": 'console.log("ran");\n' });
    const result = runCli(bin, ["run", "--sandbox", "script.ts"], { cwd: dir });
    expect(result.status).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toMatch(/^error: amber run: .*--sandbox.*\n$/);
    // One flag "applies", several "apply" (the message read "--sandbox apply to …").
    expect(result.stderr).toContain("--sandbox applies only to `run --export-tools`");
    const two = runCli(bin, ["run", "--sandbox", "--allow-read", ".", "script.ts"], { cwd: dir });
    expect(two.status).toBe(2);
    expect(two.stderr).toMatch(/--sandbox, --allow-read apply only to `run --export-tools`/);
  });

  it("amber run serves an amber:mcp server's startStdio() to the SDK client", async () => {
    const dir = scratch({
      "server.ts": `import { McpServer } from "amber:mcp";
const server = new McpServer({ name: "demo", version: "1.2.3" });
server.tool("echo", "Echo text", { type: "object", properties: { text: { type: "string" } } },
  async ({ text }: { text: string }) => ({ content: [{ type: "text", text: "echo: " + text }] }));
await server.startStdio();
`,
    });
    const client = new Client({ name: "test", version: "1.0.0" });
    await client.connect(
      new StdioClientTransport({
        command: NODE,
        args: [bin, "run", "server.ts"],
        cwd: dir,
        env: cleanEnv() as Record<string, string>,
        stderr: "pipe",
      }),
    );
    expect(client.getServerVersion()).toMatchObject({ name: "demo", version: "1.2.3" });
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["echo"]);
    expect(await client.callTool({ name: "echo", arguments: { text: "hi" } })).toEqual({
      content: [{ type: "text", text: "echo: hi" }],
      isError: false,
    });
    await client.close();
  });

  it("a session still takes the file anywhere among the flags", async () => {
    const dir = scratch({ "tools.ts": TOOLS });
    const session = new LineClient(bin, ["session", "tools.ts", "--isolate-per-call"], { cwd: dir });
    expect(await session.call("add", { a: 2, b: 3 })).toEqual({ jsonrpc: "2.0", id: 1, result: 5 });
    expect(await session.close()).toBe(0);
  });
});
