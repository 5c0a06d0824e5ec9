/**
 * Calls the platform MCP (`POST <url>/mcp`, `tools/call`) — the same operations, validation and
 * errors as the MCP surface and the admin REST routes. A failed call becomes one CliError line.
 */
import { CliError } from "./errors.ts";
import type { Connection } from "./settings.ts";

const PROTOCOL_VERSION = "2025-06-18";
let nextId = 1;

interface RpcResponse {
  result?: { isError?: boolean; structuredContent?: Record<string, unknown>; content?: { text?: string }[] };
  error?: { code: number; message: string };
}

/** Run one `amba_*` tool and return its result (the REST response's JSON). */
export async function callTool(
  conn: Connection,
  name: string,
  args: Record<string, unknown>,
  fetchImpl: typeof fetch = fetch,
): Promise<Record<string, unknown>> {
  const headers: Record<string, string> = {
    "content-type": "application/json",
    accept: "application/json",
    "mcp-protocol-version": PROTOCOL_VERSION,
  };
  if (conn.token) headers.authorization = `Bearer ${conn.token}`;
  let res: Response;
  try {
    res = await fetchImpl(`${conn.url}/mcp`, {
      method: "POST",
      headers,
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: nextId++,
        method: "tools/call",
        params: { name, arguments: args },
      }),
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new CliError(
      `cannot reach ${conn.url}: ${cause?.code ?? cause?.message ?? (err as Error).message}`,
    );
  }
  const text = await res.text();
  let body: RpcResponse & { error?: { message?: string } };
  try {
    body = JSON.parse(text);
  } catch {
    throw new CliError(`${conn.url}/mcp answered ${res.status} with a non-JSON body (is AMBA_URL right?)`);
  }
  if (res.status === 401)
    throw new CliError(`unauthorized: ${body.error?.message ?? "invalid developer token"}`);
  if (body.error) throw new CliError(body.error.message ?? `HTTP ${res.status}`);
  const result = body.result;
  if (!result) throw new CliError(`${conn.url}/mcp answered ${res.status} without a result`);
  const value =
    result.structuredContent ?? (JSON.parse(result.content?.[0]?.text ?? "null") as Record<string, unknown>);
  if (result.isError) {
    const error = (value as { error?: { code?: string; message?: string } }).error;
    throw new CliError(error?.message ?? "the operation failed");
  }
  return value;
}
