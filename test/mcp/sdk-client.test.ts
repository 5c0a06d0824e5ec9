import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFixtureHttp } from "./fixtures/server.ts";

const ROOT = join(import.meta.dirname, "../..");
const NODE = join(ROOT, "node_modules/.bin/node");
const FIXTURE = join(import.meta.dirname, "fixtures/server.ts");

/** The same checks against any connected SDK client. */
async function exerciseClient(client: Client) {
  expect(client.getServerVersion()).toMatchObject({ name: "amba-mcp-fixture", version: "1.0.0" });
  expect(client.getServerCapabilities()).toMatchObject({ tools: {} });
  expect(client.getInstructions()).toBe("A test server for the Amba MCP protocol core.");
  await client.ping();

  const { tools } = await client.listTools();
  expect(tools.map((t) => t.name).slice(0, 3)).toEqual(["echo", "add", "whoami"]);
  expect(tools[0]).toMatchObject({ title: "Echo", annotations: { readOnlyHint: true } });

  expect(await client.callTool({ name: "echo", arguments: { text: "héllo" } })).toEqual({
    content: [{ type: "text", text: "héllo" }],
    isError: false,
  });
  // add declares an outputSchema: the SDK validates structuredContent against it.
  expect(await client.callTool({ name: "add", arguments: { a: 2, b: 3 } })).toEqual({
    content: [{ type: "text", text: '{"sum":5}' }],
    isError: false,
    structuredContent: { sum: 5 },
  });
  expect(await client.callTool({ name: "whoami", arguments: {} })).toMatchObject({
    structuredContent: { protocolVersion: "2025-11-25" },
  });
  expect(await client.callTool({ name: "fail", arguments: {} })).toEqual({
    content: [{ type: "text", text: "this tool always fails" }],
    isError: true,
  });
  await expect(client.callTool({ name: "no_such_tool", arguments: {} })).rejects.toMatchObject({
    code: -32602,
    message: expect.stringContaining("Unknown tool: no_such_tool"),
  });
  await expect(client.callTool({ name: "crash", arguments: {} })).rejects.toMatchObject({ code: -32603 });
  expect(await client.listPrompts()).toEqual({ prompts: [] });
  expect(await client.listResources()).toEqual({ resources: [] });
  expect(await client.listResourceTemplates()).toEqual({ resourceTemplates: [] });
}

describe("official SDK client over Streamable HTTP", () => {
  let server: Awaited<ReturnType<typeof startFixtureHttp>>;
  beforeAll(async () => {
    server = await startFixtureHttp();
  });
  afterAll(() => server.close());

  it("negotiates 2025-11-25 and uses every tool feature", async () => {
    const client = new Client({ name: "vitest", version: "1.0.0" });
    const transport = new StreamableHTTPClientTransport(new URL(server.mcpUrl));
    await client.connect(transport);
    expect(transport.protocolVersion).toBe("2025-11-25");
    expect(transport.sessionId).toBeUndefined();
    await exerciseClient(client);
    await client.close();
  });

  it("answers GET with 405 so the SDK does not wait for an SSE stream", async () => {
    const response = await fetch(server.mcpUrl, { headers: { accept: "text/event-stream" } });
    expect(response.status).toBe(405);
    expect(response.headers.get("allow")).toBe("POST");
  });
});

describe("official SDK client over stdio (newline-delimited JSON)", () => {
  it("spawns the fixture and uses every tool feature", async () => {
    const client = new Client({ name: "vitest", version: "1.0.0" });
    const transport = new StdioClientTransport({ command: NODE, args: [FIXTURE, "--stdio"], stderr: "pipe" });
    await client.connect(transport);
    await exerciseClient(client);
    await client.close();
  });
});

/** A minimal Content-Length client written independently of the core's decoder. */
class RawFramedClient {
  private buffer = Buffer.alloc(0);
  private waiters: ((message: unknown) => void)[] = [];
  private readonly child: ChildProcessWithoutNullStreams;

  constructor() {
    this.child = spawn(NODE, [FIXTURE, "--stdio"]);
    this.child.stdout.on("data", (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      for (;;) {
        const end = this.buffer.indexOf("\r\n\r\n");
        if (end === -1) return;
        const match = /Content-Length: (\d+)/i.exec(this.buffer.subarray(0, end).toString());
        if (!match) throw new Error(`bad frame header: ${this.buffer.toString()}`);
        const length = Number(match[1]);
        if (this.buffer.length < end + 4 + length) return;
        const body = this.buffer.subarray(end + 4, end + 4 + length).toString("utf8");
        this.buffer = this.buffer.subarray(end + 4 + length);
        this.waiters.shift()?.(JSON.parse(body));
      }
    });
  }

  send(message: unknown, header = "Content-Length"): void {
    const body = Buffer.from(JSON.stringify(message));
    this.child.stdin.write(Buffer.concat([Buffer.from(`${header}: ${body.length}\r\n\r\n`), body]));
  }

  next(): Promise<unknown> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  async close(): Promise<number | null> {
    this.child.stdin.end();
    return new Promise((resolve) => this.child.on("close", resolve));
  }
}

describe("raw Content-Length client over stdio", () => {
  it("gets Content-Length framed answers, notifications unanswered", async () => {
    const client = new RawFramedClient();
    client.send({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2024-11-05" } });
    expect(await client.next()).toMatchObject({ id: 1, result: { protocolVersion: "2024-11-05" } });
    client.send({ jsonrpc: "2.0", method: "notifications/initialized" }, "content-length");
    client.send({
      jsonrpc: "2.0",
      id: 2,
      method: "tools/call",
      params: { name: "echo", arguments: { text: "✓ ünï" } },
    });
    expect(await client.next()).toEqual({
      jsonrpc: "2.0",
      id: 2,
      result: { content: [{ type: "text", text: "✓ ünï" }], isError: false },
    });
    client.send({
      jsonrpc: "2.0",
      id: 3,
      method: "tools/call",
      params: { name: "add", arguments: { a: 1, b: 2 } },
    });
    // 2024-11-05 has no structuredContent.
    expect(await client.next()).toEqual({
      jsonrpc: "2.0",
      id: 3,
      result: { content: [{ type: "text", text: '{"sum":3}' }], isError: false },
    });
    expect(await client.close()).toBe(0);
  });
});
