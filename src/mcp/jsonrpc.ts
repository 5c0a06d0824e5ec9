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

/** A JSON-RPC id as accepted on requests (integers or strings; MCP forbids null). */
export const JsonRpcIdSchema = v.union([v.string(), v.number()]);

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

/**
 * JSON texts already written for values of a message ({@link rememberJson}), keyed by the value: the
 * encoder splices the text instead of serialising the value again. Weak: a text lives as long as
 * its value.
 */
const writtenJson = new WeakMap<object, string>();

/**
 * Records that `text` is `JSON.stringify(value)`, so that {@link encodeJsonRpc} splices it where
 * `value` is a member of a response's `result` (a tool answer's `structuredContent`, whose text item
 * already is that JSON) instead of serialising the value a second time. The value stays a plain
 * object for in-process callers. A value with a `toJSON` of its own is not recorded (it may answer
 * differently as a member). The text is the value's as it was recorded: record it again after a change.
 */
export function rememberJson(value: object, text: string): void {
  if (typeof (value as { toJSON?: unknown }).toJSON !== "function") writtenJson.set(value, text);
}

/** The text spliced for a value: a {@link RawJson}'s, or a remembered one; undefined otherwise. */
function splicedText(value: unknown): string | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  return value instanceof RawJson ? value.text : writtenJson.get(value);
}

/**
 * Whether `value`, or a member of it up to `depth` levels down (plain objects without `toJSON`),
 * has a text to splice.
 */
function hasSplice(value: unknown, depth: number): boolean {
  if (splicedText(value) !== undefined) return true;
  if (depth <= 0 || !isPlainObject(value) || typeof value.toJSON === "function") return false;
  for (const key of Object.keys(value)) if (hasSplice(value[key], depth - 1)) return true;
  return false;
}

/**
 * Appends `value`'s JSON text to `out` as pieces: a spliced text as it is, a plain object holding
 * one (`depth` levels down at most) member by member, anything else through `JSON.stringify` — so
 * the pieces joined are what `JSON.stringify` writes for the value (members in its order, skipped
 * members skipped, each member written as a member), with the spliced texts in place.
 */
function writeValue(value: unknown, depth: number, out: string[]): void {
  const spliced = splicedText(value);
  if (spliced !== undefined) {
    out.push(spliced);
    return;
  }
  if (!hasSplice(value, depth)) {
    out.push(JSON.stringify(value) ?? "null");
    return;
  }
  const object = value as Record<string, unknown>;
  out.push("{");
  let first = true;
  for (const key of Object.keys(object)) {
    const member = object[key];
    if (hasSplice(member, depth - 1)) {
      out.push(first ? "" : ",", JSON.stringify(key), ":");
      writeValue(member, depth - 1, out);
    } else {
      // As a member: `toJSON(key)` sees its key, and a member JSON skips writes nothing.
      const text = JSON.stringify({ [key]: member }).slice(1, -1);
      if (text === "") continue;
      out.push(first ? "" : ",", text);
    }
    first = false;
  }
  out.push("}");
}

/** How deep below a message its spliced values may be: `result` itself, or a member of it. */
const SPLICE_DEPTH = 2;

/**
 * The wire text of a message or a batch in pieces, in order: `JSON.stringify`'s text, except that a
 * {@link RawJson} `result`, or a member of `result` recorded by {@link rememberJson}, is a piece of
 * its own, as it is. One piece when nothing is spliced. The HTTP transport hands the pieces to the
 * runtime as they are (a `Blob`), so a spliced text of megabytes is not copied into a new string
 * first: concatenated, it was flattened again where the runtime encoded it, and joined, copied
 * (BENCHMARKS.md "Serialising a tool answer once").
 */
export function encodeJsonRpcPieces(message: unknown): string[] {
  const out: string[] = [];
  if (!Array.isArray(message)) writeValue(message, SPLICE_DEPTH, out);
  else {
    out.push("[");
    message.forEach((item, i) => {
      if (i > 0) out.push(",");
      writeValue(item, SPLICE_DEPTH, out);
    });
    out.push("]");
  }
  return out;
}

/** The wire text of a message or a batch ({@link encodeJsonRpcPieces} joined). Every transport of this core serialises through it. */
export function encodeJsonRpc(message: unknown): string {
  const pieces = encodeJsonRpcPieces(message);
  return pieces.length === 1 ? (pieces[0] as string) : pieces.join("");
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
