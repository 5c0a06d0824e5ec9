import { describe, expect, it } from "vitest";
import {
  createMcpHandlers,
  dispatch,
  INVALID_PARAMS,
  type McpRequestInfo,
  type McpSession,
  METHOD_NOT_FOUND,
  MISSING_CLIENT_CAPABILITY,
  RpcError,
  renderToolDefinition,
  renderToolResult,
  requireClientCapability,
  SUPPORTED_PROTOCOL_VERSIONS,
  type ToolProvider,
  UNSUPPORTED_PROTOCOL_VERSION,
} from "../../src/mcp/index.ts";

const seen: McpRequestInfo[] = [];
const provider: ToolProvider<{ user: string }> = {
  list: (ctx) => [
    { name: "b_tool", description: `for ${ctx.user}`, inputSchema: { type: "object" } },
    {
      name: "a_tool",
      title: "A",
      inputSchema: { type: "object" },
      outputSchema: { type: "object" },
      annotations: { readOnlyHint: true },
    },
  ],
  async call(name, args, _ctx, info) {
    seen.push(info);
    if (name === "a_tool") return { value: { got: args } };
    if (name === "b_tool") return { value: "plain text" };
    throw new RpcError(INVALID_PARAMS, `Unknown tool: ${name}`);
  },
};
const handlers = createMcpHandlers({
  serverInfo: { name: "srv", version: "1.2.3" },
  instructions: "use tools",
  tools: provider,
});
const ctx = { user: "u1" };
const meta2026 = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": {},
};

async function call(
  method: string,
  params?: unknown,
  transport?: { protocolVersion?: string; session?: McpSession },
) {
  return dispatch({ jsonrpc: "2.0", id: 1, method, params }, handlers, ctx, { transport });
}

describe("initialize: version negotiation", () => {
  const cases: [unknown, string][] = [
    ["2024-11-05", "2024-11-05"],
    ["2025-03-26", "2025-03-26"],
    ["2025-06-18", "2025-06-18"],
    ["2025-11-25", "2025-11-25"],
    ["2026-07-28", "2025-11-25"],
    ["1999-01-01", "2025-11-25"],
    ["garbage", "2025-11-25"],
  ];
  it.each(cases)("requested %s → %s", async (requested, answered) => {
    const response = await call("initialize", {
      protocolVersion: requested,
      capabilities: {},
      clientInfo: { name: "c", version: "1" },
    });
    expect(response).toEqual({
      jsonrpc: "2.0",
      id: 1,
      result: {
        protocolVersion: answered,
        capabilities: { tools: {}, prompts: {}, resources: {} },
        serverInfo: { name: "srv", version: "1.2.3" },
        instructions: "use tools",
      },
    });
  });

  it("rejects a missing protocolVersion with -32602", async () => {
    expect(await call("initialize", {})).toMatchObject({ error: { code: INVALID_PARAMS } });
  });

  it("stores the negotiated version in the stdio session and later requests use it", async () => {
    const session: McpSession = {};
    await call(
      "initialize",
      { protocolVersion: "2024-11-05", capabilities: { roots: {} }, clientInfo: { name: "c" } },
      { session },
    );
    expect(session).toEqual({
      protocolVersion: "2024-11-05",
      clientCapabilities: { roots: {} },
      clientInfo: { name: "c" },
    });
    const result = await call("tools/call", { name: "a_tool", arguments: {} }, { session });
    expect(result).toMatchObject({ result: { isError: false } });
    expect((result as { result: object }).result).not.toHaveProperty("structuredContent");
    expect(seen.at(-1)?.protocolVersion).toBe("2024-11-05");
  });
});

describe("simple methods", () => {
  const cases: [string, unknown][] = [
    ["ping", {}],
    ["prompts/list", { prompts: [] }],
    ["resources/list", { resources: [] }],
    ["resources/templates/list", { resourceTemplates: [] }],
  ];
  it.each(cases)("%s", async (method, result) => {
    expect(await call(method)).toEqual({ jsonrpc: "2.0", id: 1, result });
  });

  it("notifications/initialized is accepted and never answered", async () => {
    expect(await dispatch({ jsonrpc: "2.0", method: "notifications/initialized" }, handlers, ctx)).toBeNull();
  });

  it("unknown methods are -32601", async () => {
    expect(await call("sampling/createMessage")).toMatchObject({ error: { code: METHOD_NOT_FOUND } });
  });
});

