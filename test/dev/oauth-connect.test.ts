/**
 * `scripts/oauth-connect.ts` (README "Connect an MCP client") against a loopback MCP server that
 * answers without credentials, as the platform MCP does (its sign-up tool): no 401, so no sign-in
 * happens, and the script must not say it connected with an OAuth access token.
 */
import { execFile } from "node:child_process";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";

let server: Server;
let url: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.method !== "POST") {
      res.writeHead(405).end();
      return;
    }
    let body = "";
    req.on("data", (chunk) => {
      body += chunk;
    });
    req.on("end", () => {
      const rpc = JSON.parse(body) as { id?: number; method: string };
      if (rpc.id === undefined) {
        res.writeHead(202).end();
        return;
      }
      const result =
        rpc.method === "initialize"
          ? {
              protocolVersion: "2025-06-18",
              capabilities: { tools: {} },
              serverInfo: { name: "open", version: "1" },
            }
          : { tools: [{ name: "open_signup", inputSchema: { type: "object" } }] };
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", id: rpc.id, result }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}/mcp`;
});

afterAll(() => server?.close());

it("says it connected without signing in when the endpoint never answered 401", async () => {
  const script = join(import.meta.dirname, "../../scripts/oauth-connect.ts");
  const { stdout } = await new Promise<{ stdout: string }>((resolve, reject) =>
    execFile(process.execPath, [script, url, "--developer", "amba_dev_unused"], (err, stdout, stderr) =>
      err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve({ stdout }),
    ),
  );
  expect(stdout).not.toContain("OAuth access token");
  expect(stdout).toBe(
    "connected without signing in (the endpoint answered without credentials: no 401); tools: open_signup\n",
  );
}, 60_000);
