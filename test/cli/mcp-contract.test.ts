/**
 * `amber mcp` through the official SDK client (StdioClientTransport, which negotiates the newest
 * version) against the contract's exact shapes: `tools/call` → `{content:[{type:"text", text}],
 * isError}`, `structuredContent` only next to a declared `outputSchema` (typed, the default; ours),
 * and under `--untyped` `tools/list` exactly as `run --export-tools` prints it.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { describe, expect, it } from "vitest";
import { cleanEnv, cliSuite, NODE, runCli } from "./helpers.ts";

const TOOLS = `// tools.ts

/** Add two numbers. */
export function add({ a, b }: { a: number; b: number }) {
  return a + b;
}

/** Read a UTF-8 file. */
export function readText({ path }: { path: string }) {
  return require("node:fs").readFileSync(path, "utf8");
}

/** Counts, as an object (its inferred return type is an object type). */
export function stats({ items }: { items: string[] }): { count: number; first: string | null } {
  return { count: items.length, first: items[0] ?? null };
}

/** Nothing. */
export async function nothing() {}

/** An object typed \`any\`: no outputSchema. */
export function loose() {
  return JSON.parse('{"k":1}');
}

/** Fails. */
export function fails() {
  throw new Error("it broke");
}
`;

describe("amber mcp against the contract's shapes (SDK client)", () => {
  const { bin, dir } = cliSuite({ "tools.ts": TOOLS, "note.txt": "hello" });

  async function connect(...flags: string[]): Promise<Client> {
    const client = new Client({ name: "contract", version: "1.0.0" });
    await client.connect(
      new StdioClientTransport({
        command: NODE,
        args: [bin, "mcp", ...flags, "tools.ts"],
        cwd: dir,
        env: cleanEnv() as Record<string, string>,
        stderr: "pipe",
      }),
    );
    return client;
  }

  const exactResults = async (client: Client) => {
    expect(await client.callTool({ name: "add", arguments: { a: 2, b: 3 } })).toEqual({
      content: [{ type: "text", text: "5" }],
      isError: false,
    });
    expect(await client.callTool({ name: "readText", arguments: { path: "note.txt" } })).toEqual({
      content: [{ type: "text", text: "hello" }],
      isError: false,
    });
    expect(await client.callTool({ name: "stats", arguments: { items: ["x", "y"] } })).toEqual({
      content: [{ type: "text", text: '{"count":2,"first":"x"}' }],
      isError: false,
    });
    expect(await client.callTool({ name: "nothing", arguments: {} })).toEqual({
      content: [{ type: "text", text: "null" }],
      isError: false,
    });
    expect(await client.callTool({ name: "fails", arguments: {} })).toEqual({
      content: [{ type: "text", text: "it broke" }],
      isError: true,
    });
  };

  it("--untyped lists exactly what run --export-tools prints and answers {content, isError} only", async () => {
    const exported = runCli(bin, ["run", "--export-tools", "tools.ts"], { cwd: dir });
    expect(exported.status).toBe(0);
    const client = await connect("--untyped");
    expect(await client.listTools()).toEqual(JSON.parse(exported.stdout));
    await exactResults(client);
    // Arguments are the tool's own business, as in the original (no schema to check them against).
    expect(await client.callTool({ name: "add", arguments: { a: "2", b: "3" } })).toEqual({
      content: [{ type: "text", text: "23" }],
      isError: false,
    });
    await client.close();
  });

  it("typed (the default): structuredContent only where the return type declares an outputSchema", async () => {
    const client = await connect();
    const { tools } = await client.listTools();
    expect(tools.find((t) => t.name === "add")?.inputSchema).toEqual({
      type: "object",
      properties: { a: { type: "number" }, b: { type: "number" } },
      required: ["a", "b"],
    });
    expect(tools.filter((t) => t.outputSchema !== undefined).map((t) => t.name)).toEqual(["stats"]);
    expect(await client.callTool({ name: "stats", arguments: { items: ["x"] } })).toEqual({
      content: [{ type: "text", text: '{"count":1,"first":"x"}' }],
      structuredContent: { count: 1, first: "x" },
      isError: false,
    });
    // An object from a tool without an object return type: the contract's text only.
    expect(await client.callTool({ name: "loose", arguments: {} })).toEqual({
      content: [{ type: "text", text: '{"k":1}' }],
      isError: false,
    });
    expect(await client.callTool({ name: "add", arguments: { a: 2 } })).toMatchObject({ isError: true });
    await client.close();
  });
});
