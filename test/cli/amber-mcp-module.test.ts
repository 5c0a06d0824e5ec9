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
