/**
 * `--watch` (issue 13): editing the tool file changes the next `tools/list`; `amber mcp` declares
 * `tools.listChanged` and sends `notifications/tools/list_changed`; `amber serve` reloads too.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestCli, cleanEnv, listeningUrl, NODE, scratch } from "./helpers.ts";

const V1 = `
/** Add two numbers. */
export function add(a: number, b: number) {
  return a + b;
}
`;
const V2 = `
/** Add two numbers, then one. */
export function add(a: number, b: number) {
  return a + b + 1;
}
/** Multiply. */
export function mul(a: number, b: number) {
  return a * b;
}
`;
const V3 = `
/** Multiply. */
export function mul(a: number, b: number) {
  return a * b;
}
`;

describe("--watch", () => {
  let bin: string;
  let cleanup: () => void;
  beforeAll(async () => {
    ({ bin, cleanup } = await buildTestCli());
  });
  afterAll(() => cleanup());

  it("mcp: adds, changes and removes tools, and the SDK client receives tools/list_changed", async () => {
    const dir = scratch({ "tools.ts": V1 });
    const transport = new StdioClientTransport({
      command: NODE,
      args: [bin, "mcp", "--watch", "tools.ts"],
      cwd: dir,
      env: cleanEnv({ XDG_CACHE_HOME: join(dir, "cache") }) as Record<string, string>,
      stderr: "pipe",
    });
    const client = new Client({ name: "test", version: "1.0.0" });
    let changes = 0;
    let waiting: (() => void) | undefined;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      changes++;
      waiting?.();
    });
    const nextChange = () => new Promise<void>((resolve) => (waiting = resolve));
    await client.connect(transport);
    expect(client.getServerCapabilities()?.tools).toEqual({ listChanged: true });
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["add"]);
    expect((await client.callTool({ name: "add", arguments: { a: 1, b: 1 } })).content).toEqual([
      { type: "text", text: "2" },
    ]);

    let changed = nextChange();
    writeFileSync(join(dir, "tools.ts"), V2);
    await changed;
    const v2 = (await client.listTools()).tools;
    expect(v2.map((t) => [t.name, t.description])).toEqual([
      ["add", "Add two numbers, then one."],
      ["mul", "Multiply."],
    ]);
    expect((await client.callTool({ name: "add", arguments: { a: 1, b: 1 } })).content).toEqual([
      { type: "text", text: "3" },
    ]);

    changed = nextChange();
    writeFileSync(join(dir, "tools.ts"), V3);
    await changed;
    // One save can raise more than one file event: the list settles on the last version.
    const names = async () => (await client.listTools()).tools.map((t) => t.name);
    for (let i = 0; i < 100 && (await names()).length !== 1; i++) await nextChange();
    expect(await names()).toEqual(["mul"]);
    expect((await client.callTool({ name: "mul", arguments: { a: 6, b: 7 } })).content).toEqual([
      { type: "text", text: "42" },
    ]);
    await expect(client.callTool({ name: "add", arguments: { a: 1, b: 1 } })).rejects.toMatchObject({
      code: -32602,
    });
    expect(changes).toBeGreaterThanOrEqual(2);
    await client.close();
  });

  it("mcp without --watch does not declare listChanged", async () => {
    const dir = scratch({ "tools.ts": V1 });
    const transport = new StdioClientTransport({
      command: NODE,
      args: [bin, "mcp", "tools.ts"],
      cwd: dir,
      env: cleanEnv({ XDG_CACHE_HOME: join(dir, "cache") }) as Record<string, string>,
      stderr: "pipe",
    });
    const client = new Client({ name: "test", version: "1.0.0" });
    await client.connect(transport);
    expect(client.getServerCapabilities()?.tools).toEqual({});
    await client.close();
  });

  it("serve: GET /tools and POST /<tool> follow the edited file", async () => {
    const dir = scratch({ "tools.ts": V1 });
    const child: ChildProcess = spawn(NODE, [bin, "serve", "--watch", "--port", "0", "tools.ts"], {
      cwd: dir,
      env: cleanEnv({ XDG_CACHE_HOME: join(dir, "cache") }),
    });
    try {
      const base = await listeningUrl(child);
      const names = async () =>
        ((await (await fetch(`${base}/tools`)).json()) as { tools: { name: string }[] }).tools.map(
          (t) => t.name,
        );
      expect(await names()).toEqual(["add"]);
      writeFileSync(join(dir, "tools.ts"), V2);
      // Poll (no timing assertion): the reload lands when the compiler pass is done.
      for (let i = 0; i < 300 && (await names()).length !== 2; i++)
        await new Promise((r) => setTimeout(r, 100));
      expect(await names()).toEqual(["add", "mul"]);
      const product = await fetch(`${base}/mul`, { method: "POST", body: '{"a":6,"b":7}' });
      expect(await product.json()).toBe(42);
    } finally {
      child.kill("SIGTERM");
    }
  });
});
