import { describe, expect, it } from "vitest";
import {
  createMcpHandlers,
  HEADER_MISMATCH,
  handleMcpHttpRequest,
  INVALID_PARAMS,
  INVALID_REQUEST,
  METHOD_NOT_FOUND,
  PARSE_ERROR,
  UNSUPPORTED_PROTOCOL_VERSION,
} from "../../src/mcp/index.ts";

const handlers = createMcpHandlers<null>({
  serverInfo: { name: "h", version: "1" },
  tools: {
    list: () => [{ name: "get", inputSchema: { type: "object" } }],
    async call(name, args) {
      if (name !== "get") throw new Error("unreachable in these tests");
      return { value: { args } };
    },
  },
});

const BASE = { "content-type": "application/json", accept: "application/json, text/event-stream" };
const meta2026 = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": {},
};

function post(body: unknown, headers: Record<string, string> = {}, init: RequestInit = {}) {
  return new Request("http://localhost/mcp", {
    method: "POST",
    headers: { ...BASE, ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
    ...init,
  });
}

const validateOrigin = (origin: string) => new URL(origin).hostname === "localhost";
const serve = (request: Request, maxBodyBytes?: number) =>
  handleMcpHttpRequest(request, { handlers, ctx: null, validateOrigin, maxBodyBytes });

const req = (method: string, params?: object, id: number | string = 1) => ({
  jsonrpc: "2.0",
  id,
  method,
  params,
});

interface Case {
  name: string;
  request: () => Request;
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

const cases: Case[] = [
  {
    name: "POST initialize → 200 JSON",
    request: () => post(req("initialize", { protocolVersion: "2025-06-18", capabilities: {} })),
    status: 200,
    body: { id: 1, result: { protocolVersion: "2025-06-18" } },
    headers: { "content-type": "application/json" },
  },
  {
    name: "GET → 405 with Allow",
    request: () => new Request("http://localhost/mcp", { headers: { accept: "text/event-stream" } }),
    status: 405,
    headers: { allow: "POST" },
  },
  {
    name: "DELETE → 405 with Allow",
    request: () => new Request("http://localhost/mcp", { method: "DELETE" }),
    status: 405,
    headers: { allow: "POST" },
  },
  {
    name: "Accept without JSON → 406",
    request: () => post(req("ping"), { accept: "text/event-stream" }),
    status: 406,
  },
  { name: "Accept text/html → 406", request: () => post(req("ping"), { accept: "text/html" }), status: 406 },
  { name: "Accept */* → 200", request: () => post(req("ping"), { accept: "*/*" }), status: 200 },
  {
    name: "non-JSON content type → 415",
    request: () => post(req("ping"), { "content-type": "text/plain" }),
    status: 415,
  },
  {
    name: "notification only → 202 empty",
    request: () => post({ jsonrpc: "2.0", method: "notifications/initialized" }),
    status: 202,
  },
  {
    name: "a client's response → 202",
    request: () => post({ jsonrpc: "2.0", id: 7, result: {} }),
    status: 202,
  },
  {
    name: "malformed JSON → 400 with -32700",
    request: () => post("{oops"),
    status: 400,
    body: { jsonrpc: "2.0", id: null, error: { code: PARSE_ERROR, message: "Parse error" } },
  },
  {
    name: "invalid request object → 200 with -32600",
    request: () => post({ jsonrpc: "2.0", id: 3 }),
    status: 200,
    body: { id: 3, error: { code: INVALID_REQUEST } },
  },
  {
    name: "unsupported MCP-Protocol-Version → 400 -32022 with the request id",
    request: () => post(req("tools/list", {}, 9), { "mcp-protocol-version": "2099-01-01" }),
    status: 400,
    body: { id: 9, error: { code: UNSUPPORTED_PROTOCOL_VERSION, data: { requested: "2099-01-01" } } },
  },
  {
    name: "missing MCP-Protocol-Version = 2025-03-26 (no structuredContent)",
    request: () => post(req("tools/call", { name: "get", arguments: { a: 1 } })),
    status: 200,
    body: { result: { content: [{ type: "text", text: '{"args":{"a":1}}' }], isError: false } },
  },
  {
    name: "batch allowed without header (2025-03-26)",
    request: () =>
      post([req("ping", {}, 1), { jsonrpc: "2.0", method: "notifications/initialized" }, req("nope", {}, 2)]),
    status: 200,
    body: [
      { jsonrpc: "2.0", id: 1, result: {} },
      { jsonrpc: "2.0", id: 2, error: { code: METHOD_NOT_FOUND, message: "Method not found: nope" } },
    ],
  },
  {
    name: "batch allowed with header 2025-03-26",
    request: () => post([req("ping")], { "mcp-protocol-version": "2025-03-26" }),
    status: 200,
    body: [{ jsonrpc: "2.0", id: 1, result: {} }],
  },
  {
    name: "notification-only batch → 202",
    request: () => post([{ jsonrpc: "2.0", method: "notifications/initialized" }]),
    status: 202,
  },
  {
    name: "batch served for 2025-06-18 (as the official SDK's server does; DESIGN.md's batches)",
    request: () => post([req("ping", {}, 1), req("ping", {}, 2)], { "mcp-protocol-version": "2025-06-18" }),
    status: 200,
    body: [
      { jsonrpc: "2.0", id: 1, result: {} },
      { jsonrpc: "2.0", id: 2, result: {} },
    ],
  },
  {
    name: "batch served for 2025-11-25",
    request: () => post([req("ping")], { "mcp-protocol-version": "2025-11-25" }),
    status: 200,
    body: [{ jsonrpc: "2.0", id: 1, result: {} }],
  },
  {
    name: "Origin allowed → 200",
    request: () => post(req("ping"), { origin: "http://localhost:3000" }),
    status: 200,
  },
  {
    name: "Origin refused by the hook → 403",
    request: () => post(req("ping"), { origin: "http://evil.example.com" }),
    status: 403,
  },
  {
    name: "unknown method (legacy) → 200 with -32601",
    request: () => post(req("nope"), { "mcp-protocol-version": "2025-11-25" }),
    status: 200,
    body: { error: { code: METHOD_NOT_FOUND } },
  },
  {
    name: "tools/call with structuredContent under 2025-06-18",
    request: () =>
      post(req("tools/call", { name: "get", arguments: {} }), { "mcp-protocol-version": "2025-06-18" }),
    status: 200,
    body: { result: { structuredContent: { args: {} } } },
  },
  // 2026-07-28
  {
    name: "2026: tools/list with matching headers → 200",
    request: () =>
      post(req("tools/list", { _meta: meta2026 }), {
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/list",
      }),
    status: 200,
    body: { result: { resultType: "complete", tools: [{ name: "get" }] } },
  },
  {
    name: "2026: tools/call with Mcp-Name (whitespace trimmed) → 200",
    request: () =>
      post(req("tools/call", { name: "get", arguments: {}, _meta: meta2026 }), {
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "  get ",
      }),
    status: 200,
    body: { result: { resultType: "complete", structuredContent: { args: {} } } },
  },
  {
    name: "2026: missing Mcp-Method → 400 -32020",
    request: () => post(req("tools/list", { _meta: meta2026 }, 5), { "mcp-protocol-version": "2026-07-28" }),
    status: 400,
    body: { id: 5, error: { code: HEADER_MISMATCH } },
  },
  {
    name: "2026: Mcp-Method differs (case-sensitive) → 400 -32020",
    request: () =>
      post(req("tools/list", { _meta: meta2026 }), {
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "TOOLS/LIST",
      }),
    status: 400,
    body: { error: { code: HEADER_MISMATCH } },
  },
  {
    name: "2026: missing Mcp-Name on tools/call → 400 -32020",
    request: () =>
      post(req("tools/call", { name: "get", _meta: meta2026 }), {
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
      }),
    status: 400,
    body: { error: { code: HEADER_MISMATCH } },
  },
  {
    name: "2026: wrong Mcp-Name → 400 -32020",
    request: () =>
      post(req("tools/call", { name: "get", _meta: meta2026 }), {
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "other",
      }),
    status: 400,
    body: { error: { code: HEADER_MISMATCH } },
  },
  {
    name: "2026: _meta version differs from header → 400 -32020",
    request: () =>
      post(req("tools/list", { _meta: { ...meta2026, "io.modelcontextprotocol/protocolVersion": "v9" } }), {
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/list",
      }),
    status: 400,
    body: { error: { code: HEADER_MISMATCH } },
  },
  {
    name: "2026: missing _meta → 400 -32602 with the id",
    request: () =>
      post(req("tools/list", {}, 77), { "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list" }),
    status: 400,
    body: { id: 77, error: { code: INVALID_PARAMS } },
  },
  {
    name: "2026: _meta without client capabilities → 400 -32602",
    request: () =>
      post(req("tools/list", { _meta: { "io.modelcontextprotocol/protocolVersion": "2026-07-28" } }), {
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/list",
      }),
    status: 400,
    body: { error: { code: INVALID_PARAMS } },
  },
  {
    name: "2026: unknown method → 404 -32601",
    request: () =>
      post(req("unknown/method", { _meta: meta2026 }), {
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "unknown/method",
      }),
    status: 404,
    body: { error: { code: METHOD_NOT_FOUND } },
  },
  {
    name: "2026: initialize is removed → 404 -32601",
    request: () =>
      post(req("initialize", { protocolVersion: "2025-11-25", _meta: meta2026 }), {
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "initialize",
      }),
    status: 404,
    body: { error: { code: METHOD_NOT_FOUND } },
  },
  {
    name: "2026: batches refused",
    request: () => post([req("tools/list", { _meta: meta2026 })], { "mcp-protocol-version": "2026-07-28" }),
    status: 400,
  },
  {
    name: "2026: server/discover → 200 with supportedVersions",
    request: () =>
      post(req("server/discover", { _meta: meta2026 }), {
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "server/discover",
      }),
    status: 200,
    body: { result: { supportedVersions: expect.arrayContaining(["2026-07-28", "2025-11-25"]) } },
  },
];

describe("Streamable HTTP rules", () => {
  it.each(cases)("$name", async ({ request, status, body, headers }) => {
    const response = await serve(request());
    expect(response.status).toBe(status);
    for (const [name, value] of Object.entries(headers ?? {})) expect(response.headers.get(name)).toBe(value);
    const text = await response.text();
    if (status === 202) expect(text).toBe("");
    else expect(response.headers.get("content-type")).toBe("application/json");
    if (body !== undefined) expect(JSON.parse(text)).toMatchObject(body as object);
  });

  it("refuses a body over the limit by Content-Length with 413", async () => {
    const body = JSON.stringify(req("tools/call", { name: "get", arguments: { pad: "x".repeat(2000) } }));
    const response = await serve(post(body, { "content-length": String(body.length) }), 1000);
    expect(response.status).toBe(413);
  });

  it("refuses a body over the limit whose Content-Length understates it with 413", async () => {
    const body = JSON.stringify(req("tools/call", { name: "get", arguments: { pad: "x".repeat(2000) } }));
    const request = post(body, { "content-length": "10" });
    expect(request.headers.get("content-length")).toBe("10");
    expect((await serve(request, 1000)).status).toBe(413);
  });

  it("reads a body with a malformed Content-Length through the capped stream reader", async () => {
    const body = JSON.stringify(req("ping"));
    expect((await serve(post(body, { "content-length": "+12" }), 1000)).status).toBe(200);
    expect(
      (
        await serve(
          post(JSON.stringify(req("tools/call", { name: "get", arguments: { pad: "x".repeat(2000) } })), {
            "content-length": "1e2",
          }),
          1000,
        )
      ).status,
    ).toBe(413);
  });

  it("refuses a streamed body over the limit with 413", async () => {
    const chunk = new TextEncoder().encode("x".repeat(600));
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(chunk);
        controller.enqueue(chunk);
        controller.close();
      },
    });
    const request = new Request("http://localhost/mcp", {
      method: "POST",
      headers: BASE,
      body: stream,
      // @ts-expect-error streamed bodies need duplex in Node's fetch
      duplex: "half",
    });
    expect((await serve(request, 1000)).status).toBe(413);
  });

  it("accepts a body exactly at the limit", async () => {
    const body = JSON.stringify(req("ping"));
    expect((await serve(post(body), body.length)).status).toBe(200);
  });

  it("never leaks internals: an unexpected handler error is a generic -32603", async () => {
    const crashing = createMcpHandlers<null>({
      serverInfo: { name: "h", version: "1" },
      tools: {
        list: () => {
          throw new Error("db password in message");
        },
        call: async () => ({ value: null }),
      },
    });
    const response = await handleMcpHttpRequest(post(req("tools/list")), { handlers: crashing, ctx: null });
    const text = await response.text();
    expect(response.status).toBe(200);
    expect(JSON.parse(text)).toEqual({
      jsonrpc: "2.0",
      id: 1,
      error: { code: -32603, message: "Internal error" },
    });
  });
});
