/**
 * Edges of the CLI contract a black-box review found: denial messages that survive library
 * wrapping (fetch), and more below as they are fixed.
 */
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestCli, LineClient, scratch } from "./helpers.ts";

const TOOLS = `
export async function fetchIt({ url }) { return await (await fetch(url)).text(); }
export async function fetchCaught({ url }) {
  try { await fetch(url); return "reached"; } catch (e) { return [e.name, e.message]; }
}
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
});
