import { spawn } from "node:child_process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseSigningSecrets } from "../../src/cli/commands/serve.ts";
import { type SigningKeys, signUpstreamRequest } from "../../src/functions/signing.ts";
import { buildTestCli, cleanEnv, LineClient, listeningUrl, NODE, runCli, scratch } from "./helpers.ts";

const TOOLS = `
import { McpServer } from "amber:mcp";
import { helper } from "./lib/helper.ts";

/** Add two numbers. */
export function add({ a, b }: { a: number; b: number }) {
  return a + b;
}
/** Uses a bundled local import. */
export function shout({ text }: { text: string }) { return helper(text); }
export function fail() { throw new Error("nope"); }

const inner = new McpServer({ name: "inner", version: "1.0.0" })
  .tool("double", "Doubles n", { type: "object" }, ({ n }) => n * 2)
  .resource("mem://hello", "greeting", () => "hello")
  .prompt("greet", "Greets", ({ who }) => "Hi " + who);

/** Calls the amber:mcp server in memory. */
export async function viaMcp({ n }: { n: number }) {
  const client = inner.connectLocal();
  const tools = await client.listTools();
  const result = await client.callTool("double", { n });
  const resource = await client.request("resources/read", { uri: "mem://hello" });
  const prompt = await client.request("prompts/get", { name: "greet", arguments: { who: "amber" } });
  const raw = await inner.handleMessage('{"jsonrpc":"2.0","id":9,"method":"ping"}');
  return { tools, result, resource, prompt, raw };
}
`;

/** `amber serve <args> tools.ts` on a free port in `dir`: its base URL and how to stop it. */
async function startServe(
  bin: string,
  dir: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ base: string; stop: () => void }> {
  const child = spawn(NODE, [bin, "serve", ...args, "--port", "0", "tools.ts"], {
    cwd: dir,
    env: { ...cleanEnv(), ...env },
  });
  const base = await listeningUrl(child);
  return { base, stop: () => child.kill("SIGTERM") };
}

