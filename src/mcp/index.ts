/**
 * The MCP protocol core: JSON-RPC 2.0, the dispatcher, MCP method handlers with version
 * negotiation, Streamable HTTP over web-standard Request/Response, and stdio framing.
 * Runtime-neutral: imports nothing but valibot.
 */
export * from "./body.ts";
export * from "./dispatch.ts";
export * from "./http.ts";
export * from "./jsonrpc.ts";
export * from "./server.ts";
export * from "./stdio.ts";
