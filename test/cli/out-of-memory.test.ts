/**
 * A tool host that runs out of memory: its call fails with one clear line on the CLI's stderr (which
 * call, the limit) — not V8's fatal report (the last collections, a native stack with addresses) —
 * whichever ends it first, V8's heap limit or the CLI's memory watchdog; the protocol stream stays
 * whole and the next call gets a fresh host. One `session` and one `mcp` process, side by side.
 */
import { describe, expect, it } from "vitest";
import { cliSuite, LineClient } from "./helpers.ts";

const TOOLS = `
/** Grows the heap until something ends it. */
export function hog() {
  const kept = [];
  for (;;) kept.push(new Array(100_000).fill(1.5));
}
/** Prints what starts V8's report, and lives on. */
export function fake() {
  process.stderr.write("<--- Last few GCs --->\\nthe tool's own text\\n");
  return "printed";
}
/** Add two numbers. */
export function add(a, b) {
  return a + b;
}
`;

describe("a tool that runs out of memory", () => {
  const { bin, dir } = cliSuite({ "tools.js": TOOLS });

  const outOfMemory = "amber: tool ran out of memory in call hog (--max-memory 32 MB)\n";

  it("fails its call with one line on stderr, in session and mcp, and the next call works", async () => {
    const clients = ["session", "mcp"].map(
      (command) =>
        new LineClient(bin, [command, "--deny-net", "--max-memory", "32", "tools.js"], { cwd: dir }),
    );
    try {
      const [session, mcp] = clients as [LineClient, LineClient];
      const [sessionReplies, mcpReplies] = await Promise.all([
        (async () => [
          await session.call("hog"),
          await session.call("add", { a: 1, b: 2 }),
          await session.call("fake"),
          await session.call("add", { a: 1, b: 2 }),
        ])(),
        (async () => [await mcp.call("hog"), await mcp.call("add", { a: 1, b: 2 })])(),
      ]);
      expect(sessionReplies[0]!.error).toEqual({
        code: -32000,
        message: "tool exceeded the memory limit (32 MB)",
      });
      expect(sessionReplies[1]!.result).toBe(3);
      expect(mcpReplies[0]!.result).toEqual({
        content: [{ type: "text", text: "tool exceeded the memory limit (32 MB)" }],
        isError: true,
      });
      expect(mcpReplies[1]!.result).toMatchObject({ content: [{ type: "text", text: "3" }], isError: false });
      expect(sessionReplies.slice(2).map((r) => r.result)).toEqual(["printed", 3]);
      expect(await mcp.close()).toBe(0);
      expect(mcp.stderr).toBe(outOfMemory);
      // Text that only looks like the start of a report is the tool's: out by the next call.
      expect(await session.close()).toBe(0);
      expect(session.stderr).toBe(`${outOfMemory}<--- Last few GCs --->\nthe tool's own text\n`);
    } finally {
      for (const client of clients) client.kill();
    }
  });
});
