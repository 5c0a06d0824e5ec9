/**
 * Positional parameters and typed schemas by default (issue 13): `arguments` spread by parameter
 * name into functions that do not take one object, real JSON Schemas listed by `mcp` and `serve`
 * (`--untyped` for the contract's), arguments checked against them, and the schema cache.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, utimesSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { describe, expect, it } from "vitest";
import { cleanEnv, cliSuite, frame, LineClient, listeningUrl, NODE, runCli, scratch } from "./helpers.ts";

const TOOLS = `
/**
 * Add two numbers.
 * @param a the first addend
 * @param b the second addend
 */
export function add(a: number, b: number) {
  return a + b;
}

/** Greet someone. */
export function greet(name: string, punct = "!") {
  return \`Hello, \${name}\${punct}\`;
}

/** Sum in the single-object form. */
export function sum({ a, b = 1 }: { a: number; b?: number }) {
  return a + b;
}

/** Pick a colour. */
export async function pick(colour: "red" | "blue") {
  return colour;
}

export function odd({ x }: { x: number }, ...more: number[]) {
  return [x, more];
}
`;

describe("tool signatures", () => {
  const { bin, dir } = cliSuite({ "tools.ts": TOOLS });
  const env = { XDG_CACHE_HOME: join(dir, "cache") };

  it("session spreads arguments into positional parameters and keeps the single-object form", async () => {
    const client = new LineClient(bin, ["session", "tools.ts"], { cwd: dir, env });
    expect(await client.call("add", { a: 2, b: 40 })).toMatchObject({ result: 42 });
    expect(await client.call("greet", { name: "Ann" })).toMatchObject({ result: "Hello, Ann!" });
    expect(await client.call("greet", { name: "Bo", punct: "?" })).toMatchObject({ result: "Hello, Bo?" });
    expect(await client.call("sum", { a: 2 })).toMatchObject({ result: 3 });
    expect(await client.call("pick", { colour: "red" })).toMatchObject({ result: "red" });
    // Untyped session: no validation, the tool gets what was sent.
    expect(await client.call("add", { a: 2 })).toMatchObject({ result: null });
    expect(await client.close()).toBe(0);
    expect(client.stderr).toContain("tool `odd`: parameter 1 is a destructuring pattern");
    expect(client.stderr).toContain("tool `odd`: parameter 2 is a rest parameter");
  });

  it("session --typed refuses arguments that break the schema with -32602 naming the parameter", async () => {
    const client = new LineClient(bin, ["session", "--typed", "tools.ts"], { cwd: dir, env });
    const missing = await client.call("add", { a: 2 });
    expect(missing.error).toEqual({
      code: -32602,
      message: "invalid arguments for `add`: missing required argument `b` (number)",
    });
    const wrong = await client.call("sum", { a: "2" });
    expect(wrong.error).toMatchObject({
      code: -32602,
      message: expect.stringContaining("`a` must be number"),
    });
    const outside = await client.call("pick", { colour: "green" });
    expect((outside.error as { message: string }).message).toContain('`colour` must be "red" | "blue"');
    expect(await client.call("add", { a: 1, b: 2 })).toMatchObject({ result: 3 });
    expect(await client.close()).toBe(0);
  });

  it("the SDK client over StdioClientTransport calls add(a, b) and gets 42, with typed schemas listed", async () => {
    const transport = new StdioClientTransport({
      command: NODE,
      args: [bin, "mcp", "--sandbox", "tools.ts"],
      cwd: dir,
      env: cleanEnv(env) as Record<string, string>,
      stderr: "pipe",
    });
    const client = new Client({ name: "test", version: "1.0.0" });
    await client.connect(transport);
    const { tools } = await client.listTools();
    const byName = Object.fromEntries(tools.map((t) => [t.name, t.inputSchema]));
    expect(byName.add).toEqual({
      type: "object",
      properties: {
        a: { type: "number", description: "the first addend" },
        b: { type: "number", description: "the second addend" },
      },
      required: ["a", "b"],
    });
    expect(byName.greet).toEqual({
      type: "object",
      properties: { name: { type: "string" }, punct: { type: "string", default: "!" } },
      required: ["name"],
    });
    expect(byName.sum).toEqual({
      type: "object",
      properties: { a: { type: "number" }, b: { type: "number", default: 1 } },
      required: ["a"],
    });
    expect(byName.pick).toMatchObject({ properties: { colour: { type: "string", enum: ["red", "blue"] } } });
    const result = await client.callTool({ name: "add", arguments: { a: 2, b: 40 } });
    expect(result).toMatchObject({ content: [{ type: "text", text: "42" }], isError: false });
    const bad = await client.callTool({ name: "add", arguments: { a: 2, b: "40" } });
    expect(bad).toMatchObject({
      isError: true,
      content: [
        { type: "text", text: "invalid arguments for `add`: argument `b` must be number, got string" },
      ],
    });
    await client.close();
  });

  it("mcp over Content-Length framing calls positional tools; --untyped lists the contract's schema", async () => {
    const client = new LineClient(bin, ["mcp", "--untyped", "tools.ts"], { cwd: dir, env });
    client.write(frame({ jsonrpc: "2.0", id: 1, method: "tools/list" }));
    client.write(
      frame({
        jsonrpc: "2.0",
        id: 2,
        method: "tools/call",
        params: { name: "greet", arguments: { name: "Cy" } },
      }),
    );
    const bodies: Record<string, unknown>[] = [];
    while (bodies.length < 2) {
      const header = await client.nextLine();
      const length = Number(/^Content-Length: (\d+)\r$/.exec(header)![1]);
      expect(await client.nextLine()).toBe("\r");
      bodies.push(JSON.parse(await client.nextBody(length)));
    }
    const list = bodies[0]!.result as { tools: { inputSchema: unknown }[] };
    for (const tool of list.tools) expect(tool.inputSchema).toEqual({ type: "object" });
    expect(bodies[1]!.result).toEqual({ content: [{ type: "text", text: "Hello, Cy!" }], isError: false });
    client.child.stdin.end();
    expect(await client.exited).toBe(0);
  });

  it("run --export-tools stays the plain contract without --typed and types positional tools with it", () => {
    const plain = JSON.parse(runCli(bin, ["run", "--export-tools", "tools.ts"], { cwd: dir }).stdout);
    for (const tool of plain.tools) expect(tool.inputSchema).toEqual({ type: "object" });
    const typed = JSON.parse(
      runCli(bin, ["run", "--export-tools", "--typed", "tools.ts"], { cwd: dir }).stdout,
    );
    expect(typed.tools[0].inputSchema.required).toEqual(["a", "b"]);
  });

  it("caches extracted schemas and compiled bundles under $XDG_CACHE_HOME/amber, not in the shared temp dir", async () => {
    const own = scratch({ "t.ts": "export function twice(n: number) { return 2 * n; }\n" });
    // Old enough for its bundle to be cached (fresh files are not: timestamps can be coarse).
    utimesSync(join(own, "t.ts"), new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
    const ownEnv = { XDG_CACHE_HOME: join(own, "cache") };
    const first = new LineClient(bin, ["session", "t.ts"], { cwd: own, env: ownEnv });
    expect(await first.call("twice", { n: 4 })).toMatchObject({ result: 8 });
    await first.close();
    const files = readdirSync(join(own, "cache", "amber"));
    expect(files.filter((f) => f.startsWith("schemas-"))).toHaveLength(1);
    expect(readdirSync(join(own, "cache", "amber", "bundles"))).toHaveLength(1);
    const second = new LineClient(bin, ["session", "t.ts"], { cwd: own, env: ownEnv });
    expect(await second.call("twice", { n: 5 })).toMatchObject({ result: 10 });
    await second.close();
    expect(readdirSync(join(own, "cache", "amber"))).toEqual(files);
  });

  it("serve lists typed schemas, spreads positional arguments and refuses bad ones with 400", async () => {
    const child: ChildProcess = spawn(NODE, [bin, "serve", "--port", "0", "tools.ts"], {
      cwd: dir,
      env: cleanEnv(env),
    });
    try {
      const base = await listeningUrl(child);
      const sum = await fetch(`${base}/add`, { method: "POST", body: '{"a":2,"b":40}' });
      expect(await sum.json()).toBe(42);
      const bad = await fetch(`${base}/add`, { method: "POST", body: '{"a":2}' });
      expect(bad.status).toBe(400);
      expect(await bad.json()).toEqual({
        error: {
          code: "invalid_arguments",
          message: "invalid arguments for `add`: missing required argument `b` (number)",
        },
      });
      const listed = (await (await fetch(`${base}/tools`)).json()) as {
        tools: { inputSchema: { required?: string[] } }[];
      };
      expect(listed.tools[0]!.inputSchema.required).toEqual(["a", "b"]);
      const client = new Client({ name: "test", version: "1.0.0" });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)));
      const result = await client.callTool({ name: "greet", arguments: { name: "Di" } });
      expect(result.content).toEqual([{ type: "text", text: "Hello, Di!" }]);
      await client.close();
    } finally {
      child.kill("SIGTERM");
    }
  });
});
