/**
 * `amber session <file>`: newline-delimited JSON-RPC on stdin/stdout with the contract's own
 * semantics — `tools/call` answers with the tool's raw return value, a tool that threw is -32000.
 * One reply line per request, each written as soon as it is ready (other requests never wait for a
 * running tool); `tools/call`s run one at a time, in arrival order, and `notifications/cancelled`
 * ends one (-32800).
 */
import {
  type DecodedItem,
  dispatch,
  failure,
  type Handlers,
  INVALID_PARAMS,
  INVALID_REQUEST,
  type JsonRpcResponse,
  RpcError,
  serveStdioLoop,
} from "../../mcp/index.ts";
import { CallRegistry, type Tracked } from "../cancellation.ts";
import { defineCommand } from "../command.ts";
import {
  closeIfStdoutFails,
  openToolServer,
  replyOrderGraceMs,
  SERVER_INFO,
  TOOL_SERVER_OPTIONS,
  type ToolServer,
  type ToolServerArgs,
  writeStdout,
} from "../tool-server.ts";

/** JSON-RPC code of a tool that threw (the contract's, not MCP's). */
export const TOOL_ERROR = -32000;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** JSON-RPC code of a request cancelled by `notifications/cancelled` (LSP's RequestCancelled). */
export const REQUEST_CANCELLED = -32800;

/** The session's method table. */
export function sessionHandlers(server: ToolServer): Handlers<Tracked> {
  const callTool = async (params: unknown, call: Tracked) => {
    const p = isObject(params) ? params : {};
    const name = typeof p.name === "string" ? p.name : typeof p.tool === "string" ? p.tool : "";
    const args = p.arguments ?? p.args ?? {};
    // An unknown name is answered (and audited) in its turn, like any other call.
    const outcome = await server.call(name, args, call?.signal);
    if (call?.signal.aborted) throw new RpcError(REQUEST_CANCELLED, "request cancelled");
    if (!outcome.ok) throw new RpcError("invalid" in outcome ? INVALID_PARAMS : TOOL_ERROR, outcome.error);
    return outcome.value;
  };
  const listTools = () => ({ tools: server.tools });
  return {
    initialize: () => ({
      protocolVersion: "2024-11-05",
      capabilities: { tools: {}, prompts: {}, resources: {} },
      serverInfo: SERVER_INFO,
    }),
    ping: () => ({}),
    "tools/list": listTools,
    list: listTools,
    "tools/call": callTool,
    call: callTool,
    "notifications/cancelled": () => undefined,
    "prompts/list": () => ({ prompts: [] }),
    "resources/list": () => ({ resources: [] }),
    "resources/templates/list": () => ({ resourceTemplates: [] }),
  };
}

/**
 * Answers one decoded line. Accepts what the original runtime accepted on top of strict JSON-RPC:
 * a missing `jsonrpc` member, the `{"tool","args"}` shorthand and a null `id` (echoed).
 */
export async function answerLine(
  item: DecodedItem,
  handlers: Handlers<Tracked>,
  calls: CallRegistry = new CallRegistry(),
): Promise<JsonRpcResponse | null> {
  if ("error" in item) return failure(null, item.error.code, item.error.message);
  let message = item.message;
  if (isObject(message)) {
    message = { jsonrpc: "2.0", ...message };
    const m = message as Record<string, unknown>;
    if (typeof m.tool === "string" && m.method === undefined) {
      message = {
        jsonrpc: m.jsonrpc,
        id: m.id,
        method: "tools/call",
        params: { name: m.tool, arguments: m.args ?? {} },
      };
    }
    if ((message as Record<string, unknown>).method === "") {
      const id = (message as Record<string, unknown>).id;
      return failure(
        typeof id === "string" || typeof id === "number" ? id : null,
        INVALID_REQUEST,
        "missing method",
      );
    }
    // JSON-RPC 2.0 allows a null id (the MCP core does not): answer it, echoing null.
    const request = message as Record<string, unknown>;
    if (request.id === null && typeof request.method === "string") {
      const response = await dispatch({ ...request, id: 0 }, handlers, null);
      return response === null ? null : ({ ...response, id: null } as JsonRpcResponse);
    }
  }
  const call = calls.track(message);
  try {
    return await dispatch(message, handlers, call);
  } finally {
    calls.settle(call);
  }
}

/** The `session` command. */
export const sessionCommand = defineCommand<ToolServerArgs>({
  meta: {
    name: "session",
    description: "Serve a tool file as newline-delimited JSON-RPC on stdin/stdout.",
    usage: "amber session [permission flags] [--isolate-per-call] <file>",
  },
  options: TOOL_SERVER_OPTIONS,
  maxPositionals: 1,
  async run(args) {
    const { server, warm } = await openToolServer("session", args.positionals[0], args);
    closeIfStdoutFails(() => server.close());
    const handlers = sessionHandlers(server);
    const calls = new CallRegistry();
    await serveStdioLoop({
      read: process.stdin,
      write: writeStdout,
      afterFirstChunk: warm,
      replyOrderGraceMs: replyOrderGraceMs(),
      answer: (item) => answerLine(item, handlers, calls),
      framing: "ndjson",
    });
    server.close();
    return 0;
  },
});
