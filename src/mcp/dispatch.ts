/**
 * The JSON-RPC dispatcher: one parsed message in, at most one response out. Also the helpers for
 * batches and raw text lines. Transports (HTTP, stdio) sit on top of this; MCP semantics live in
 * server.ts as an ordinary handler table.
 */
import {
  classifyMessage,
  encodeJsonRpc,
  failure,
  INTERNAL_ERROR,
  INVALID_REQUEST,
  type JsonRpcRequest,
  type JsonRpcResponse,
  METHOD_NOT_FOUND,
  PARSE_ERROR,
  RpcError,
  success,
} from "./jsonrpc.ts";

/**
 * Facts a transport knows about the request that are not part of the JSON-RPC message, passed to
 * handlers as their fourth argument. The MCP handlers read the protocol version and session here.
 */
export interface TransportInfo {
  /** The protocol version the transport established (e.g. the HTTP `MCP-Protocol-Version` header). */
  protocolVersion?: string;
  /** Per-connection state of a stateful transport (stdio); absent on stateless HTTP. */
  session?: McpSession;
}

/** What one connection negotiated through `initialize` (stdio keeps one per connection). */
export interface McpSession {
  protocolVersion?: string;
  clientInfo?: Record<string, unknown>;
  clientCapabilities?: Record<string, unknown>;
}

/**
 * A method handler. Its return value becomes `result` (`undefined` → `null`); throwing an
 * {@link RpcError} answers with that error, any other throw with a generic -32603.
 * For notifications the fourth `message` argument still has the request shape, with no id.
 */
export type Handler<Ctx> = (
  params: unknown,
  ctx: Ctx,
  message: JsonRpcRequest,
  transport?: TransportInfo,
) => unknown | Promise<unknown>;

/** Method name → handler. */
export type Handlers<Ctx> = Record<string, Handler<Ctx>>;

/** Called with errors that are not {@link RpcError}s (they are answered generically; log them here). */
export type InternalErrorHook = (error: unknown, method: string) => void;

/** Most messages one JSON-RPC batch may hold; a larger batch is one -32600 and nothing runs. */
export const MAX_BATCH_MESSAGES = 100;

/** Options of the dispatch helpers. */
export interface DispatchOptions {
  /** Extra facts from the transport, handed to every handler. */
  transport?: TransportInfo;
  /** Observes unexpected handler errors; the client only sees "Internal error". */
  onInternalError?: InternalErrorHook;
  /** Most messages of a batch handled at once (default: all of them). */
  batchConcurrency?: number;
}

const hasOwn = Object.prototype.hasOwnProperty;

function toFailure(id: JsonRpcRequest["id"], error: unknown, method: string, options?: DispatchOptions) {
  if (error instanceof RpcError) return failure(id, error.code, error.message, error.data);
  options?.onInternalError?.(error, method);
  return failure(id, INTERNAL_ERROR, "Internal error");
}

/**
 * Handles one parsed JSON-RPC message. Returns the response for a request, or `null` for a
 * notification (its handler still runs; errors are swallowed) and for responses sent to us.
 * Never throws.
 */
export async function dispatch<Ctx>(
  message: unknown,
  handlers: Handlers<Ctx>,
  ctx: Ctx,
  options?: DispatchOptions,
): Promise<JsonRpcResponse | null> {
  const classified = classifyMessage(message);
  switch (classified.kind) {
    case "invalid":
      return failure(classified.id, INVALID_REQUEST, "Invalid Request");
    case "response":
      return null;
    case "notification": {
      const { method } = classified.message;
      if (!hasOwn.call(handlers, method)) return null;
      try {
        await handlers[method]!(
          classified.message.params,
          ctx,
          classified.message as JsonRpcRequest,
          options?.transport,
        );
      } catch (error) {
        if (!(error instanceof RpcError)) options?.onInternalError?.(error, method);
      }
      return null;
    }
    case "request": {
      const request = classified.message;
      const { id, method } = request;
      if (!hasOwn.call(handlers, method)) return failure(id, METHOD_NOT_FOUND, `Method not found: ${method}`);
      try {
        const result = await handlers[method]!(request.params, ctx, request, options?.transport);
        return success(id, result === undefined ? null : result);
      } catch (error) {
        return toFailure(id, error, method, options);
      }
    }
  }
}

/**
 * Handles an already-parsed payload that may be a batch. A batch answers with the array of its
 * responses in message order (or `null` when it held only notifications); an empty batch, or one of
 * more than {@link MAX_BATCH_MESSAGES} messages, is a single -32600 and nothing in it runs. Messages
 * run at most `batchConcurrency` at a time. With `allowBatch: false` an array is a single -32600.
 */
export async function dispatchPayload<Ctx>(
  payload: unknown,
  handlers: Handlers<Ctx>,
  ctx: Ctx,
  options?: DispatchOptions & { allowBatch?: boolean },
): Promise<JsonRpcResponse | JsonRpcResponse[] | null> {
  if (!Array.isArray(payload)) return dispatch(payload, handlers, ctx, options);
  if (payload.length === 0 || options?.allowBatch === false) {
    return failure(
      null,
      INVALID_REQUEST,
      payload.length === 0 ? "Invalid Request: empty batch" : "Invalid Request: batches are not supported",
    );
  }
  if (payload.length > MAX_BATCH_MESSAGES) {
    return failure(
      null,
      INVALID_REQUEST,
      `Invalid Request: a batch holds at most ${MAX_BATCH_MESSAGES} messages (got ${payload.length}); nothing was run`,
    );
  }
  const responses: Array<JsonRpcResponse | null> = new Array(payload.length).fill(null);
  let next = 0;
  const worker = async () => {
    while (next < payload.length) {
      const index = next++;
      responses[index] = await dispatch(payload[index], handlers, ctx, options);
    }
  };
  const lanes = Math.max(1, Math.min(options?.batchConcurrency ?? payload.length, payload.length));
  await Promise.all(Array.from({ length: lanes }, worker));
  const answered = responses.filter((r): r is JsonRpcResponse => r !== null);
  return answered.length === 0 ? null : answered;
}

/** Parses JSON text, or returns the -32700 response to send instead. */
export function parseJson(
  text: string,
): { ok: true; value: unknown } | { ok: false; response: JsonRpcResponse } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false, response: failure(null, PARSE_ERROR, "Parse error") };
  }
}

/**
 * Handles one raw text message (e.g. a stdin line): parse error → -32700 with id `null`, otherwise
 * as {@link dispatchPayload}. Returns the serialized response, or `null` when nothing is to be sent.
 */
export async function dispatchText<Ctx>(
  text: string,
  handlers: Handlers<Ctx>,
  ctx: Ctx,
  options?: DispatchOptions & { allowBatch?: boolean },
): Promise<string | null> {
  const parsed = parseJson(text);
  const response = parsed.ok ? await dispatchPayload(parsed.value, handlers, ctx, options) : parsed.response;
  return response === null ? null : encodeJsonRpc(response);
}
