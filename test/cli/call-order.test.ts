/**
 * Calls sent together (one stdin write) run one at a time, in order, on the session's one module
 * instance — as the original runtime did. A call that times out, blows the memory limit or exits
 * fails alone: the calls before it keep their results and the ones after it run on a fresh host.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cliSuite, LineClient } from "./helpers.ts";

const TOOLS = `
let n = 0;
export async function bump() {
  const v = n;
  await new Promise((r) => setTimeout(r, 20));
  n = v + 1;
  return n;
}
export function ok() { return "ok"; }
export function loop() { for (;;) {} }
export function mem() { const a = []; for (;;) a.push(new Array(1e6).fill(1)); }
export function quit() { process.exit(2); }
export function readIt({ path }) { return require("node:fs").readFileSync(path, "utf8"); }
`;

function call(id: number, name: string, args: unknown = {}): string {
  return `${JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } })}\n`;
}

/** Sends `lines` in one write and returns the parsed responses by id. */
async function batch(client: LineClient, lines: string[]): Promise<Record<string, unknown>[]> {
  client.write(lines.join(""));
  const out: Record<string, unknown>[] = [];
  for (const _ of lines) out.push(JSON.parse(await client.nextLine()) as Record<string, unknown>);
  return out;
}

describe("calls sent together", () => {
  const { bin, dir } = cliSuite({ "tools.js": TOOLS, "data/allowed.txt": "yes", "secret.txt": "no" });

  for (const flags of [[], ["--sandbox"]]) {
    it(`run one at a time on the shared instance (session ${flags.join(" ")})`, async () => {
      const client = new LineClient(bin, ["session", ...flags, "tools.js"], { cwd: dir });
      const replies = await batch(client, [call(1, "bump"), call(2, "bump"), call(3, "bump")]);
      expect(replies).toEqual([
        { jsonrpc: "2.0", id: 1, result: 1 },
        { jsonrpc: "2.0", id: 2, result: 2 },
        { jsonrpc: "2.0", id: 3, result: 3 },
      ]);
      expect(await client.close()).toBe(0);
    });
  }

  it("run one at a time in amber mcp, and each gets a fresh instance with --isolate-per-call", async () => {
    const mcp = new LineClient(bin, ["mcp", "tools.js"], { cwd: dir });
    const texts = (await batch(mcp, [call(1, "bump"), call(2, "bump"), call(3, "bump")])).map(
      (r) => (r.result as { content: { text: string }[] }).content[0]!.text,
    );
    expect(texts).toEqual(["1", "2", "3"]);
    await mcp.close();
    const isolated = new LineClient(bin, ["session", "--isolate-per-call", "tools.js"], { cwd: dir });
    const results = (await batch(isolated, [call(1, "bump"), call(2, "bump"), call(3, "bump")])).map(
      (r) => r.result,
    );
    expect(results).toEqual([1, 1, 1]);
    await isolated.close();
  });

  for (const flags of [[], ["--deny-run"]]) {
    it(`fail alone when one of them times out, exits or blows the memory limit (${flags.join(" ") || "thread"})`, async () => {
      // Two sessions side by side: a short deadline for the endless loop, and a long one for the
      // memory bomb, which on a loaded machine can take seconds (a fresh host, V8's last-resort
      // collections) to meet the memory limit — the deadline must not win that race.
      const session = (timeout: string) =>
        new LineClient(bin, ["session", ...flags, "--timeout", timeout, "--max-memory", "64", "tools.js"], {
          cwd: dir,
        });
      const short = session("3000");
      const long = session("60000");
      const [replies, memory] = await Promise.all([
        batch(short, [call(1, "ok"), call(2, "loop"), call(3, "ok"), call(4, "quit"), call(5, "ok")]),
        batch(long, [call(1, "ok"), call(2, "mem"), call(3, "ok")]),
      ]);
      expect(replies.map((r) => r.id)).toEqual([1, 2, 3, 4, 5]);
      expect(replies[0]!.result).toBe("ok");
      expect(replies[1]!.error).toEqual({ code: -32000, message: "tool call timed out after 3000 ms" });
      expect(replies[2]!.result).toBe("ok");
      expect(replies[3]!.error).toEqual({ code: -32000, message: "process.exit(2) was called by the tool" });
      expect(replies[4]!.result).toBe("ok");
      expect(memory.map((r) => r.id)).toEqual([1, 2, 3]);
      expect(memory[0]!.result).toBe("ok");
      expect(memory[1]!.error).toEqual({ code: -32000, message: "tool exceeded the memory limit (64 MB)" });
      expect(memory[2]!.result).toBe("ok");
      expect(await short.close()).toBe(0);
      expect(await long.close()).toBe(0);
    });
  }

  it("write each call's audit lines in call order, its checks before its tool:<name> line", async () => {
    const audit = join(dir, "order.jsonl");
    const client = new LineClient(
      bin,
      ["session", "--sandbox", "--allow-read", "data", "--audit-log", audit, "tools.js"],
      { cwd: dir },
    );
    const replies = await batch(client, [
      call(1, "readIt", { path: join(dir, "data/allowed.txt") }),
      call(2, "readIt", { path: join(dir, "secret.txt") }),
      call(3, "missing"),
      call(4, "ok"),
    ]);
    expect(replies[0]!.result).toBe("yes");
    expect(replies[1]!.error).toMatchObject({ message: expect.stringContaining("permission denied") });
    await client.close();
    const lines = readFileSync(audit, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, string>)
      .map((l) => `${l.kind} ${l.action} ${l.resource} ${l.decision}`);
    expect(lines).toEqual([
      `FileSystem Read ${join(dir, "data/allowed.txt")} Allow`,
      "Process Execute tool:readIt Allow",
      `FileSystem Read ${join(dir, "secret.txt")} Deny`,
      "Process Execute tool:readIt Deny",
      "Process Execute tool:missing Deny",
      "Process Execute tool:ok Allow",
    ]);
  });
});
