/**
 * Nothing blocks the connection (issue 13): requests other than `tools/call` are answered while a
 * call runs, `notifications/cancelled` ends a call and frees the session, the per-call timeout is
 * on by default, and `amber mcp` audits unknown tools like `session` does.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { describe, expect, it } from "vitest";
import { cleanEnv, cliSuite, LineClient, NODE, runCli } from "./helpers.ts";

const TOOLS = `
let calls = 0;
/** Never settles. */
export function hang() {
  calls++;
  return new Promise(() => {});
}
/** Spins forever. */
export function spin() {
  for (;;) {}
}
/** Add two numbers. */
export function add(a: number, b: number) {
  return a + b;
}
/** How many times hang ran on this instance. */
export function count() {
  return calls;
}
`;

describe("a connection nothing can block", () => {
  const { bin, dir } = cliSuite({ "tools.ts": TOOLS });

  it("session answers ping and tools/list while a call never settles; cancelling it frees the session", async () => {
    // Replies wait for earlier ones at most the grace (2 s by default; 50 ms here, set as a host would).
    const client = new LineClient(bin, ["session", "tools.ts"], {
      cwd: dir,
      env: { AMBER_REPLY_ORDER_GRACE_MS: "50" },
    });
    client.write(
      `${JSON.stringify({ jsonrpc: "2.0", id: "h", method: "tools/call", params: { name: "hang", arguments: {} } })}\n`,
    );
    client.write(`${JSON.stringify({ jsonrpc: "2.0", id: "p", method: "ping" })}\n`);
    client.write(`${JSON.stringify({ jsonrpc: "2.0", id: "l", method: "tools/list" })}\n`);
    const early = [JSON.parse(await client.nextLine()), JSON.parse(await client.nextLine())];
    expect(early.map((r) => r.id).sort()).toEqual(["l", "p"]);
    // Another tool queues behind the running call (calls run one at a time) until it is cancelled.
    client.write(
      `${JSON.stringify({ jsonrpc: "2.0", id: "a", method: "tools/call", params: { name: "add", arguments: { a: 2, b: 40 } } })}\n`,
    );
    client.write(
      `${JSON.stringify({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "h" } })}\n`,
    );
    const late = [JSON.parse(await client.nextLine()), JSON.parse(await client.nextLine())];
    expect(late).toEqual([
      { jsonrpc: "2.0", id: "h", error: { code: -32800, message: "request cancelled" } },
      { jsonrpc: "2.0", id: "a", result: 42 },
    ]);
    expect(await client.close()).toBe(0);
  });

  it("a cancelled call that cannot settle (a busy loop) takes its tool host with it; the next call gets a fresh one", async () => {
    // Replies as soon as ready (the previous test covers the grace).
    const client = new LineClient(bin, ["session", "--sandbox", "tools.ts"], {
      cwd: dir,
      env: { AMBER_REPLY_ORDER_GRACE_MS: "0" },
    });
    client.write(
      `${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "hang", arguments: {} } })}\n`,
    );
    client.write(
      `${JSON.stringify({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 1 } })}\n`,
    );
    expect(JSON.parse(await client.nextLine())).toMatchObject({ id: 1, error: { code: -32800 } });
    expect(await client.call("count")).toMatchObject({ result: 0 });
    client.write(
      `${JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/call", params: { name: "spin", arguments: {} } })}\n`,
    );
    client.write(`${JSON.stringify({ jsonrpc: "2.0", id: 10, method: "ping" })}\n`);
    expect(JSON.parse(await client.nextLine())).toEqual({ jsonrpc: "2.0", id: 10, result: {} });
    client.write(
      `${JSON.stringify({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 9 } })}\n`,
    );
    expect(JSON.parse(await client.nextLine())).toMatchObject({ id: 9, error: { code: -32800 } });
    expect(await client.call("add", { a: 1, b: 2 })).toMatchObject({ result: 3 });
    expect(await client.close()).toBe(0);
  });

  it("the SDK client pings while a call never settles, aborts it, and the next call answers", async () => {
    const transport = new StdioClientTransport({
      command: NODE,
      args: [bin, "mcp", "tools.ts"],
      cwd: dir,
      env: cleanEnv({ AMBER_REPLY_ORDER_GRACE_MS: "0" }) as Record<string, string>,
      stderr: "pipe",
    });
    const client = new Client({ name: "test", version: "1.0.0" });
    await client.connect(transport);
    const abort = new AbortController();
    const hanging = client.callTool({ name: "hang", arguments: {} }, undefined, {
      signal: abort.signal,
      timeout: 120_000,
    });
    const settled = hanging.then(
      () => "resolved",
      () => "rejected",
    );
    expect(await client.ping()).toEqual({});
    expect((await client.listTools()).tools.map((t) => t.name)).toContain("add");
    abort.abort("changed my mind");
    expect(await settled).toBe("rejected");
    const sum = await client.callTool({ name: "add", arguments: { a: 2, b: 40 } });
    expect(sum.content).toEqual([{ type: "text", text: "42" }]);
    await client.close();
  });

  it("ends a never-settling call at the --timeout and documents the 60 s default", async () => {
    const client = new LineClient(bin, ["session", "--timeout", "300", "tools.ts"], { cwd: dir });
    expect(await client.call("hang")).toMatchObject({
      error: { code: -32000, message: "tool call timed out after 300 ms" },
    });
    expect(await client.call("add", { a: 1, b: 1 })).toMatchObject({ result: 2 });
    expect(await client.close()).toBe(0);
    expect(runCli(bin, ["mcp", "--help"]).stdout).toMatch(
      /--timeout MS\s+end a tool call after MS milliseconds \(default 60000; 0: never\)/,
    );
  });

  it("amber mcp writes a tool:<name> Deny audit line for an unknown tool, as session does", async () => {
    const audit = join(dir, "audit.jsonl");
    const client = new LineClient(bin, ["mcp", "--audit-log", audit, "tools.ts"], { cwd: dir });
    const reply = await client.call("missing", {});
    expect(reply.error).toMatchObject({ code: -32602 });
    expect(await client.call("add", { a: 1, b: 2 })).toMatchObject({ result: { isError: false } });
    client.child.stdin.end();
    expect(await client.exited).toBe(0);
    const tools = readFileSync(audit, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line))
      .filter((line) => line.resource.startsWith("tool:"));
    expect(tools.map((l) => [l.resource, l.decision])).toEqual([
      ["tool:missing", "Deny"],
      ["tool:add", "Allow"],
    ]);
  });
});
