/**
 * `amber:mcp` as the CLI contract lists it: `new McpServer({name, version})`, `.tool(name,
 * description, schema, handler)`, `handleMessage`, `connectLocal()` → an in-memory client, and
 * `startStdio()` — the last one driven by the official SDK client over a real process's stdio.
 */
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { beforeAll, describe, expect, it } from "vitest";
import { buildTestCli, cleanEnv, LineClient, NODE, scratch } from "./helpers.ts";

/** The server definition, shared by the tool file (`amber:mcp`) and the stdio script (the bundle). */
const SERVER = `
const server = new McpServer({ name: "demo", version: "1.2.3" })
  .tool("echo", "Echo text", { type: "object", properties: { text: { type: "string" } } },
    async ({ text }) => ({ content: [{ type: "text", text: "echo: " + text }] }))
  .tool("shaped", "Returns an MCP result with structured content", { type: "object" },
    () => ({ content: [{ type: "text", text: '{"n":1}' }], structuredContent: { n: 1 } }))
  .tool("plain", "Returns a plain object", { type: "object" }, () => ({ n: 2 }))
  .tool("short", "Registered without a schema", ({ x }) => x * 3);
`;

describe("amber:mcp", () => {
  let bin: string;
  beforeAll(async () => {
    ({ bin } = await buildTestCli());
  });

  it("connectLocal()'s client also takes the SDK's callTool({ name, arguments }); .tool() without a schema", async () => {
    const dir = scratch({
      "tools.ts": `import { McpServer } from "amber:mcp";\n${SERVER}
/** In memory, both call styles. */
export async function local() {
  const client = server.connectLocal();
  return {
    positional: await client.callTool("echo", { text: "a" }),
    sdk: await client.callTool({ name: "echo", arguments: { text: "b" } }),
    short: await client.callTool({ name: "short", arguments: { x: 2 } }),
    listed: (await client.listTools()).tools.find((t) => t.name === "short"),
  };
}
`,
    });
    const session = new LineClient(bin, ["session", "tools.ts"], { cwd: dir });
    expect((await session.call("local")).result).toEqual({
      positional: { content: [{ type: "text", text: "echo: a" }], isError: false },
      sdk: { content: [{ type: "text", text: "echo: b" }], isError: false },
      short: { content: [{ type: "text", text: "6" }], isError: false },
      listed: { name: "short", description: "Registered without a schema", inputSchema: { type: "object" } },
    });
    expect(await session.close()).toBe(0);
  });

  it("startStdio() serves the SDK client; a handler's own MCP result is never echoed as structuredContent", async () => {
    const module = join(dirname(bin), "amber-mcp.mjs");
    const dir = scratch();
    writeFileSync(
      join(dir, "server.mjs"),
      `import { McpServer } from ${JSON.stringify(module)};\n${SERVER}\nawait server.startStdio();\n`,
    );
    const client = new Client({ name: "test", version: "1.0.0" });
    await client.connect(
      new StdioClientTransport({
        command: NODE,
        args: ["server.mjs"],
        cwd: dir,
        env: cleanEnv() as Record<string, string>,
        stderr: "pipe",
      }),
    );
    expect(client.getServerVersion()).toMatchObject({ name: "demo", version: "1.2.3" });
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["echo", "shaped", "plain", "short"]);
    expect(await client.callTool({ name: "echo", arguments: { text: "hi" } })).toEqual({
      content: [{ type: "text", text: "echo: hi" }],
      isError: false,
    });
    expect(await client.callTool({ name: "shaped", arguments: {} })).toEqual({
      content: [{ type: "text", text: '{"n":1}' }],
      structuredContent: { n: 1 },
      isError: false,
    });
    expect(await client.callTool({ name: "plain", arguments: {} })).toEqual({
      content: [{ type: "text", text: '{"n":2}' }],
      structuredContent: { n: 2 },
      isError: false,
    });
    await expect(client.callTool({ name: "missing", arguments: {} })).rejects.toMatchObject({ code: -32602 });
    await client.close();
  });
});

