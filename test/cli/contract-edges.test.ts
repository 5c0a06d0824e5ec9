/**
 * Edges of the CLI contract a black-box review found: denial messages that survive library
 * wrapping (fetch), ES module semantics of tool files (`import.meta`, top-level await), and more.
 */
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestCli, frame, LineClient, runCli, scratch } from "./helpers.ts";

const ESM_TOOLS = `
import { readFileSync } from "node:fs";
import path from "node:path";
import { double } from "./lib/math.ts";

let loads = 0;
const config = await Promise.resolve({ factor: 3 });
loads += 1;
const dataDir = path.join(import.meta.dirname, "data");

/** Where am I? */
export function where() { return { url: import.meta.url, file: import.meta.filename, loads }; }
/** Top-level await happened before the first call. */
export async function scaled({ n }: { n: number }) { return double(n) * config.factor; }
/** Named import, default import and require of built-ins side by side. */
export function read() {
  return [readFileSync(path.join(dataDir, "x.txt"), "utf8"), require("node:fs").readFileSync(new URL("./data/x.txt", import.meta.url), "utf8")];
}
`;

const SEED_TOOLS = `
/** Read a UTF-8 file. */
export function readText({ path }: { path: string }) {
  return require("node:fs").readFileSync(path, "utf8");
}
export function url() { return import.meta.url; }
`;

const TOOLS = `
export async function fetchIt({ url }) { return await (await fetch(url)).text(); }
export async function fetchCaught({ url }) {
  try { await fetch(url); return "reached"; } catch (e) { return [e.name, e.message]; }
}
export function envJson() { return JSON.stringify(process.env); }
export function envAwaited() { return Promise.resolve(process.env).then((env) => Object.keys(env)); }
export function exists({ path }) { return require("node:fs").existsSync(path); }
export function existsCallback({ path }) { return new Promise((r) => require("node:fs").exists(path, r)); }
export function throwObject() { throw { message: "x" }; }
export function throwOther() { throw { code: 7 }; }
export function wrapped() {
  try { require("node:fs").readFileSync("/etc/hostname"); } catch (e) { throw new Error("could not read", { cause: e }); }
}
`;

