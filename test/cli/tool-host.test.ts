/**
 * Where tool code runs: always in a child process (under Node's permission model as soon as any
 * restriction is given), never in a thread of the CLI, so fd 1 and the CLI's pid stay out of reach.
 * Both modes contain the same failures with the same messages.
 */
import { describe, expect, it } from "vitest";
import { cliSuite, LineClient } from "./helpers.ts";

const TOOLS = `
export function where() {
  return {
    mainThread: require("node:worker_threads").isMainThread,
    pid: process.pid,
    channel: [typeof process.send, typeof process.channel, typeof process._send],
  };
}
export function abort() { process.abort(); }
export function quit() { process.exit(3); }
export function reallyQuit() { process.reallyExit(4); }
export function spin() { for (;;) {} }
export function heap() { const a = []; for (;;) a.push(new Array(1e6).fill(1)); }
export function buffers() { const a = []; for (;;) a.push(Buffer.alloc(1e7, 1)); }
export function bigint() { return 10n; }
export function dates() { return { at: new Date(0), gone: undefined, list: [undefined] }; }
export async function streams() {
  const fs = require("node:fs");
  fs.writeSync(1, "fd1-sync\\n");
  // Written before the answer (a later closeOut closes fd 1 under a stream still writing).
  await new Promise((done) => fs.createWriteStream(null, { fd: 1, autoClose: false }).write("fd1-stream\\n", done));
  const input = fs.readFileSync(0, "utf8");
  return { input };
}
export function closeOut() { require("node:fs").closeSync(1); return "closed"; }
export function fdPaths() {
  const fs = require("node:fs");
  for (const path of ["/proc/self/fd/1", "/dev/fd/./1", "/dev/stdout", "/proc/" + process.pid + "/fd/1"]) {
    try { fs.writeFileSync(path, "via " + path + "\\n"); } catch {}
  }
  return "written";
}
export function killSelf() { process.kill(process.pid, "SIGKILL"); return "alive"; }
export function late() { setTimeout(() => { throw new Error("late"); }, 0); return new Promise(() => {}); }
`;

const FAILURES: [string, string][] = [
  ["abort", "tool process exited unexpectedly (signal SIGABRT)"],
  ["quit", "process.exit(3) was called by the tool"],
  ["reallyQuit", "tool process exited unexpectedly (code 4)"],
  ["spin", "tool call timed out after 1500 ms"],
  ["heap", "tool exceeded the memory limit (64 MB)"],
  ["buffers", "tool exceeded the memory limit (64 MB)"],
  ["bigint", "result is not JSON-serializable"],
  ["late", "late"],
];

describe("tool host", () => {
  const { bin, dir } = cliSuite({ "tools.js": TOOLS });

  it("runs tools in a child process with or without permission options", async () => {
    for (const flags of [[], ["--sandbox"], ["--deny-net"], ["--allow-read", "."]]) {
      const client = new LineClient(bin, ["session", ...flags, "tools.js"], { cwd: dir });
      const inProcess = (await client.call("where")).result as { mainThread: boolean; pid: number };
      expect(inProcess.mainThread).toBe(true);
      expect(inProcess.pid).not.toBe(client.child.pid);
      await client.close();
    }
  });

  it("keeps every path to fd 1 off the protocol stream and cannot kill the CLI (no permission options)", async () => {
    const client = new LineClient(bin, ["session", "tools.js"], { cwd: dir });
    expect((await client.call("fdPaths")).result).toBe("written");
    expect(await client.call("killSelf")).toMatchObject({
      error: { code: -32000, message: "tool process exited unexpectedly (signal SIGKILL)" },
    });
    expect((await client.call("where")).result).toMatchObject({
      mainThread: true,
      channel: ["undefined", "undefined", "undefined"],
    });
    expect(await client.close()).toBe(0);
    // Nothing but responses reached stdout (a stray line would have failed the id checks above).
    expect(client.stderr).not.toMatch(/"jsonrpc"/);
  });

  for (const [label, flags] of [
    ["no permission options", []],
    ["child process", ["--deny-run"]],
  ] as [string, string[]][]) {
    it(`contains every failure with the same message (${label}) and keeps serving`, async () => {
      // The memory bombs meet the limit in well under a second on a quiet machine, but a starved one
      // stretches V8's last-resort collections past a short deadline: only `spin` gets the 1.5 s one.
      const session = (timeoutMs: number) =>
        new LineClient(
          bin,
          ["session", ...flags, "--timeout", String(timeoutMs), "--max-memory", "64", "tools.js"],
          { cwd: dir },
        );
      const client = session(30_000);
      const spinClient = session(1500);
      for (const [tool, message] of FAILURES) {
        const on = tool === "spin" ? spinClient : client;
        expect(await on.call(tool), tool).toMatchObject({ error: { code: -32000, message } });
        expect((await on.call("where")).result, `after ${tool}`).toMatchObject({
          pid: expect.any(Number),
        });
      }
      expect(await spinClient.close()).toBe(0);
      expect((await client.call("dates")).result).toEqual({ at: "1970-01-01T00:00:00.000Z", list: [null] });
      // Writes to fd 1 go to stderr, fd 0 reads nothing, closing fd 1 does not close the protocol stream.
      expect(await client.call("streams")).toEqual({
        jsonrpc: "2.0",
        id: expect.any(Number),
        result: { input: "" },
      });
      expect((await client.call("closeOut")).result).toBe("closed");
      expect((await client.call("where")).result).toMatchObject({ pid: expect.any(Number) });
      expect(await client.close()).toBe(0);
      expect(client.stderr).not.toMatch(/Warning/);
      expect(client.stderr).toContain("fd1-sync");
      expect(client.stderr).toContain("fd1-stream");
    }, 90_000);
  }
});
