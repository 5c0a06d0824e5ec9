/**
 * Calls the platform MCP (`POST <url>/mcp`, `tools/call`) — the same operations, validation and
 * errors as the MCP surface and the admin REST routes. A failed call becomes one CliError line.
 *
 * The server is not trusted with more than the call: the developer token goes over https, or plain
 * http to this machine only (anyone on the path reads a plain-http header); no redirect is followed
 * (the answer would come from a server the user never named); a call that takes longer than
 * {@link CALL_LIMITS}' deadline or answers more than its size ends with an error, not a hang or an
 * exhausted heap.
 */
import { CliError } from "./errors.ts";
import type { Connection } from "./settings.ts";

const PROTOCOL_VERSION = "2025-06-18";
let nextId = 1;

/** How long one call may take (answer included) and how much of an answer is read. */
export interface CallLimits {
  timeoutMs: number;
  maxBytes: number;
}

/** A platform call answers in well under a second and in kilobytes; these leave a wide margin. */
export const CALL_LIMITS: CallLimits = { timeoutMs: 60_000, maxBytes: 32 * 1024 * 1024 };

interface RpcResponse {
  result?: { isError?: boolean; structuredContent?: Record<string, unknown>; content?: { text?: string }[] };
  error?: { code: number; message: string };
}

/** Host names that are this machine: `localhost` and its subdomains, 127.0.0.0/8, `::1`. */
const LOOPBACK_HOST = /^(?:localhost|.+\.localhost|127(?:\.\d{1,3}){3}|\[::1\])$/i;

/** Whether the developer token may be sent to `url`: over https, or plain http to this machine. */
export const mayCarryToken = (url: URL): boolean =>
  url.protocol === "https:" || (url.protocol === "http:" && LOOPBACK_HOST.test(url.hostname));

const sizeText = (bytes: number) =>
  bytes >= 1024 * 1024 ? `${bytes / (1024 * 1024)} MiB` : `${bytes / 1024} KiB`;

/** The body as text, refused once it passes `maxBytes` (declared or as read). */
async function readCapped(res: Response, maxBytes: number, what: string): Promise<string> {
  const tooBig = () => new CliError(`${what} answered more than ${sizeText(maxBytes)}`);
  if (Number(res.headers.get("content-length")) > maxBytes) {
    await res.body?.cancel();
    throw tooBig();
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body ?? []) {
    size += chunk.byteLength;
    // Leaving the loop cancels the stream (the connection closes).
    if (size > maxBytes) throw tooBig();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** Run one `amba_*` tool and return its result (the REST response's JSON). */
export async function callTool(
  conn: Connection,
  name: string,
  args: Record<string, unknown>,
  limits: CallLimits = CALL_LIMITS,
): Promise<Record<string, unknown>> {
  const endpoint = `${conn.url}/mcp`;
  if (!URL.canParse(endpoint)) throw new CliError(`${conn.url} is not a URL`);
  const { username, password } = new URL(endpoint);
  // Named in no message: the URL would be quoted with its password in every error that follows.
  if (username || password) throw new CliError("the platform URL must not carry a user name or password");
  const headers: Record<string, string> = {
    "content-type": "application/json",
    accept: "application/json",
    "mcp-protocol-version": PROTOCOL_VERSION,
  };
  if (conn.token) {
    if (!mayCarryToken(new URL(endpoint)))
      throw new CliError(
        `refusing to send the developer token to ${conn.url} over plain http (use https; http only to this machine)`,
      );
    headers.authorization = `Bearer ${conn.token}`;
  }
  let res: Response;
  let text: string;
  try {
    res = await fetch(endpoint, {
      method: "POST",
      headers,
      redirect: "manual",
      signal: AbortSignal.timeout(limits.timeoutMs),
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: nextId++,
        method: "tools/call",
        params: { name, arguments: args },
      }),
    });
    if (res.status >= 300 && res.status < 400) {
      await res.body?.cancel();
      throw new CliError(
        `${endpoint} answered ${res.status}, a redirect to ${res.headers.get("location") ?? "nowhere"} (amba follows none: use the service's own URL)`,
      );
    }
    text = await readCapped(res, limits.maxBytes, endpoint);
  } catch (err) {
    if (err instanceof CliError) throw err;
    if ((err as Error).name === "TimeoutError")
      throw new CliError(`${conn.url} did not answer within ${limits.timeoutMs / 1000} s`);
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new CliError(
      `cannot reach ${conn.url}: ${cause?.code ?? cause?.message ?? (err as Error).message}`,
    );
  }
  let body: RpcResponse & { error?: { message?: string } };
  try {
    body = JSON.parse(text);
  } catch {
    throw new CliError(`${endpoint} answered ${res.status} with a non-JSON body (is AMBA_URL right?)`);
  }
  if (res.status === 401)
    throw new CliError(`unauthorized: ${body.error?.message ?? "invalid developer token"}`);
  if (body.error) throw new CliError(body.error.message ?? `HTTP ${res.status}`);
  const result = body.result;
  if (!result) throw new CliError(`${endpoint} answered ${res.status} without a result`);
  const value =
    result.structuredContent ?? (JSON.parse(result.content?.[0]?.text ?? "null") as Record<string, unknown>);
  if (result.isError) {
    const error = (value as { error?: { code?: string; message?: string } }).error;
    throw new CliError(error?.message ?? "the operation failed");
  }
  return value;
}
