/**
 * Streamable HTTP transport over web-standard `Request` → `Response`, stateless: every POST carries
 * its own JSON-RPC message(s) and is answered with `application/json` (no SSE, no session ids).
 * Works in the Worker (Hono passes `c.req.raw`) and in Node through a small adapter.
 */
import { messageTextWithin } from "./body.ts";
import {
  type DispatchOptions,
  dispatch,
  dispatchPayload,
  type Handlers,
  type TransportInfo,
} from "./dispatch.ts";
import { jsonNestingExceeds, MAX_JSON_NESTING } from "./json-text.ts";
import {
  encodeJsonRpc,
  failure,
  HEADER_MISMATCH,
  INVALID_PARAMS,
  INVALID_REQUEST,
  isPlainObject,
  type JsonRpcId,
  type JsonRpcResponse,
  METHOD_NOT_FOUND,
  MISSING_CLIENT_CAPABILITY,
  PARSE_ERROR,
  UNSUPPORTED_PROTOCOL_VERSION,
} from "./jsonrpc.ts";
import {
  DEFAULT_PROTOCOL_VERSION,
  isSupportedProtocolVersion,
  META_CLIENT_CAPABILITIES,
  META_PROTOCOL_VERSION,
  STATELESS_PROTOCOL_VERSION,
  unsupportedVersionError,
} from "./server.ts";

/**
 * The answer to anything but POST (no SSE stream, no session to DELETE). Exported so servers can
 * refuse such requests before doing any work (authentication, database).
 */
export function methodNotAllowed(): Response {
  return errorResponse(405, INVALID_REQUEST, "Method Not Allowed: use POST", undefined, { allow: "POST" });
}

/** Tool calls of one batch run at most this many at a time (the Workers connection cap). */
export const DEFAULT_BATCH_CONCURRENCY = 6;

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
  /** Messages of one batch handled at once (default {@link DEFAULT_BATCH_CONCURRENCY}). */
  batchConcurrency?: number;
}

const JSON_HEADERS = { "content-type": "application/json" };

