import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cliSuite, LineClient, runCli, scratch } from "./helpers.ts";

const TOOLS = `
/** Add two numbers. */
export function add({ a, b }: { a: number; b: number }) {
  return a + b;
}

let count = 0;
/** Counts calls. */
export async function counter() {
  await new Promise((r) => setTimeout(r, 1));
  count += 1;
  return count;
}

export function nothing() {}
export function text() { return "plain"; }
export function boom() { throw new Error("kaboom"); }
export async function asyncBoom() { throw new Error("async kaboom"); }
export function spin() { for (;;) {} }
export function leak() { const a = []; for (;;) a.push(new Array(1e6).fill(1)); }
export function quit() { process.exit(3); }
export function reallyQuit() { process.reallyExit(4); }
export function abort() { process.abort(); }
export function lateThrow() { setTimeout(() => { throw new Error("late"); }, 0); return new Promise(() => {}); }
export function bigint() { return 10n; }
export function echoAny(input: any) { return input; }
export function echoUnknown(input: unknown) { return input; }
export function echoUnion(input: { a: number } | { b: string }) { return input; }
export function square(n: number) { return n * n; }
export function readOut({ path }: { path: string }) { return require("node:fs").readFileSync(path, "utf8"); }
export function writeOut({ path }: { path: string }) { require("node:fs").writeFileSync(path, "x"); }
export function envVar({ name }: { name: string }) { return process.env[name] ?? null; }
export function chatty() { console.log("to stdout?"); process.stdout.write("raw"); console.error("to stderr"); return "quiet"; }
`;