describe("amber:mcp as the original runtime's McpServer took it", () => {
  it("answers initialize without a version, wraps a bare property map, takes prompt arguments and the resource forms", async () => {
    const { bin } = await buildTestCli();
    const dir = scratch({
      "tools.ts": `import { McpServer } from "amber:mcp";
const server = new McpServer({ name: "demo", version: "1.0.0" })
  .tool("add", "Add", { a: { type: "number" }, b: { type: "number" } }, ({ a, b }) => a + b)
  .tool("opts", { description: "From options", inputSchema: { type: "object", properties: { x: { type: "string" } } } },
    ({ x }) => "x=" + x)
  .resource("config://app", "App config", async () => ({ debug: true }))
  .resource("readme", "file:///readme.md", "The readme", () => "# hi", "text/markdown")
  .prompt("greet", "Greeting", [{ name: "who", required: true }], ({ who }) => ({
    messages: [{ role: "user", content: { type: "text", text: "hi " + who } }],
  }))
  .prompt("short", () => "just text");
const ask = (id, method, params) => server.handleMessage({ jsonrpc: "2.0", id, method, params });
export async function run() {
  return {
    init: (await server.handleMessage('{"jsonrpc":"2.0","id":1,"method":"initialize"}')).result.protocolVersion,
    tools: (await ask(2, "tools/list")).result.tools,
    opts: (await ask(3, "tools/call", { name: "opts", arguments: { x: "y" } })).result,
    resources: (await ask(4, "resources/list")).result.resources,
    read: (await ask(5, "resources/read", { uri: "file:///readme.md" })).result,
    prompts: (await ask(6, "prompts/list")).result.prompts,
    greet: (await ask(7, "prompts/get", { name: "greet", arguments: { who: "bob" } })).result,
    short: (await ask(8, "prompts/get", { name: "short" })).result,
    local: await (async () => {
      const client = server.connectLocal();
      return {
        init: (await client.initialize()).protocolVersion,
        ping: await client.ping(),
        resources: (await client.listResources()).resources.length,
        read: await client.readResource("config://app"),
        prompts: (await client.listPrompts()).prompts.length,
        prompt: await client.getPrompt("short"),
      };
    })(),
  };
}
`,
    });
    const session = new LineClient(bin, ["session", "tools.ts"], { cwd: dir });
    const { result } = (await session.call("run")) as { result: Record<string, unknown> };
    expect(result.init).toBe("2024-11-05");
    expect(result.tools).toEqual([
      {
        name: "add",
        description: "Add",
        inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } } },
      },
      {
        name: "opts",
        description: "From options",
        inputSchema: { type: "object", properties: { x: { type: "string" } } },
      },
    ]);
    expect(result.opts).toEqual({ content: [{ type: "text", text: "x=y" }], isError: false });
    expect(result.resources).toEqual([
      { uri: "config://app", name: "App config", description: "", mimeType: "text/plain" },
      { uri: "file:///readme.md", name: "readme", description: "The readme", mimeType: "text/markdown" },
    ]);
    expect(result.read).toEqual({
      contents: [{ uri: "file:///readme.md", mimeType: "text/markdown", text: "# hi" }],
    });
    expect(result.prompts).toEqual([
      { name: "greet", description: "Greeting", arguments: [{ name: "who", required: true }] },
      { name: "short", description: "", arguments: [] },
    ]);
    expect(result.greet).toEqual({
      description: "Greeting",
      messages: [{ role: "user", content: { type: "text", text: "hi bob" } }],
    });
    expect(result.short).toEqual({
      description: "",
      messages: [{ role: "user", content: { type: "text", text: "just text" } }],
    });
    expect(result.local).toEqual({
      init: "2024-11-05",
      ping: {},
      resources: 2,
      read: { contents: [{ uri: "config://app", mimeType: "text/plain", text: '{"debug":true}' }] },
      prompts: 2,
      prompt: result.short,
    });
    expect(await session.close()).toBe(0);
  });
});