/** A JSON-RPC message or batch as an HTTP response (a {@link RawJson} result is sent as it is). */
function jsonResponse(status: number, body: unknown, headers?: Record<string, string>): Response {
  return new Response(encodeJsonRpc(body), { status, headers: { ...JSON_HEADERS, ...headers } });
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

function requestId(message: unknown): JsonRpcId | null {
  if (!isPlainObject(message)) return null;
  const { id } = message;
  return typeof id === "string" || typeof id === "number" ? id : null;
}

/**
 * 2026-07-28 rules for one message whose header says 2026-07-28: `_meta` carries the version (equal
 * to the header) and the client capabilities; `Mcp-Method` equals the body's method and `Mcp-Name`
 * its `params.name` (tools/call, prompts/get) or `params.uri` (resources/read).
 */
function checkStatelessRequest(request: Request, message: unknown): Response | null {
  if (!isPlainObject(message) || typeof message.method !== "string") return null;
  const id = requestId(message);
  const reject = (code: number, text: string) => jsonResponse(400, failure(id, code, text));
  const params = isPlainObject(message.params) ? message.params : {};
  const meta = isPlainObject(params._meta) ? params._meta : undefined;
  const bodyVersion = meta?.[META_PROTOCOL_VERSION];
  if (bodyVersion === undefined)
    return reject(INVALID_PARAMS, `Invalid params: _meta must carry ${META_PROTOCOL_VERSION}`);
  if (bodyVersion !== STATELESS_PROTOCOL_VERSION) {
    return reject(HEADER_MISMATCH, "Header mismatch: MCP-Protocol-Version differs from _meta");
  }
  if (!isPlainObject(meta?.[META_CLIENT_CAPABILITIES])) {
    return reject(INVALID_PARAMS, `Invalid params: _meta must carry ${META_CLIENT_CAPABILITIES}`);
  }
  const method = request.headers.get("mcp-method")?.trim();
  if (method === undefined) return reject(HEADER_MISMATCH, "Header mismatch: Mcp-Method header is required");
  if (method !== message.method)
    return reject(HEADER_MISMATCH, "Header mismatch: Mcp-Method differs from the body");
  const named =
    message.method === "tools/call" || message.method === "prompts/get"
      ? params.name
      : message.method === "resources/read"
        ? params.uri
        : undefined;
  if (named === undefined) return null;
  const name = request.headers.get("mcp-name")?.trim();
  if (name === undefined) return reject(HEADER_MISMATCH, "Header mismatch: Mcp-Name header is required");
  if (name !== named) return reject(HEADER_MISMATCH, "Header mismatch: Mcp-Name differs from the body");
  return null;
}

/**
 * Handles one Streamable HTTP request: POST → JSON-RPC over `application/json`, notification-only
 * → 202, GET/DELETE (and anything else) → 405. Protocol errors detected before dispatch carry the
 * request's id when the body could be parsed. Never throws.
 */
export async function handleMcpHttpRequest<Ctx>(
  request: Request,
  options: McpHttpOptions<Ctx>,
): Promise<Response> {
  if (request.method !== "POST") return methodNotAllowed();
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
  const text = await messageTextWithin(request, options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES);
  if (text === null) return errorResponse(413, INVALID_REQUEST, "Payload Too Large");
  if (jsonNestingExceeds(text)) {
    return errorResponse(
      400,
      INVALID_REQUEST,
      `Invalid Request: JSON nested deeper than ${MAX_JSON_NESTING} levels`,
    );
  }
  let payload: unknown;
  try {
    payload = JSON.parse(text);
  } catch {
    return errorResponse(400, PARSE_ERROR, "Parse error");
  }

  const headerVersion = request.headers.get("mcp-protocol-version")?.trim() ?? null;
  if (headerVersion !== null && !isSupportedProtocolVersion(headerVersion)) {
    const error = unsupportedVersionError(headerVersion);
    return jsonResponse(400, failure(requestId(payload), error.code, error.message, error.data));
  }
  const version = headerVersion ?? DEFAULT_PROTOCOL_VERSION;
  const transport: TransportInfo = headerVersion === null ? {} : { protocolVersion: headerVersion };
  const dispatchOptions: DispatchOptions = {
    transport,
    onInternalError: options.onInternalError,
    batchConcurrency: options.batchConcurrency ?? DEFAULT_BATCH_CONCURRENCY,
  };

  if (Array.isArray(payload)) {
    if (version !== "2025-03-26") {
      return errorResponse(400, INVALID_REQUEST, `Invalid Request: batches are not supported in ${version}`);
    }
    const responses = await dispatchPayload(payload, options.handlers, options.ctx, dispatchOptions);
    return responses === null ? new Response(null, { status: 202 }) : jsonResponse(200, responses);
  }
  if (version === STATELESS_PROTOCOL_VERSION) {
    const rejected = checkStatelessRequest(request, payload);
    if (rejected !== null) return rejected;
  } else if (headerVersion !== null && isPlainObject(payload) && isPlainObject(payload.params)) {
    const meta = payload.params._meta;
    const bodyVersion = isPlainObject(meta) ? meta[META_PROTOCOL_VERSION] : undefined;
    if (bodyVersion !== undefined && bodyVersion !== headerVersion) {
      return jsonResponse(
        400,
        failure(
          requestId(payload),
          HEADER_MISMATCH,
          "Header mismatch: MCP-Protocol-Version differs from _meta",
        ),
      );
    }
  }
  const response = await dispatch(payload, options.handlers, options.ctx, dispatchOptions);
  if (response === null) return new Response(null, { status: 202 });
  return jsonResponse(httpStatusFor(response, payload, headerVersion), response);
}

/**
 * The HTTP status of a single response. 2026-07-28 requests get transport-visible statuses:
 * unknown method → 404, protocol faults (-32600, -32602 on `_meta`, -3202x) → 400; tool
 * errors and everything else stay 200, as in earlier revisions.
 */
function httpStatusFor(response: JsonRpcResponse, payload: unknown, headerVersion: string | null): number {
  if (!("error" in response)) return 200;
  const params = isPlainObject(payload) && isPlainObject(payload.params) ? payload.params : undefined;
  const meta = params && isPlainObject(params._meta) ? params._meta : undefined;
  const stateless =
    headerVersion === STATELESS_PROTOCOL_VERSION || meta?.[META_PROTOCOL_VERSION] !== undefined;
  if (!stateless) return 200;
  const { code } = response.error;
  if (code === METHOD_NOT_FOUND) return 404;
  if (code === INVALID_REQUEST || code === UNSUPPORTED_PROTOCOL_VERSION || code === HEADER_MISMATCH)
    return 400;
  if (code === MISSING_CLIENT_CAPABILITY) return 400;
  return 200;
}
