/**
 * Streamable HTTP transport over web-standard `Request` → `Response`, stateless: every POST carries
 * its own JSON-RPC message(s) and is answered with `application/json` (no SSE, no session ids).
 * Works in the Worker (Hono passes `c.req.raw`) and in Node through a small adapter.
 */
import {
  type DispatchOptions,
  dispatch,
  dispatchPayload,
  type Handlers,
  type TransportInfo,
} from "./dispatch.ts";
import { failure, INVALID_REQUEST, type JsonRpcResponse, PARSE_ERROR } from "./jsonrpc.ts";
import {
  DEFAULT_PROTOCOL_VERSION,
  isSupportedProtocolVersion,
  META_PROTOCOL_VERSION,
  STATELESS_PROTOCOL_VERSION,
  unsupportedVersionError,
} from "./server.ts";

/** Default request body limit: 1 MiB. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

/** Options of {@link handleMcpHttpRequest}. */
export interface McpHttpOptions<Ctx> {
  handlers: Handlers<Ctx>;
  ctx: Ctx;
  /** Larger bodies are refused with 413. */
  maxBodyBytes?: number;
  /**
   * Called with the `Origin` header when the request has one (DNS-rebinding protection);
   * returning false refuses the request with 403.
   */
  validateOrigin?: (origin: string, request: Request) => boolean;
  /** Observes unexpected handler errors (answered with a generic -32603). */
  onInternalError?: DispatchOptions["onInternalError"];
}

const JSON_HEADERS = { "content-type": "application/json" };

function jsonResponse(status: number, body: unknown, headers?: Record<string, string>): Response {
  return new Response(JSON.stringify(body), { status, headers: { ...JSON_HEADERS, ...headers } });
}

function errorResponse(
  status: number,
  code: number,
  message: string,
  data?: unknown,
  headers?: Record<string, string>,
): Response {
  return jsonResponse(status, failure(null, code, message, data), headers);
}

/** True when an `Accept` header admits `application/json` (missing header admits anything). */
function acceptsJson(accept: string | null): boolean {
  if (accept === null || accept.trim() === "") return true;
  return accept.split(",").some((part) => {
    const type = part.split(";")[0]!.trim().toLowerCase();
    return type === "application/json" || type === "application/*" || type === "*/*";
  });
}

function isJsonContentType(contentType: string | null): boolean {
  if (contentType === null) return false;
  const type = contentType.split(";")[0]!.trim().toLowerCase();
  return type === "application/json" || type.endsWith("+json");
}

/** Reads the body as text, or returns null when it is larger than `limit` bytes. */
async function readBody(request: Request, limit: number): Promise<string | null> {
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > limit) return null;
  if (request.body === null) return "";
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      return null;
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return new TextDecoder().decode(bytes);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * 2026-07-28 mirrors routing fields into headers: `Mcp-Method` must equal the body's method, and
 * `Mcp-Name` the `params.name` (tools/call, prompts/get) or `params.uri` (resources/read).
 * Returns a message describing the mismatch, or null.
 */
function checkMirroredHeaders(request: Request, message: unknown): string | null {
  if (!isObject(message) || typeof message.method !== "string") return null;
  const method = request.headers.get("mcp-method");
  if (method === null) return "Mcp-Method header is required";
  if (method !== message.method) return "Mcp-Method header does not match the request body";
  const params = isObject(message.params) ? message.params : {};
  const bodyVersion = isObject(params._meta) ? params._meta[META_PROTOCOL_VERSION] : undefined;
  if (bodyVersion !== undefined && bodyVersion !== STATELESS_PROTOCOL_VERSION) {
    return "MCP-Protocol-Version header does not match _meta";
  }
  const named =
    message.method === "tools/call" || message.method === "prompts/get"
      ? params.name
      : message.method === "resources/read"
        ? params.uri
        : undefined;
  if (named === undefined) return null;
  const name = request.headers.get("mcp-name");
  if (name === null) return "Mcp-Name header is required";
  if (name !== named) return "Mcp-Name header does not match the request body";
  return null;
}

/**
 * Handles one Streamable HTTP request: POST → JSON-RPC over `application/json`, notification-only
 * → 202, GET/DELETE (and anything else) → 405. Never throws.
 */
export async function handleMcpHttpRequest<Ctx>(
  request: Request,
  options: McpHttpOptions<Ctx>,
): Promise<Response> {
  if (request.method !== "POST") {
    return errorResponse(405, INVALID_REQUEST, "Method Not Allowed: use POST", undefined, { allow: "POST" });
  }
  const origin = request.headers.get("origin");
  if (origin !== null && options.validateOrigin && !options.validateOrigin(origin, request)) {
    return errorResponse(403, INVALID_REQUEST, "Forbidden: origin not allowed");
  }
  if (!acceptsJson(request.headers.get("accept"))) {
    return errorResponse(406, INVALID_REQUEST, "Not Acceptable: the client must accept application/json");
  }
  if (!isJsonContentType(request.headers.get("content-type"))) {
    return errorResponse(415, INVALID_REQUEST, "Unsupported Media Type: use application/json");
  }
  const headerVersion = request.headers.get("mcp-protocol-version");
  if (headerVersion !== null && !isSupportedProtocolVersion(headerVersion)) {
    const error = unsupportedVersionError(headerVersion);
    return errorResponse(400, error.code, `Bad Request: ${error.message}`, error.data);
  }
  const version = headerVersion ?? DEFAULT_PROTOCOL_VERSION;

  const text = await readBody(request, options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES);
  if (text === null) return errorResponse(413, INVALID_REQUEST, "Payload too large");
  let payload: unknown;
  try {
    payload = JSON.parse(text);
  } catch {
    return errorResponse(400, PARSE_ERROR, "Parse error");
  }

  const transport: TransportInfo = headerVersion === null ? {} : { protocolVersion: headerVersion };
  const dispatchOptions: DispatchOptions = { transport, onInternalError: options.onInternalError };
  let response: JsonRpcResponse | JsonRpcResponse[] | null;
  if (Array.isArray(payload)) {
    if (version !== "2025-03-26") {
      return errorResponse(400, INVALID_REQUEST, `Invalid Request: batches are not supported in ${version}`);
    }
    response = await dispatchPayload(payload, options.handlers, options.ctx, dispatchOptions);
  } else {
    if (version === STATELESS_PROTOCOL_VERSION) {
      const mismatch = checkMirroredHeaders(request, payload);
      if (mismatch !== null) {
        const id =
          isObject(payload) && (typeof payload.id === "string" || typeof payload.id === "number")
            ? payload.id
            : null;
        return jsonResponse(400, failure(id, INVALID_REQUEST, `Bad Request: ${mismatch}`));
      }
    }
    response = await dispatch(payload, options.handlers, options.ctx, dispatchOptions);
  }
  if (response === null) return new Response(null, { status: 202 });
  return jsonResponse(200, response);
}