describe("tools/list", () => {
  it("keeps the provider's order and shows every field for 2025-06-18+", async () => {
    const response = await call("tools/list", {}, { protocolVersion: "2025-06-18" });
    expect(response).toEqual({
      jsonrpc: "2.0",
      id: 1,
      result: {
        tools: [
          { name: "b_tool", description: "for u1", inputSchema: { type: "object" } },
          {
            name: "a_tool",
            title: "A",
            inputSchema: { type: "object" },
            outputSchema: { type: "object" },
            annotations: { readOnlyHint: true },
          },
        ],
      },
    });
  });

  const fieldCases: [string, string[]][] = [
    ["2024-11-05", ["inputSchema", "name"]],
    ["2025-03-26", ["annotations", "inputSchema", "name"]],
    ["2025-06-18", ["annotations", "inputSchema", "name", "outputSchema", "title"]],
    ["2025-11-25", ["annotations", "inputSchema", "name", "outputSchema", "title"]],
  ];
  it.each(fieldCases)("a tool under %s has fields %j", (version, fields) => {
    const tool = renderToolDefinition(
      { name: "t", title: "T", inputSchema: {}, outputSchema: {}, annotations: {} },
      version,
    );
    expect(Object.keys(tool).sort()).toEqual(fields);
  });

  it("rejects a cursor it never issued", async () => {
    expect(await call("tools/list", { cursor: "abc" })).toMatchObject({ error: { code: INVALID_PARAMS } });
  });
});

describe("tools/call", () => {
  const errorCases: [string, unknown, string][] = [
    ["unknown tool", { name: "zzz" }, "Unknown tool: zzz"],
    ["missing name", { arguments: {} }, "Invalid params: tools/call needs a string `name`"],
    [
      "non-object arguments",
      { name: "a_tool", arguments: [1] },
      "Invalid params: `arguments` must be an object",
    ],
  ];
  it.each(errorCases)("%s → -32602", async (_name, params, message) => {
    expect(await call("tools/call", params)).toEqual({
      jsonrpc: "2.0",
      id: 1,
      error: { code: INVALID_PARAMS, message },
    });
  });

  it("renders a string as-is and an object with structuredContent (2025-06-18)", async () => {
    expect(await call("tools/call", { name: "b_tool" }, { protocolVersion: "2025-06-18" })).toEqual({
      jsonrpc: "2.0",
      id: 1,
      result: { content: [{ type: "text", text: "plain text" }], isError: false },
    });
    expect(
      await call("tools/call", { name: "a_tool", arguments: { x: 1 } }, { protocolVersion: "2025-06-18" }),
    ).toEqual({
      jsonrpc: "2.0",
      id: 1,
      result: {
        content: [{ type: "text", text: '{"got":{"x":1}}' }],
        isError: false,
        structuredContent: { got: { x: 1 } },
      },
    });
  });
});

describe("renderToolResult", () => {
  const cases: [string, unknown, string, boolean | undefined, object][] = [
    ["string", "hi", "2025-11-25", undefined, { content: [{ type: "text", text: "hi" }], isError: false }],
    ["number", 42, "2025-11-25", undefined, { content: [{ type: "text", text: "42" }], isError: false }],
    ["null", null, "2025-11-25", undefined, { content: [{ type: "text", text: "null" }], isError: false }],
    [
      "undefined",
      undefined,
      "2025-11-25",
      undefined,
      { content: [{ type: "text", text: "null" }], isError: false },
    ],
    [
      "array (no structuredContent)",
      [1, 2],
      "2025-11-25",
      undefined,
      { content: [{ type: "text", text: "[1,2]" }], isError: false },
    ],
    [
      "object, 2025-06-18",
      { a: 1 },
      "2025-06-18",
      undefined,
      { content: [{ type: "text", text: '{"a":1}' }], isError: false, structuredContent: { a: 1 } },
    ],
    [
      "object, 2025-03-26",
      { a: 1 },
      "2025-03-26",
      undefined,
      { content: [{ type: "text", text: '{"a":1}' }], isError: false },
    ],
    ["tool error", "boom", "2025-11-25", true, { content: [{ type: "text", text: "boom" }], isError: true }],
  ];
  it.each(cases)("%s", (_name, value, version, isError, expected) => {
    expect(renderToolResult({ value, isError }, version)).toEqual(expected);
  });

  it("uses provider-built content items when given", () => {
    const content = [{ type: "image", data: "AAA", mimeType: "image/png" }];
    expect(renderToolResult({ value: null, content }, "2025-11-25")).toEqual({ content, isError: false });
  });
});