describe("contract edges", () => {
  let bin: string;
  let cleanup: () => void;
  let dir: string;
  let server: Server;
  let base: string;
  let hits = 0;
  beforeAll(async () => {
    ({ bin, cleanup } = await buildTestCli());
    dir = scratch({ "tools.js": TOOLS });
    server = createServer((_req, res) => {
      hits++;
      res.end("reached");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  afterAll(() => {
    server.close();
    cleanup();
  });

  it("a denied fetch reports permission denied with kind and resource, audited once", async () => {
    const host = new URL(base).host;
    for (const flags of [["--sandbox"], ["--deny-net"]]) {
      const audit = join(dir, `fetch-${flags[0]}.jsonl`);
      const client = new LineClient(bin, ["session", ...flags, "--audit-log", audit, "tools.js"], {
        cwd: dir,
      });
      expect((await client.call("fetchIt", { url: base })).error).toEqual({
        code: -32000,
        message: `permission denied: Network Connect ${host}`,
      });
      expect((await client.call("fetchCaught", { url: base })).result).toEqual([
        "PermissionDeniedError",
        `permission denied: Network Connect ${host}`,
      ]);
      expect((await client.call("fetchIt", { url: "http://localhost/x" })).error).toMatchObject({
        message: "permission denied: Network Connect localhost:80",
      });
      await client.close();
      const lines = readFileSync(audit, "utf8").trim().split("\n");
      expect(lines.filter((l) => l.includes('"Network"'))).toHaveLength(3);
    }
    const granted = new LineClient(bin, ["session", "--sandbox", "--allow-net", "127.0.0.1", "tools.js"], {
      cwd: dir,
    });
    expect((await granted.call("fetchIt", { url: base })).result).toBe("reached");
    await granted.close();
    expect(hits).toBe(1);
  });

  it("a denial wrapped as another error's cause is reported as the denial", async () => {
    const client = new LineClient(bin, ["session", "--sandbox", "tools.js"], { cwd: dir });
    expect((await client.call("wrapped")).error).toEqual({
      code: -32000,
      message: expect.stringMatching(/^permission denied: FileSystem Read \/etc\/hostname$/),
    });
    await client.close();
  });

  for (const flags of [[], ["--sandbox", "--allow-read", "."], ["--isolate-per-call"]]) {
    it(`tool files get import.meta.url and top-level await (${flags.join(" ") || "plain"})`, async () => {
      const esm = scratch({
        "tools.ts": ESM_TOOLS,
        "lib/math.ts": "export const double = (n: number) => n * 2;\n",
        "data/x.txt": "x!",
      });
      const client = new LineClient(bin, ["session", ...flags, "tools.ts"], { cwd: esm });
      const entry = join(esm, "tools.ts");
      expect((await client.call("where")).result).toEqual({
        url: pathToFileURL(entry).href,
        file: entry,
        loads: 1,
      });
      expect((await client.call("scaled", { n: 5 })).result).toBe(30);
      expect((await client.call("read")).result).toEqual(["x!", "x!"]);
      expect((await client.call("where")).result).toMatchObject({ loads: 1 });
      expect(await client.close()).toBe(0);
    });
  }

  it("the seed's CommonJS-style require keeps working next to import.meta.url", async () => {
    const seed = scratch({ "tools.ts": SEED_TOOLS, "data/a.txt": "seed" });
    for (const flags of [[], ["--sandbox", "--allow-read", "data"], ["--isolate-per-call"]]) {
      const client = new LineClient(bin, ["session", ...flags, "tools.ts"], { cwd: seed });
      expect((await client.call("readText", { path: join(seed, "data/a.txt") })).result).toBe("seed");
      expect((await client.call("url")).result).toBe(pathToFileURL(join(seed, "tools.ts")).href);
      await client.close();
    }
  });

  it("generic probes of process.env, exists() and thrown objects behave under --sandbox", async () => {
    const audit = join(dir, "probes.jsonl");
    const client = new LineClient(
      bin,
      ["session", "--sandbox", "--allow-env", "AMBER_OK", "--audit-log", audit, "tools.js"],
      { cwd: dir, env: { AMBER_OK: "yes", AMBER_SECRET: "no" } },
    );
    expect((await client.call("envJson")).result).toBe('{"AMBER_OK":"yes"}');
    expect((await client.call("envAwaited")).result).toEqual(["AMBER_OK"]);
    expect((await client.call("exists", { path: "/etc/hostname" })).result).toBe(false);
    expect((await client.call("existsCallback", { path: "/etc/hostname" })).result).toBe(false);
    expect((await client.call("exists", { path: join(dir, "tools.js") })).result).toBe(true);
    expect((await client.call("throwObject")).error).toEqual({ code: -32000, message: "x" });
    expect((await client.call("throwOther")).error).toEqual({ code: -32000, message: '{"code":7}' });
    await client.close();
    const lines = readFileSync(audit, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, string>)
      .filter((l) => l.kind !== "Process")
      .map((l) => `${l.kind} ${l.resource} ${l.decision}`);
    expect(lines).toEqual([
      "Environment AMBER_OK Allow",
      "FileSystem /etc/hostname Deny",
      "FileSystem /etc/hostname Deny",
      `FileSystem ${join(dir, "tools.js")} Allow`,
    ]);
  });

  it("session answers a request with a null id, echoing it", async () => {
    const client = new LineClient(bin, ["session", "tools.js"], { cwd: dir });
    client.write('{"jsonrpc":"2.0","id":null,"method":"ping"}\n');
    expect(JSON.parse(await client.nextLine())).toEqual({ jsonrpc: "2.0", id: null, result: {} });
    client.write('{"id":null,"method":"tools/call","params":{"name":"throwObject"}}\n');
    expect(JSON.parse(await client.nextLine())).toEqual({
      jsonrpc: "2.0",
      id: null,
      error: { code: -32000, message: "x" },
    });
    client.write('{"jsonrpc":"2.0","id":null}\n');
    expect(JSON.parse(await client.nextLine())).toMatchObject({ id: null, error: { code: -32600 } });
    await client.close();
  });

  it("a sibling tools.json replaces the scan for session, mcp and --inspect too, not only --export-tools", () => {
    const manifest = {
      tools: [
        {
          name: "add",
          description: "Sum (manifest)",
          inputSchema: { type: "object", required: ["a"] },
          x: 1,
        },
        { name: "ghost" },
      ],
    };
    const listed = [
      { name: "add", description: "Sum (manifest)", inputSchema: { type: "object", required: ["a"] } },
      { name: "ghost", description: "", inputSchema: { type: "object" } },
    ];
    const dir = scratch({
      "tools.ts":
        "/** Scanned. */\nexport function add({ a, b }) { return a + b; }\nexport function secret() { return 's'; }\n",
      "tools.json": JSON.stringify(manifest),
    });
    const requests = [
      { id: 1, method: "tools/list" },
      { id: 2, method: "tools/call", params: { name: "add", arguments: { a: 2, b: 3 } } },
    ].map((m) => ({ jsonrpc: "2.0", ...m }));
    const session = runCli(bin, ["session", "tools.ts"], {
      cwd: dir,
      input: requests.map((m) => `${JSON.stringify(m)}\n`).join(""),
    });
    const lines = session.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines).toEqual([
      { jsonrpc: "2.0", id: 1, result: { tools: listed } },
      { jsonrpc: "2.0", id: 2, result: 5 },
    ]);

    const mcp = runCli(bin, ["mcp", "tools.ts"], {
      cwd: dir,
      input: [{ jsonrpc: "2.0", id: 0, method: "initialize", params: {} }, ...requests].map(frame).join(""),
    });
    const bodies = mcp.stdout
      .split(/Content-Length: \d+\r\n\r\n/)
      .slice(1)
      .map((b) => JSON.parse(b));
    expect(bodies[1].result).toEqual({ tools: listed });
    expect(bodies[2].result).toEqual({ content: [{ type: "text", text: "5" }], isError: false });

    const inspect = runCli(bin, ["mcp", "--inspect", "tools.ts"], { cwd: dir });
    expect(inspect.status).toBe(0);
    expect(inspect.stdout).toMatch(/\bghost\b/);
    expect(inspect.stdout).toContain("Sum (manifest)");
    expect(inspect.stdout).not.toMatch(/\bsecret\b|Scanned/);
  });

  for (const command of ["session", "mcp"]) {
    it(`${command}: a host that stops reading stdout ends it quietly, tool process included (no EPIPE stack)`, async () => {
      const tools = scratch({ "tools.js": "export function pid() { return process.pid; }\n" });
      const client = new LineClient(bin, [command, "tools.js"], { cwd: tools });
      const first = await client.call("pid");
      const pid =
        command === "session"
          ? (first.result as number)
          : Number((first.result as { content: { text: string }[] }).content[0]?.text);
      expect(Number.isInteger(pid)).toBe(true);
      client.child.stdout.destroy();
      // Keep asking: the answers have nowhere to go.
      for (let id = 100; id < 140; id++) {
        client.write(`${JSON.stringify({ jsonrpc: "2.0", id, method: "tools/list" })}\n`);
      }
      expect(await client.exited).toBe(0);
      expect(client.stderr).not.toMatch(/EPIPE|\n\s+at /);
      const alive = () => {
        try {
          process.kill(pid, 0);
          return true;
        } catch {
          return false;
        }
      };
      await expect.poll(alive, { timeout: 30_000, interval: 100 }).toBe(false);
    });
  }

  it("run --export-tools and mcp --inspect piped into a reader that quits early exit quietly", async () => {
    const many = Array.from({ length: 3000 }, (_, i) => `export function f${i}() {}`).join("\n");
    const big = scratch({ "tools.ts": `${many}\n` });
    for (const args of [
      ["run", "--export-tools", "tools.ts"],
      ["mcp", "--inspect", "tools.ts"],
    ]) {
      const child = new LineClient(bin, args, { cwd: big });
      child.child.stdout.destroy();
      expect(await child.exited, args.join(" ")).toBe(0);
      expect(child.stderr, args.join(" ")).not.toMatch(/EPIPE|\n\s+at /);
    }
  });
});
