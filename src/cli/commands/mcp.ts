/**
 * `amber mcp <file>`: an MCP server over stdio on the protocol core — Content-Length framing or
 * newline-delimited JSON, detected per connection and answered in kind, version negotiation
 * (incl. `server/discover`). `--inspect` prints the tool table and exits.
 */
import {
  createMcpHandlers,
  dispatchPayload,
  failure,
  type Handlers,
  INVALID_PARAMS,
  type McpSession,
  RpcError,
  serveStdioLoop,
  supportsStructuredContent,
} from "../../mcp/index.ts";
import { printable } from "../../printable.ts";
import { CallRegistry } from "../cancellation.ts";
import { defineCommand } from "../command.ts";
import { renderToolTable } from "../inspect.ts";
import type { CancelSignal } from "../sandbox/tool-process.ts";
import {
  closeIfStdoutFails,
  loadTools,
  MODEL_FACING_OPTIONS,
  openToolServer,
  replyOrderGraceMs,
  resolveEntry,
  SERVER_INFO,
  type ToolServer,
  type ToolServerArgs,
  watchToolFile,
  writeStdout,
} from "../tool-server.ts";

/** A tool's value as the contract's one text item says it: strings as-is, other values as JSON. */
function contractText(value: unknown): string {
  return typeof value === "string" ? value : (JSON.stringify(value) ?? "null");
}

/** Per-request context of a tool call: the signal that cancels it (stdio). */
export type CallContext = { signal?: CancelSignal } | null;

/**
 * MCP handlers over a loaded tool file. `listChanged`: declare that the tool list may change
 * (`--watch` on a connection that can be notified). Where the negotiated version knows
 * `outputSchema` (2025-06-18 on), a result is checked against the tool's before it goes out as
 * `structuredContent`: one that breaks it is an `isError` result, never content a client's
 * validator would reject.
 */
export function mcpHandlers(server: ToolServer, listChanged = false): Handlers<CallContext> {
  const handlers = createMcpHandlers<CallContext>({
    serverInfo: SERVER_INFO,
    tools: {
      list: () => server.mcpTools,
      async call(name, args, ctx, info) {
        if (!server.has(name)) {
          // Audited like any call (a Deny line), then refused as the specification says.
          await server.call(name, args);
          throw new RpcError(INVALID_PARAMS, `Unknown tool: ${name}`);
        }
        const outcome = await server.call(name, args, ctx?.signal);
        if (!outcome.ok) return { value: outcome.error, isError: true };
        // The contract's `{content:[{type:"text", text}], isError}`: `structuredContent` only for a
        // tool that declares an `outputSchema` (the protocol core adds it for any object otherwise).
        if (!server.declaresOutput(name)) return { value: contractText(outcome.value) };
        const problem = supportsStructuredContent(info.protocolVersion)
          ? server.checkResult(name, outcome.value)
          : undefined;
        if (problem === undefined) return { value: outcome.value };
        return {
          value: `tool \`${name}\` returned a value that does not match its declared return type: ${problem}`,
          isError: true,
        };
      },
    },
  });
  const initialize = handlers.initialize!;
  // The original server answered an initialize without a version; keep that working.
  handlers.initialize = async (params, ctx, message, transport) => {
    const p = typeof params === "object" && params !== null && !Array.isArray(params) ? params : {};
    const withVersion = "protocolVersion" in p ? p : { ...p, protocolVersion: "2024-11-05" };
    const result = (await initialize(withVersion, ctx, message, transport)) as {
      capabilities?: Record<string, object>;
    };
    if (listChanged && result.capabilities)
      result.capabilities = {
        ...result.capabilities,
        tools: { ...result.capabilities.tools, listChanged: true },
      };
    return result;
  };
  return handlers;
}

interface McpArgs extends ToolServerArgs {
  inspect?: boolean;
}

/** The `mcp` command. */
export const mcpCommand = defineCommand<McpArgs>({
  meta: {
    name: "mcp",
    description: "Serve a tool file as an MCP server over stdio.",
    usage: "amber mcp [permission flags] [--isolate-per-call] [--untyped] [--watch] [--inspect] <file>",
  },
  maxPositionals: 1,
  options: {
    ...MODEL_FACING_OPTIONS,
    inspect: { type: "boolean", short: "i", description: "print the discovered tools as a table and exit" },
  },
  async run(args) {
    if (args.inspect) {
      const file = args.positionals[0];
      const entry = resolveEntry("mcp", file);
      const { tools } = await loadTools("mcp", entry, args.untyped !== true);
      process.stdout.write(renderToolTable(file ?? entry, tools));
      return 0;
    }
    const { server, warm } = await openToolServer("mcp", args.positionals[0], {
      ...args,
      typed: args.untyped !== true,
    });
    closeIfStdoutFails(() => server.close());
    const handlers = mcpHandlers(server, args.watch === true);
    const session: McpSession = {};
    let notify: ((message: unknown) => Promise<void>) | undefined;
    const unwatch = args.watch
      ? watchToolFile(server, "mcp", () => {
          // Only an initialized client was told the list may change.
          if (session.protocolVersion !== undefined)
            void notify?.({ jsonrpc: "2.0", method: "notifications/tools/list_changed" });
        })
      : undefined;
    const dispatchOptions = {
      transport: { session },
      onInternalError: (error: unknown) =>
        process.stderr.write(`amber mcp: internal error: ${printable(String(error))}\n`),
    };
    const calls = new CallRegistry();
    await serveStdioLoop({
      read: process.stdin,
      write: writeStdout,
      afterFirstChunk: warm,
      replyOrderGraceMs: replyOrderGraceMs(),
      connect: (send) => {
        notify = send;
      },
      answer: async (item) => {
        if ("error" in item) return failure(null, item.error.code, item.error.message);
        const call = calls.track(item.message);
        const reply = await dispatchPayload(item.message, handlers, call, {
          ...dispatchOptions,
          // JSON-RPC batches exist only in 2025-03-26 (before initialize: 2024-11-05, none).
          allowBatch: session.protocolVersion === "2025-03-26",
        });
        // A cancelled request gets no response (MCP specification).
        return calls.settle(call) ? null : reply;
      },
    });
    unwatch?.();
    server.close();
    return 0;
  },
});