describe("2026-07-28: server/discover and per-request _meta", () => {
  it("server/discover lists versions, capabilities, identity and caching hints", async () => {
    expect(await call("server/discover", { _meta: meta2026 })).toEqual({
      jsonrpc: "2.0",
      id: 1,
      result: {
        supportedVersions: [...SUPPORTED_PROTOCOL_VERSIONS],
        capabilities: { tools: {}, prompts: {}, resources: {} },
        serverInfo: { name: "srv", version: "1.2.3" },
        instructions: "use tools",
        resultType: "complete",
        cacheScope: "private",
        ttlMs: 0,
        _meta: { "io.modelcontextprotocol/serverInfo": { name: "srv", version: "1.2.3" } },
      },
    });
  });

  it("serves tools/call with resultType, structuredContent and the request's client info", async () => {
    const response = await call("tools/call", {
      name: "a_tool",
      arguments: {},
      _meta: { ...meta2026, "io.modelcontextprotocol/clientInfo": { name: "cc" } },
    });
    expect(response).toMatchObject({
      result: { resultType: "complete", structuredContent: { got: {} }, isError: false },
    });
    expect(seen.at(-1)).toMatchObject({
      protocolVersion: "2026-07-28",
      stateless: true,
      clientInfo: { name: "cc" },
    });
  });

  it("adds caching hints to list results", async () => {
    expect(await call("tools/list", { _meta: meta2026 })).toMatchObject({
      result: { resultType: "complete", cacheScope: "private", ttlMs: 0 },
    });
  });

  const errorCases: [string, string, unknown, number][] = [
    [
      "unsupported _meta version → -32022",
      "tools/list",
      { _meta: { "io.modelcontextprotocol/protocolVersion": "v9" } },
      UNSUPPORTED_PROTOCOL_VERSION,
    ],
    [
      "missing client capabilities → -32602",
      "tools/list",
      { _meta: { "io.modelcontextprotocol/protocolVersion": "2026-07-28" } },
      INVALID_PARAMS,
    ],
    [
      "initialize is removed → -32601",
      "initialize",
      { protocolVersion: "2025-11-25", _meta: meta2026 },
      METHOD_NOT_FOUND,
    ],
    ["ping is removed → -32601", "ping", { _meta: meta2026 }, METHOD_NOT_FOUND],
  ];
  it.each(errorCases)("%s", async (_name, method, params, code) => {
    expect(await call(method, params)).toMatchObject({ error: { code } });
  });

  it("the -32022 error lists the supported versions and echoes the request", async () => {
    const response = await call("server/discover", {
      _meta: { ...meta2026, "io.modelcontextprotocol/protocolVersion": "v9" },
    });
    expect(response).toMatchObject({
      error: {
        code: UNSUPPORTED_PROTOCOL_VERSION,
        data: { supported: [...SUPPORTED_PROTOCOL_VERSIONS], requested: "v9" },
      },
    });
  });

  it("a transport saying 2026-07-28 requires _meta", async () => {
    expect(await call("tools/list", {}, { protocolVersion: "2026-07-28" })).toMatchObject({
      error: { code: INVALID_PARAMS },
    });
  });

  it("requireClientCapability answers -32021 naming the capability", async () => {
    const capHandlers = createMcpHandlers({
      serverInfo: { name: "s", version: "1" },
      tools: {
        list: () => [],
        async call(_n, _a, _c, info) {
          requireClientCapability(info, "sampling");
          return { value: "ok" };
        },
      },
    });
    const message = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "x", _meta: meta2026 } };
    expect(await dispatch(message, capHandlers, null)).toMatchObject({
      error: { code: MISSING_CLIENT_CAPABILITY, data: { requiredCapabilities: { sampling: {} } } },
    });
    const declared = {
      ...message,
      params: {
        name: "x",
        _meta: { ...meta2026, "io.modelcontextprotocol/clientCapabilities": { sampling: {} } },
      },
    };
    expect(await dispatch(declared, capHandlers, null)).toMatchObject({
      result: { content: [{ text: "ok" }] },
    });
  });
});