describe("amber serve", () => {
  let bin: string;
  let cleanup: () => void;
  let base: string;
  let stop: () => void;

  beforeAll(async () => {
    ({ bin, cleanup } = await buildTestCli());
    const dir = scratch({
      "tools.ts": TOOLS,
      "lib/helper.ts": "export const helper = (s: string) => s.toUpperCase() + '!';\n",
    });
    ({ base, stop } = await startServe(bin, dir, ["--sandbox"]));
  });
  afterAll(() => {
    stop?.();
    cleanup?.();
  });

  it("POST /<tool> answers the JSON result", async () => {
    const response = await fetch(`${base}/add`, { method: "POST", body: JSON.stringify({ a: 2, b: 3 }) });
    expect(response.status).toBe(200);
    expect(await response.json()).toBe(5);
    const shout = await fetch(`${base}/shout`, { method: "POST", body: '{"text":"hi"}' });
    expect(await shout.json()).toBe("HI!");
  });

  it("reports tool errors, unknown tools and bad bodies with {error:{code,message}}", async () => {
    const failed = await fetch(`${base}/fail`, { method: "POST", body: "{}" });
    expect(failed.status).toBe(500);
    expect(await failed.json()).toEqual({ error: { code: "tool_error", message: "nope" } });
    const missing = await fetch(`${base}/missing`, { method: "POST", body: "{}" });
    expect(missing.status).toBe(404);
    const bad = await fetch(`${base}/add`, { method: "POST", body: "{" });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBe("invalid_json");
  });

  it("GET /tools is the export-tools JSON", async () => {
    const response = await fetch(`${base}/tools`);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { tools: { name: string }[] };
    expect(body.tools.map((t: { name: string }) => t.name)).toEqual(["add", "shout", "fail", "viaMcp"]);
  });

  it("serves MCP over Streamable HTTP at /mcp for the official SDK client", async () => {
    const client = new Client({ name: "test", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)));
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toContain("add");
    const result = await client.callTool({ name: "add", arguments: { a: 4, b: 5 } });
    expect(result.content).toEqual([{ type: "text", text: "9" }]);
    await client.close();
  });

  it("/mcp refuses a foreign Origin with 403 and accepts loopback ones", async () => {
    const ping = (origin?: string) =>
      fetch(`${base}/mcp`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          ...(origin === undefined ? {} : { origin }),
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
      });
    for (const origin of ["https://evil.example", "null", "http://127.0.0.1.evil.example", "file://x"]) {
      const response = await ping(origin);
      expect(response.status, origin).toBe(403);
    }
    for (const origin of [undefined, "http://localhost:6274", "http://127.0.0.1:3000", "https://[::1]"]) {
      const response = await ping(origin);
      expect(response.status, origin).toBe(200);
      expect(await response.json()).toEqual({ jsonrpc: "2.0", id: 1, result: {} });
    }
  });

  it("POST /<tool> and GET /tools refuse a foreign Origin with 403 (a web page's request) and accept loopback ones", async () => {
    const add = (origin: string) =>
      fetch(`${base}/add`, { method: "POST", headers: { origin }, body: '{"a":1,"b":1}' });
    for (const origin of ["https://evil.example", "null", "http://127.0.0.1.evil.example"]) {
      const response = await add(origin);
      expect(response.status, origin).toBe(403);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe("forbidden_origin");
      expect((await fetch(`${base}/tools`, { headers: { origin } })).status, origin).toBe(403);
    }
    const local = await add("http://localhost:5173");
    expect(local.status).toBe(200);
    expect(await local.json()).toBe(2);
  });

  it("answers only loopback Host names (a page after a DNS rebinding names its own host)", async () => {
    const { request } = await import("node:http");
    const withHost = (path: string, host: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = request(`${base}${path}`, { headers: { host } }, (res) => {
          let body = "";
          res.on("data", (chunk) => {
            body += chunk;
          });
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        });
        req.on("error", reject);
        req.end();
      });
    for (const path of ["/tools", "/mcp"]) {
      const rebound = await withHost(path, "rebind.evil.example:9911");
      expect(rebound.status, path).toBe(403);
      expect(JSON.parse(rebound.body).error.code).toBe("forbidden_host");
    }
    for (const host of ["localhost:1234", "127.0.0.1", "[::1]:80"]) {
      expect((await withHost("/tools", host)).status, host).toBe(200);
    }
  });

  it("tool files can import amber:mcp and use its McpServer in memory", async () => {
    const response = await fetch(`${base}/viaMcp`, { method: "POST", body: '{"n":21}' });
    const body = (await response.json()) as {
      tools: { tools: unknown[] };
      result: unknown;
      resource: { contents: unknown[] };
      prompt: { messages: { content: { text: string } }[] };
      raw: unknown;
    };
    expect(body.tools.tools).toEqual([
      { name: "double", description: "Doubles n", inputSchema: { type: "object" } },
    ]);
    expect(body.result).toEqual({ content: [{ type: "text", text: "42" }], isError: false });
    expect(body.resource.contents[0]).toMatchObject({ uri: "mem://hello", text: "hello" });
    expect(body.prompt.messages[0]?.content.text).toBe("Hi amber");
    expect(body.raw).toEqual({ jsonrpc: "2.0", id: 9, result: {} });
  });

  it("exits 1 with the reason when the port is taken (its tool host must not keep it running)", () => {
    // `amber serve tools.ts --port 8787` beside `npm run dev` printed the error and then hung.
    const dir = scratch({ "tools.ts": TOOLS, "lib/helper.ts": "export const helper = (s: string) => s;\n" });
    const taken = new URL(base).port;
    const result = runCli(bin, ["serve", "--sandbox", "tools.ts", "--port", taken], { cwd: dir });
    expect(result.stderr).toMatch(/^error: amber serve: cannot listen: .*EADDRINUSE/m);
    expect(result.status).toBe(1);
  });

  it("the same tool file works in a session", async () => {
    const dir = scratch({
      "tools.ts": TOOLS,
      "lib/helper.ts": "export const helper = (s: string) => s + '?';\n",
    });
    const client = new LineClient(bin, ["session", "tools.ts"], { cwd: dir });
    expect((await client.call("shout", { text: "x" })).result).toBe("x?");
    await client.close();
  });
});

