/**
 * The `amba` transport against hostile or broken servers (real loopback HTTP servers, in process):
 * where the developer token may go, and what a server that redirects, never answers or answers
 * without end gets from the CLI — an error naming it, never a hang or the token elsewhere.
 */
import { execFile } from "node:child_process";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { callTool, mayCarryToken } from "../../src/cli/amba/client.ts";
import { cleanEnv, NODE } from "../cli/helpers.ts";

const TOKEN = "amba_dev_secret-token";
const LIMITS = { timeoutMs: 300, maxBytes: 64 * 1024 };

/** Authorization headers each server saw, by server. */
const seen = new Map<string, (string | undefined)[]>();

async function serve(name: string, handle: (req: IncomingMessage, res: ServerResponse) => void) {
  const server = createServer((req, res) => {
    seen.set(name, [...(seen.get(name) ?? []), req.headers.authorization]);
    handle(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return { server, url: `http://127.0.0.1:${port}` };
}

let servers: Server[] = [];
let other: string;
let redirecting: string;
let silent: string;
let endless: string;
let answering: string;
let hostile: string;

/** A server's error message that would write the clipboard, then overwrite the line. */
const HOSTILE_MESSAGE = "\u001b]52;c;Y3VybCBldmlsIHwgc2g=\u0007denied\rall good";

beforeAll(async () => {
  const made = await Promise.all([
    serve("other", (_req, res) =>
      res.end(JSON.stringify({ jsonrpc: "2.0", id: 1, result: { structuredContent: {} } })),
    ),
    serve("silent", () => {}),
    serve("endless", (_req, res) => {
      const chunk = Buffer.alloc(16 * 1024, "x");
      const more = () => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once("drain", more);
      };
      res.writeHead(200, { "content-type": "application/json" });
      more();
    }),
    serve("answering", (_req, res) =>
      res.end(JSON.stringify({ jsonrpc: "2.0", id: 1, result: { structuredContent: { ok: true } } })),
    ),
    serve("hostile", (_req, res) =>
      res.end(JSON.stringify({ jsonrpc: "2.0", id: 1, error: { code: -32602, message: HOSTILE_MESSAGE } })),
    ),
  ]);
  [other, silent, endless, answering, hostile] = made.map((m) => m.url) as [
    string,
    string,
    string,
    string,
    string,
  ];
  const redirect = await serve("redirecting", (_req, res) => {
    res.writeHead(307, { location: `${other.replace("127.0.0.1", "localhost")}/mcp` });
    res.end();
  });
  redirecting = redirect.url;
  servers = [...made.map((m) => m.server), redirect.server];
});

afterAll(() => {
  for (const server of servers) server.closeAllConnections();
  for (const server of servers) server.close();
});

/** The tool call against `url`; `timeoutMs` long by default (a loaded machine), short where the test waits for it. */
const call = (url: string, timeoutMs = 30_000) =>
  callTool({ url, token: TOKEN }, "amba_whoami", {}, { ...LIMITS, timeoutMs });

describe("amba's transport", () => {
  it("sends the token over https, or over plain http to this machine only", () => {
    const verdicts = [
      "https://api.example.com",
      "http://127.0.0.1:8787",
      "http://127.8.0.1",
      "http://localhost:8787",
      "http://demo.mcp.localhost:8787",
      "http://[::1]:8787",
      "http://api.example.com",
      "http://10.0.0.5:8787",
      "http://localhost.example.com",
      "http://[::ffff:a00:5]",
      "ftp://127.0.0.1",
    ].map((url) => mayCarryToken(new URL(url)));
    expect(verdicts).toEqual([true, true, true, true, true, true, false, false, false, false, false]);
  });

  it("refuses, before connecting, to send the token over plain http to another machine", async () => {
    await expect(call("http://192.0.2.1:8787")).rejects.toThrow(
      "refusing to send the developer token to http://192.0.2.1:8787 over plain http",
    );
  });

  it("refuses a URL carrying a password without quoting it", async () => {
    const failure = call("https://me:hunter2@api.example.com").catch((err: Error) => err.message);
    expect(await failure).toBe("the platform URL must not carry a user name or password");
  });

  it("follows no redirect: the error names it, and the other origin sees nothing", async () => {
    await expect(call(redirecting)).rejects.toThrow(
      `${redirecting}/mcp answered 307, a redirect to http://localhost:${new URL(other).port}/mcp`,
    );
    expect(seen.get("redirecting")).toEqual([`Bearer ${TOKEN}`]);
    expect(seen.get("other")).toBeUndefined();
  });

  it("gives up on a server that never answers", async () => {
    await expect(call(silent, LIMITS.timeoutMs)).rejects.toThrow(`${silent} did not answer within 0.3 s`);
  });

  it("stops reading an answer past its size limit", async () => {
    await expect(call(endless)).rejects.toThrow(`${endless}/mcp answered more than 64 KiB`);
  });

  it("still reads a normal answer", async () => {
    await expect(call(answering)).resolves.toEqual({ ok: true });
    expect(seen.get("answering")).toEqual([`Bearer ${TOKEN}`]);
  });
});

describe("amba's error line, spawned", () => {
  it("prints a server's message with its control characters escaped", async () => {
    const bin = join(dirname(inject("amberBin")), "amba.mjs");
    const env = cleanEnv({ AMBA_URL: hostile, AMBA_TOKEN: TOKEN, XDG_CONFIG_HOME: "/nonexistent" });
    const stderr = await new Promise<string>((resolve) =>
      execFile(NODE, [bin, "whoami"], { env, timeout: 20_000 }, (_error, _stdout, err) => resolve(err)),
    );
    expect(stderr).toBe("error: \\u001b]52;c;Y3VybCBldmlsIHwgc2g=\\u0007denied\\rall good\n");
  });
});
