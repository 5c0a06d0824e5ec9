import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { describe, expect, it } from "vitest";
import { cleanEnv, cliSuite, frame, LineClient, NODE, runCli } from "./helpers.ts";

const TOOLS = `
/** Add two numbers. */
export function add({ a, b }: { a: number; b: number }) {
  return a + b;
}
/** Echo text back. */
export function echo({ text }: { text: string }) { return text; }
export function fail() { throw new Error("nope"); }
`;

/** Reads Content-Length frames from a LineClient's raw stdout. */
async function readFrame(client: LineClient): Promise<Record<string, unknown>> {
  const header = await client.nextLine();
  expect(header).toMatch(/^Content-Length: \d+\r$/);
  const length = Number(header.slice("Content-Length: ".length, -1));
  expect(await client.nextLine()).toBe("\r");
  // Bodies are single-line JSON, followed by the next header without a newline: read what is buffered.
  const body = await client.nextBody(length);
  return JSON.parse(body) as Record<string, unknown>;
}

describe("amber mcp", () => {
  const { bin, dir } = cliSuite({ "tools.ts": TOOLS });

  it("serves the official SDK client over newline-delimited stdio: list and call", async () => {
    const transport = new StdioClientTransport({
      command: NODE,
      args: [bin, "mcp", "--sandbox", "tools.ts"],
      cwd: dir,
      env: cleanEnv() as Record<string, string>,
      stderr: "pipe",
    });
    const client = new Client({ name: "test", version: "1.0.0" });
    await client.connect(transport);
    expect(client.getServerVersion()).toMatchObject({ name: "amber" });
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(["add", "echo", "fail"]);
    expect(tools[0]).toMatchObject({
      name: "add",
      description: "Add two numbers.",
      inputSchema: { type: "object" },
    });
    const sum = await client.callTool({ name: "add", arguments: { a: 2, b: 3 } });
    expect(sum.content).toEqual([{ type: "text", text: "5" }]);
    expect(sum.isError).toBe(false);
    const text = await client.callTool({ name: "echo", arguments: { text: "hi" } });
    expect(text.content).toEqual([{ type: "text", text: "hi" }]);
    const failed = await client.callTool({ name: "fail", arguments: {} });
    expect(failed).toMatchObject({ isError: true, content: [{ type: "text", text: "nope" }] });
    await expect(client.callTool({ name: "missing", arguments: {} })).rejects.toMatchObject({ code: -32602 });
    await client.close();
  });

  it("speaks Content-Length framing when the client does, 2024-11-05 by default", async () => {
    const client = new LineClient(bin, ["mcp", "tools.ts"], { cwd: dir });
    client.write(frame({ jsonrpc: "2.0", id: 1, method: "initialize", params: {} }));
    expect(await readFrame(client)).toMatchObject({
      id: 1,
      result: { protocolVersion: "2024-11-05", capabilities: { tools: {} }, serverInfo: { name: "amber" } },
    });
    client.write(frame({ jsonrpc: "2.0", method: "notifications/initialized" }));
    client.write(
      frame({
        jsonrpc: "2.0",
        id: 2,
        method: "tools/call",
        params: { name: "add", arguments: { a: 1, b: 2 } },
      }),
    );
    expect(await readFrame(client)).toEqual({
      jsonrpc: "2.0",
      id: 2,
      result: { content: [{ type: "text", text: "3" }], isError: false },
    });
    client.write(frame({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "fail" } }));
    expect(await readFrame(client)).toMatchObject({
      id: 3,
      result: { isError: true, content: [{ type: "text", text: "nope" }] },
    });
    expect(await client.close()).toBe(0);
  });

  it("answers frames sent together in request order, notifications unanswered", () => {
    const input = [
      { id: 1, method: "initialize", params: {} },
      { method: "notifications/initialized" },
      { id: 2, method: "ping" },
      { id: 3, method: "tools/call", params: { name: "add", arguments: { a: 1, b: 2 } } },
      { id: 4, method: "tools/list" },
      { id: 5, method: "resources/list" },
    ]
      .map((m) => frame({ jsonrpc: "2.0", ...m }))
      .join("");
    // Strict order whatever the machine's load: a reply held back longer than the grace (2 s by
    // default; the first call starts the tool host) would leave early, by design.
    const env = { AMBER_REPLY_ORDER_GRACE_MS: "60000" };
    const result = runCli(bin, ["mcp", "--untyped", "tools.ts"], { cwd: dir, input, env });
    expect(result.status).toBe(0);
    const bodies = result.stdout.split(/Content-Length: \d+\r\n\r\n/).slice(1);
    expect(bodies.map((b) => JSON.parse(b).id)).toEqual([1, 2, 3, 4, 5]);
    expect(JSON.parse(bodies[2]!).result).toEqual({ content: [{ type: "text", text: "3" }], isError: false });
  });

  it("accepts a lower-case content-length header", async () => {
    const client = new LineClient(bin, ["mcp", "tools.ts"], { cwd: dir });
    const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" });
    client.write(`content-length: ${body.length}\r\n\r\n${body}`);
    expect(await readFrame(client)).toEqual({ jsonrpc: "2.0", id: 1, result: {} });
    await client.close();
  });

  it("negotiates the version the client asks for and falls back to the newest", async () => {
    const client = new LineClient(bin, ["mcp", "tools.ts"], { cwd: dir });
    for (const version of ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]) {
      const reply = await client.request("initialize", { protocolVersion: version, capabilities: {} });
      expect((reply.result as { protocolVersion: string }).protocolVersion).toBe(version);
    }
    const future = await client.request("initialize", { protocolVersion: "2099-01-01", capabilities: {} });
    expect((future.result as { protocolVersion: string }).protocolVersion).toBe("2025-11-25");
    const discover = await client.request("server/discover", {});
    expect((discover.result as { supportedVersions: string[] }).supportedVersions).toContain("2024-11-05");
    await client.close();
  });

  it("accepts JSON-RPC batches only when 2025-03-26 was negotiated", async () => {
    const pings = `${JSON.stringify([
      { jsonrpc: "2.0", id: 10, method: "ping" },
      { jsonrpc: "2.0", id: 11, method: "ping" },
    ])}\n`;
    const refused = { jsonrpc: "2.0", id: null, error: { code: -32600, message: expect.any(String) } };
    for (const version of [undefined, "2024-11-05", "2025-06-18", "2025-11-25"]) {
      const client = new LineClient(bin, ["mcp", "tools.ts"], { cwd: dir });
      if (version) await client.request("initialize", { protocolVersion: version, capabilities: {} });
      client.write(pings);
      expect(JSON.parse(await client.nextLine()), version).toEqual(refused);
      await client.close();
    }
    const client = new LineClient(bin, ["mcp", "tools.ts"], { cwd: dir });
    await client.request("initialize", { protocolVersion: "2025-03-26", capabilities: {} });
    client.write(pings);
    expect(JSON.parse(await client.nextLine())).toEqual([
      { jsonrpc: "2.0", id: 10, result: {} },
      { jsonrpc: "2.0", id: 11, result: {} },
    ]);
    await client.close();
  });

  it("answers garbage with -32700 and keeps serving", async () => {
    const client = new LineClient(bin, ["mcp", "tools.ts"], { cwd: dir });
    client.write("{not json\n");
    expect(JSON.parse(await client.nextLine())).toMatchObject({ id: null, error: { code: -32700 } });
    expect((await client.request("ping")).result).toEqual({});
    await client.close();
  });

  it("--inspect prints the typed schemas the model sees (--untyped: the contract's)", () => {
    const typed = runCli(bin, ["mcp", "--inspect", "tools.ts"], { cwd: dir });
    expect(typed.status).toBe(0);
    expect(typed.stdout.split("\n")[4]).toMatch(
      /^add\s+Add two numbers\.\s+\{"type":"object","properties":\{"a"/,
    );
  });

  it("--inspect --untyped prints a readable table and exits 0 without starting the tools", () => {
    const result = runCli(bin, ["mcp", "--inspect", "--untyped", "tools.ts"], { cwd: dir });
    expect(result.status).toBe(0);
    const lines = result.stdout.split("\n");
    expect(lines[0]).toBe("Tools in tools.ts (3 tools)");
    expect(lines[2]).toMatch(/^NAME\s+DESCRIPTION\s+INPUT SCHEMA$/);
    expect(lines[4]).toMatch(/^add\s+Add two numbers\.\s+\{"type":"object"\}$/);
    expect(lines[5]).toMatch(/^echo\s+Echo text back\.\s+\{"type":"object"\}$/);
    expect(lines[6]).toMatch(/^fail\s+Exported function `fail`\s+\{"type":"object"\}$/);
  });
});