describe("amber serve as an app's function (AMBA_FUNCTION_SIGNING_SECRET)", () => {
  const SECRET = "amba_fsig_serve_test_secret";
  /** A second secret in the list (e.g. the function of a second project). */
  const SECOND = "amba_fsig_serve_test_second";
  let bin: string;
  let cleanup: () => void;
  let base: string;
  let stop: () => void;

  beforeAll(async () => {
    ({ bin, cleanup } = await buildTestCli());
    const dir = scratch({
      "tools.ts": `export function add({ a, b }: { a: number; b: number }) { return a + b; }
export function secretSeen() { return process.env.AMBA_FUNCTION_SIGNING_SECRET ?? null; }
`,
    });
    // Unrestricted: the tool could read every variable amber passes on.
    ({ base, stop } = await startServe(bin, dir, [], {
      AMBA_FUNCTION_SIGNING_SECRET: `${SECRET}, ${SECOND}`,
    }));
  });
  afterAll(() => {
    stop?.();
    cleanup?.();
  });

  /** A call as the platform sends it (src/functions/invoke.ts headers), signed by its own signer. */
  const signed = (
    tool: string,
    body: string,
    nowMs?: number,
    keys: SigningKeys = { secret: SECRET, previous: null },
  ) =>
    signUpstreamRequest(
      {
        url: `${base}/${tool}`,
        init: {
          method: "POST",
          headers: {
            "content-type": "application/json",
            "x-amba-project-id": "p-1",
            "x-amba-user-id": "u-1",
            "x-amba-user-email": "a@example.com",
            "x-amba-function": tool,
            "x-amba-function-version": "1",
            "x-amba-request-id": crypto.randomUUID(),
          },
          body,
        },
      },
      keys,
      nowMs,
    );
  const send = async (request: { url: string; init: RequestInit }) => {
    const response = await fetch(request.url, request.init);
    return { status: response.status, body: (await response.json()) as { error?: { message: string } } };
  };

  it("serves a call the platform signed, once", async () => {
    const request = await signed("add", '{"a":2,"b":40}');
    expect(await send(request)).toEqual({ status: 200, body: 42 });
    const replay = await send(request);
    expect(replay.status).toBe(401);
    expect(replay.body.error?.message).toBe("this signed request was already served");
  });

  it("refuses unsigned, tampered, stale and wrongly keyed calls with 401 invalid_signature", async () => {
    const unsigned = await send({ url: `${base}/add`, init: { method: "POST", body: '{"a":1,"b":1}' } });
    expect(unsigned.status).toBe(401);
    expect(unsigned.body.error?.message).toBe("no x-amba-signature header");
    const other = await signed("add", '{"a":1,"b":1}');
    const asVictim = { ...other.init.headers, "x-amba-user-id": "u-victim" };
    const tampered = await send({ url: other.url, init: { ...other.init, headers: asVictim } });
    expect(tampered.body.error?.message).toBe("the signature does not match");
    const swappedBody = await send({ url: other.url, init: { ...other.init, body: '{"a":1,"b":2}' } });
    expect(swappedBody.body.error?.message).toBe("the signature does not match");
    const stale = await send(await signed("add", '{"a":1,"b":1}', Date.now() - 10 * 60_000));
    expect(stale.body.error?.message).toContain("timestamp is more than 300 s");
    const wrongKey = await send(
      await signed("add", '{"a":1,"b":1}', undefined, { secret: "amba_fsig_other", previous: null }),
    );
    expect(wrongKey).toEqual({
      status: 401,
      body: { error: { code: "invalid_signature", message: "the signature does not match" } },
    });
  });

  it("takes several secrets: a call passes when any v1 matches any of them, each served once", async () => {
    const second = await signed("add", '{"a":1,"b":2}', undefined, { secret: SECOND, previous: null });
    expect(await send(second)).toEqual({ status: 200, body: 3 });
    // A rotation's overlap: the new secret (unknown here) first, the old one (known) second.
    const overlap = {
      secret: "amba_fsig_new_unknown",
      previous: { secret: SECRET, expiresAtMs: Date.now() + 60_000 },
    };
    const request = await signed("add", '{"a":2,"b":2}', undefined, overlap);
    const header = request.init.headers["x-amba-signature"] as string;
    expect(header.split(",v1=")).toHaveLength(3);
    expect(await send(request)).toEqual({ status: 200, body: 4 });
    // A replay that drops the signature nobody here matches is still a replay.
    const [t, , v1Old] = header.split(",");
    const dropped = { ...request.init.headers, "x-amba-signature": `${t},${v1Old}` };
    const replay = await send({ url: request.url, init: { ...request.init, headers: dropped } });
    expect(replay).toEqual({
      status: 401,
      body: { error: { code: "invalid_signature", message: "this signed request was already served" } },
    });
  });

  it("refuses malformed signature headers with 401 and the reason, and keeps serving", async () => {
    const request = await signed("add", '{"a":1,"b":1}');
    const [t, v1] = (request.init.headers["x-amba-signature"] as string).split(",");
    const malformed = "x-amba-signature is not t=<unix seconds>,v1=<64 hex digits>[,v1=…]";
    const cases: Array<[string, string]> = [
      ["", malformed],
      [`${t}`, malformed],
      [`${t},v1=`, malformed],
      [`${t},v1=${"z".repeat(64)}`, malformed],
      [`${t},${v1},`, malformed],
      [[t, ...Array(9).fill(v1)].join(","), "x-amba-signature carries more than 8 v1 signatures"],
    ];
    for (const [value, message] of cases) {
      const headers = { ...request.init.headers, "x-amba-signature": value };
      expect(await send({ url: request.url, init: { ...request.init, headers } }), value).toEqual({
        status: 401,
        body: { error: { code: "invalid_signature", message } },
      });
    }
    expect(await send(request)).toEqual({ status: 200, body: 2 });
  });

  it("reads the list from the environment, refusing empty entries and more than 8 secrets", () => {
    expect(parseSigningSecrets(" a ,b")).toEqual(["a", "b"]);
    expect(() => parseSigningSecrets("a,,b")).toThrow("AMBA_FUNCTION_SIGNING_SECRET has an empty entry");
    expect(() => parseSigningSecrets("a,")).toThrow("has an empty entry");
    expect(() => parseSigningSecrets(Array(9).fill("s").join(","))).toThrow("holds more than 8 secrets");
  });

  it("does not pass the secret on to the tool's process", async () => {
    expect(await send(await signed("secretSeen", "{}"))).toEqual({ status: 200, body: null });
  });
});
