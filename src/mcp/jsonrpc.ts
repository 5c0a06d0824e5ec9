/**
 * JSON-RPC 2.0 message types, error codes and the valibot schemas that validate incoming messages.
 * Runtime-neutral: shared by the Worker (Streamable HTTP) and the CLI (stdio).
 */
import * as v from "valibot";

/** Invalid JSON was received. */
export const PARSE_ERROR = -32700;
/** The JSON sent is not a valid request object. */
export const INVALID_REQUEST = -32600;
/** The method does not exist or is not available. */
export const METHOD_NOT_FOUND = -32601;
/** Invalid method parameters (MCP: also an unknown tool). */
export const INVALID_PARAMS = -32602;
/** Internal JSON-RPC error. */
export const INTERNAL_ERROR = -32603;
/** MCP 2026-07-28: HTTP headers (`Mcp-Method`, `Mcp-Name`, version) disagree with the body (HTTP 400). */
export const HEADER_MISMATCH = -32020;
/** MCP 2026-07-28: the request needs a client capability its `_meta` did not declare. */
export const MISSING_CLIENT_CAPABILITY = -32021;
/** MCP 2026-07-28: the request's protocol version is not supported (data lists the supported ones). */
export const UNSUPPORTED_PROTOCOL_VERSION = -32022;

/** A request id. MCP forbids `null` ids on requests; `null` appears only in error responses. */
export type JsonRpcId = string | number;

/** Request/notification params: by-name (object) or by-position (array). */
export type JsonRpcParams = Record<string, unknown> | unknown[];

/** A request: has an id and expects exactly one response. */
export interface JsonRpcRequest {
  jsonrpc: "2.0";
  id: JsonRpcId;
  method: string;
  params?: JsonRpcParams;
}

/** A notification: no id, never answered. */
export interface JsonRpcNotification {
  jsonrpc: "2.0";
  method: string;
  params?: JsonRpcParams;
}

/** The error member of an error response. */
export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

/** A successful response. */
export interface JsonRpcSuccess {
  jsonrpc: "2.0";
  id: JsonRpcId;
  result: unknown;
}

/** An error response; `id` is `null` when the request's id could not be determined. */
export interface JsonRpcFailure {
  jsonrpc: "2.0";
  id: JsonRpcId | null;
  error: JsonRpcErrorObject;
}

/** Any response. */
export type JsonRpcResponse = JsonRpcSuccess | JsonRpcFailure;

/** Any message a peer may send. */
export type JsonRpcMessage = JsonRpcRequest | JsonRpcNotification | JsonRpcResponse;

/** An error a handler throws to answer with a specific JSON-RPC error. */
export class RpcError extends Error {
  code: number;
  data?: unknown;

  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.name = "RpcError";
    this.code = code;
    if (data !== undefined) this.data = data;
  }

  /** The wire form of this error. */
  toJSON(): JsonRpcErrorObject {
    return this.data === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, data: this.data };
  }
}

/**
 * A JSON-RPC id as accepted on requests (numbers or strings; MCP forbids null). Finite only: JSON
 * text like `1e400` parses to Infinity, which serialises as `null` — the call ran and its answer
 * reached no one.
 */
export const JsonRpcIdSchema = v.union([v.string(), v.pipe(v.number(), v.finite())]);

const ParamsSchema = v.optional(v.union([v.record(v.string(), v.unknown()), v.array(v.unknown())]));

/** A request object (id present). */
export const JsonRpcRequestSchema = v.object({
  jsonrpc: v.literal("2.0"),
  id: JsonRpcIdSchema,
  method: v.string(),
  params: ParamsSchema,
});

/** A notification object (no id member). */
export const JsonRpcNotificationSchema = v.object({
  jsonrpc: v.literal("2.0"),
  method: v.string(),
  params: ParamsSchema,
});

/** A response object (result or error), as a client may send back to a server. */
export const JsonRpcResponseSchema = v.union([
  v.object({ jsonrpc: v.literal("2.0"), id: JsonRpcIdSchema, result: v.unknown() }),
  v.object({
    jsonrpc: v.literal("2.0"),
    id: v.nullable(JsonRpcIdSchema),
    error: v.object({ code: v.number(), message: v.string(), data: v.optional(v.unknown()) }),
  }),
]);

/** What {@link classifyMessage} found. */
export type ClassifiedMessage =
  | { kind: "request"; message: JsonRpcRequest }
  | { kind: "notification"; message: JsonRpcNotification }
  | { kind: "response"; message: JsonRpcResponse }
  | { kind: "invalid"; id: JsonRpcId | null };

/** True for a JSON object (not null, not an array). The one such check of the codebase. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Validates one parsed message and says what it is. Invalid messages carry the id to answer with
 * (the request's own id when it is a valid id, else `null`).
 */
export function classifyMessage(value: unknown): ClassifiedMessage {
  if (!isPlainObject(value)) return { kind: "invalid", id: null };
  if ("method" in value) {
    if ("id" in value) {
      const request = v.safeParse(JsonRpcRequestSchema, value);
      if (request.success) return { kind: "request", message: value as unknown as JsonRpcRequest };
      const id = v.is(JsonRpcIdSchema, value.id) ? (value.id as JsonRpcId) : null;
      return { kind: "invalid", id };
    }
    const notification = v.safeParse(JsonRpcNotificationSchema, value);
    if (notification.success)
      return { kind: "notification", message: value as unknown as JsonRpcNotification };
    return { kind: "invalid", id: null };
  }
  if (("result" in value || "error" in value) && v.is(JsonRpcResponseSchema, value)) {
    return { kind: "response", message: value as unknown as JsonRpcResponse };
  }
  const id = v.is(JsonRpcIdSchema, value.id) ? (value.id as JsonRpcId) : null;
  return { kind: "invalid", id };
}

/**
 * A result that is already JSON text. {@link encodeJsonRpc} splices it into its response as is, so a
 * result that is the same for many requests (a `tools/list` page) is serialised once, not per
 * request. Any other serialiser still gets the same JSON through `toJSON` (parsed back: correct,
 * only slower) — an in-process caller reads `.value` instead.
 */
export class RawJson {
  readonly text: string;

  constructor(text: string) {
    this.text = text;
  }

  /** The value the text encodes. */
  get value(): unknown {
    return JSON.parse(this.text);
  }

  toJSON(): unknown {
    return this.value;
  }
}

/** One message's JSON text, its {@link RawJson} result spliced in after `jsonrpc` and `id`. */
function encodeOne(message: unknown): string {
  if (!isPlainObject(message) || !(message.result instanceof RawJson))
    return JSON.stringify(message) ?? "null";
  const { result, ...head } = message;
  const prefix = JSON.stringify(head).slice(0, -1);
  return `${prefix}${prefix === "{" ? "" : ","}"result":${result.text}}`;
}

/**
 * The wire text of a message or a batch: `JSON.stringify`, except that a response whose `result` is
 * a {@link RawJson} gets that text verbatim. Every transport of this core serialises through it.
 */
export function encodeJsonRpc(message: unknown): string {
  return Array.isArray(message) ? `[${message.map(encodeOne).join(",")}]` : encodeOne(message);
}

/** Builds a success response. */
export function success(id: JsonRpcId, result: unknown): JsonRpcSuccess {
  return { jsonrpc: "2.0", id, result };
}

/** Builds an error response. */
export function failure(id: JsonRpcId | null, code: number, message: string, data?: unknown): JsonRpcFailure {
  const error: JsonRpcErrorObject = data === undefined ? { code, message } : { code, message, data };
  return { jsonrpc: "2.0", id, error };
}