describe("amber session", () => {
  const { bin, dir } = cliSuite({ "tools.ts": TOOLS });

  it("answers the seed's requests, one line each, and exits 0 on EOF", () => {
    const input = [
      '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
      '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}',
      "",
      "   ",
    ].join("\n");
    const result = runCli(bin, ["session", "tools.ts"], { cwd: dir, input: `${input}\n` });
    expect(result.status).toBe(0);
    const lines = result.stdout
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines).toHaveLength(2);
    expect(lines[0].id).toBe(1);
    expect(lines[0].result.tools[0]).toEqual({
      name: "add",
      description: "Add two numbers.",
      inputSchema: { type: "object" },
    });
    expect(lines[1]).toEqual({ jsonrpc: "2.0", id: 2, result: 5 });
  });

  it("answers initialize, ping and the empty lists", async () => {
    const client = new LineClient(bin, ["session", "tools.ts"], { cwd: dir });
    const init = await client.request("initialize", { protocolVersion: "2024-11-05" });
    expect(init.result).toEqual({
      protocolVersion: "2024-11-05",
      capabilities: { tools: {}, prompts: {}, resources: {} },
      serverInfo: { name: "amber", version: expect.any(String) },
    });
    expect((await client.request("ping")).result).toEqual({});
    expect((await client.request("prompts/list")).result).toEqual({ prompts: [] });
    expect((await client.request("resources/list")).result).toEqual({ resources: [] });
    expect((await client.request("resources/templates/list")).result).toEqual({ resourceTemplates: [] });
    expect(await client.close()).toBe(0);
  });

  it("returns raw values (undefined → null, strings as-is) and tool errors as -32000", async () => {
    const client = new LineClient(bin, ["session", "tools.ts"], { cwd: dir });
    expect((await client.call("nothing")).result).toBeNull();
    expect((await client.call("text")).result).toBe("plain");
    expect((await client.call("boom")).error).toEqual({ code: -32000, message: "kaboom" });
    expect((await client.call("asyncBoom")).error).toEqual({ code: -32000, message: "async kaboom" });
    expect((await client.call("nope")).error).toMatchObject({ code: -32000 });
    expect((await client.call("bigint")).error).toMatchObject({ code: -32000 });
    expect((await client.call("add", { a: 1, b: 1 })).result).toBe(2);
    await client.close();
  });

  it("keeps tool output off the protocol stream (stdout of the tool goes to stderr)", async () => {
    const client = new LineClient(bin, ["session", "tools.ts"], { cwd: dir });
    expect(await client.call("chatty")).toEqual({ jsonrpc: "2.0", id: 1, result: "quiet" });
    expect((await client.call("add", { a: 1, b: 1 })).result).toBe(2);
    await client.close();
    expect(client.stderr).toContain("to stdout?");
    expect(client.stderr).toContain("raw");
    expect(client.stderr).toContain("to stderr");
  });

  it("maps protocol faults to -32700 (id null), -32600 and -32601, echoing ids", async () => {
    const client = new LineClient(bin, ["session", "tools.ts"], { cwd: dir });
    client.write("this is not json\n");
    expect(JSON.parse(await client.nextLine())).toEqual({
      jsonrpc: "2.0",
      id: null,
      error: { code: -32700, message: expect.any(String) },
    });
    client.write('{"jsonrpc":"2.0","id":"abc"}\n');
    expect(JSON.parse(await client.nextLine())).toMatchObject({ id: "abc", error: { code: -32600 } });
    client.write('{"jsonrpc":"2.0","id":7,"method":"no/such"}\n');
    expect(JSON.parse(await client.nextLine())).toMatchObject({ id: 7, error: { code: -32601 } });
    client.write('{"id":8,"method":"ping"}\n');
    expect(JSON.parse(await client.nextLine())).toEqual({ jsonrpc: "2.0", id: 8, result: {} });
    await client.close();
  });

  it("answers in request order, whatever each request costs (scripts read replies by position)", () => {
    const requests = [
      { id: 1, method: "initialize", params: {} },
      { id: 2, method: "ping" },
      { id: 3, method: "tools/call", params: { name: "counter", arguments: {} } },
      { id: 4, method: "tools/list" },
      "not json",
      { id: 6 },
      { id: 7, method: "no/such" },
      { id: 8, method: "tools/call", params: { name: "boom", arguments: {} } },
      { id: 9, method: "resources/templates/list" },
      // A lone parameter that admits an object takes `arguments` itself; `number` is positional.
      { id: 10, method: "tools/call", params: { name: "echoAny", arguments: { x: 1 } } },
      { id: 11, method: "tools/call", params: { name: "echoUnknown", arguments: { x: 2 } } },
      { id: 12, method: "tools/call", params: { name: "echoUnion", arguments: { a: 3 } } },
      { id: 13, method: "tools/call", params: { name: "square", arguments: { n: 4 } } },
    ];
    const input = requests.map((r) => (typeof r === "string" ? r : JSON.stringify({ jsonrpc: "2.0", ...r })));
    // Order, not the grace: a loaded machine can take the 2 s default to start a tool host, and then
    // a ready reply rightly leaves early (test/cli/liveness.test.ts covers the grace itself).
    const result = runCli(bin, ["session", "tools.ts"], {
      cwd: dir,
      input: `${input.join("\n")}\n`,
      env: { AMBER_REPLY_ORDER_GRACE_MS: "60000" },
    });
    expect(result.status).toBe(0);
    const lines = result.stdout
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => l.id)).toEqual([1, 2, 3, 4, null, 6, 7, 8, 9, 10, 11, 12, 13]);
    expect(lines.map((l) => l.error?.code ?? "ok")).toEqual([
      "ok",
      "ok",
      "ok",
      "ok",
      -32700,
      -32600,
      -32601,
      -32000,
      "ok",
      "ok",
      "ok",
      "ok",
      "ok",
    ]);
    expect(lines.slice(9).map((l) => l.result)).toEqual([{ x: 1 }, { x: 2 }, { a: 3 }, 16]);
  });

  it("a grant flag without a value grants its whole kind, even just before the file", async () => {
    const outside = scratch({ "secret.txt": "outside" });
    const client = new LineClient(bin, ["session", "--sandbox", "--allow-read", "--allow-env", "tools.ts"], {
      cwd: dir,
      env: { AMBER_AUDIT_PROBE: "seen" },
    });
    expect((await client.call("readOut", { path: join(outside, "secret.txt") })).result).toBe("outside");
    expect((await client.call("envVar", { name: "AMBER_AUDIT_PROBE" })).result).toBe("seen");
    expect((await client.call("writeOut", { path: join(outside, "new.txt") })).error).toEqual({
      code: -32000,
      message: `permission denied: FileSystem Write ${join(outside, "new.txt")}`,
    });
    expect(await client.close()).toBe(0);
  });

  it("keeps module state between calls by default and resets it with --isolate-per-call", async () => {
    const shared = new LineClient(bin, ["session", "tools.ts"], { cwd: dir });
    expect([(await shared.call("counter")).result, (await shared.call("counter")).result]).toEqual([1, 2]);
    await shared.close();
    const isolated = new LineClient(bin, ["session", "--isolate-per-call", "tools.ts"], { cwd: dir });
    expect([(await isolated.call("counter")).result, (await isolated.call("counter")).result]).toEqual([
      1, 1,
    ]);
    await isolated.close();
  });

  it("ends runaway, crashing and exiting calls with an error and keeps serving", async () => {
    // The leak in a session of its own with a long deadline: it must meet the memory limit first,
    // also on a loaded machine (a 5 s deadline won once, at load 20).
    const leaking = new LineClient(bin, ["session", "--timeout", "30000", "--max-memory", "64", "tools.ts"], {
      cwd: dir,
    });
    expect((await leaking.call("leak")).error).toMatchObject({
      code: -32000,
      message: expect.stringContaining("memory"),
    });
    expect((await leaking.call("add", { a: 2, b: 2 })).result).toBe(4);
    expect(await leaking.close()).toBe(0);

    const client = new LineClient(bin, ["session", "--timeout", "5000", "--max-memory", "64", "tools.ts"], {
      cwd: dir,
    });
    expect((await client.call("spin")).error).toEqual({
      code: -32000,
      message: "tool call timed out after 5000 ms",
    });
    expect((await client.call("add", { a: 1, b: 2 })).result).toBe(3);
    expect((await client.call("quit")).error).toMatchObject({
      message: expect.stringContaining("process.exit(3)"),
    });
    expect((await client.call("reallyQuit")).error).toMatchObject({
      message: expect.stringContaining("code 4"),
    });
    expect((await client.call("abort")).error).toMatchObject({
      message: expect.stringContaining("exited unexpectedly"),
    });
    expect((await client.call("lateThrow")).error).toMatchObject({ code: -32000, message: "late" });
    expect((await client.call("counter")).result).toBeGreaterThan(0);
    expect(await client.close()).toBe(0);
  });

  it("writes audit lines for checks and one tool:<name> line per call", async () => {
    const audit = join(dir, "nested/audit/log.jsonl");
    const client = new LineClient(bin, ["session", "--sandbox", "--audit-log", audit, "tools.ts"], {
      cwd: dir,
    });
    await client.call("add", { a: 1, b: 2 });
    await client.call("boom");
    await client.close();
    const lines = readFileSync(audit, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => Object.keys(l))).toEqual(
      lines.map(() => ["ts", "kind", "action", "resource", "decision"]),
    );
    expect(
      lines
        .filter((l) => l.resource.startsWith("tool:"))
        .map((l) => [l.kind, l.action, l.resource, l.decision]),
    ).toEqual([
      ["Process", "Execute", "tool:add", "Allow"],
      ["Process", "Execute", "tool:boom", "Deny"],
    ]);
  });

  it("reports a missing entry on stderr with a non-zero exit and nothing on stdout", () => {
    const result = runCli(bin, ["session", "missing.ts"], { cwd: dir });
    expect(result.status).not.toBe(0);
    expect(result.stdout).toBe("");
    expect(result.stderr).toMatch(/^error: .*entry file not found: missing\.ts\n$/);
  });
});
