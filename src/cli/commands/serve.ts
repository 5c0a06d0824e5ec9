/**
 * `amber serve <file>`: the same tools over HTTP — `POST /<tool>` with a JSON body answers the
 * tool's JSON result, `GET /tools` the export-tools JSON, and `/mcp` is a Streamable HTTP MCP
 * endpoint on the protocol core. Same sandbox flags as `session` and `mcp`.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { MAX_SIGNATURES, SIGNATURE_TOLERANCE_SECONDS, verifySignature } from "../../functions/signing.ts";
import { handleMcpHttpRequest } from "../../mcp/index.ts";
import { printable } from "../../printable.ts";
import { CliError, defineCommand } from "../command.ts";
import { renderToolsJson } from "../export-tools.ts";
import {
  MODEL_FACING_OPTIONS,
  openToolServer,
  type ToolServer,
  type ToolServerArgs,
  watchToolFile,
} from "../tool-server.ts";
import { mcpHandlers } from "./mcp.ts";

interface ServeArgs extends ToolServerArgs {
  port?: number;
  host?: string;
}

const MAX_BODY = 1024 * 1024;

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).byteLength;
    if (size > MAX_BODY) throw new HttpError(413, "payload_too_large", "request body too large");
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

class HttpError extends Error {
  status: number;
  code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  sendJsonText(res, status, JSON.stringify(body));
}

function sendJsonText(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\]|\[::ffff:127(\.\d{1,3}){3}\])$/i;

/**
 * The `Origin`s `/mcp` accepts (DNS-rebinding protection, a MUST of the Streamable HTTP transport):
 * loopback pages on any port, and pages served from the host the server is bound to. `boundHost`
 * `0.0.0.0`/`::` adds nothing: a wildcard bind names no origin.
 */
export function originValidator(boundHost: string): (origin: string) => boolean {
  const bound = boundHost.includes(":") ? `[${boundHost.toLowerCase()}]` : boundHost.toLowerCase();
  const wildcard = bound === "0.0.0.0" || bound === "[::]";
  return (origin) => {
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      return false; // includes the opaque "null" origin
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") return false;
    const host = url.hostname.toLowerCase();
    return LOOPBACK.test(host) || (!wildcard && host === bound);
  };
}

/**
 * The `Host` headers the server answers (DNS-rebinding protection for what a page reads without an
 * `Origin`: after a rebinding, a page's same-origin `GET /tools` names its own host and may carry no
 * `Origin` at all): loopback names and the host the server is bound to, on any port. A wildcard bind
 * (`0.0.0.0`, `::`) is a deliberate public server whose names cannot be known: any `Host` is answered.
 */
export function hostValidator(boundHost: string): (host: string | undefined) => boolean {
  const bound = boundHost.includes(":") ? `[${boundHost.toLowerCase()}]` : boundHost.toLowerCase();
  if (bound === "0.0.0.0" || bound === "[::]") return () => true;
  return (host) => {
    if (host === undefined) return true; // HTTP/1.0 without Host: no browser sends that
    let name: string;
    try {
      name = new URL(`http://${host}`).hostname.toLowerCase();
    } catch {
      return false;
    }
    return LOOPBACK.test(name) || name === bound;
  };
}

/**
 * The environment variable `amber serve` reads its function signing secrets from (never argv: `ps`):
 * one secret, or several separated by commas (e.g. one per project whose function it is).
 */
export const SIGNING_SECRET_ENV = "AMBA_FUNCTION_SIGNING_SECRET";

/** Most accepted signatures remembered against replay (each for the tolerance window). */
const MAX_REMEMBERED_SIGNATURES = 100_000;

/**
 * The gate of `POST /<tool>` when the tool file is an app's function: only requests the platform
 * signed with one of the project's `secrets` (src/functions/signing.ts), each accepted once. The URL
 * checked is the one the platform sent to, as this server sees it (`Host`, and `X-Forwarded-Proto`
 * behind a TLS proxy: a wrong guess only fails the check, the HMAC cannot be forged either way).
 * Every matching `v1` of an accepted request is remembered: a replay that drops one of an overlap's
 * two signatures still repeats the other.
 */
export function signatureGate(secrets: readonly string[], nowMs: () => number = Date.now) {
  const accepted = new Map<string, number>(); // v1 → when it may be forgotten (ms), oldest first
  return async (req: IncomingMessage, body: string): Promise<void> => {
    // No prototype: a request may send a header called `__proto__` or `constructor`.
    const headers: Record<string, string> = Object.create(null);
    for (const [name, value] of Object.entries(req.headers)) {
      if (typeof value === "string") headers[name] = value;
    }
    const proto = headers["x-forwarded-proto"] === "https" ? "https" : "http";
    const url = `${proto}://${headers.host ?? "localhost"}${req.url ?? "/"}`;
    const now = nowMs();
    const check = await verifySignature({ method: req.method ?? "POST", url, headers, body }, secrets, now);
    if ("problem" in check) throw new HttpError(401, "invalid_signature", check.problem);
    for (const [v1, until] of accepted) {
      if (until > now && accepted.size < MAX_REMEMBERED_SIGNATURES) break;
      accepted.delete(v1);
    }
    if (check.matched.some((v1) => accepted.has(v1)))
      throw new HttpError(401, "invalid_signature", "this signed request was already served");
    for (const v1 of check.matched) accepted.set(v1, now + 2 * SIGNATURE_TOLERANCE_SECONDS * 1000);
  };
}

/**
 * The secrets of {@link SIGNING_SECRET_ENV}'s value: split at commas, blanks around each trimmed.
 * An empty entry (`a,,b`, a trailing comma) or more than {@link MAX_SIGNATURES} is refused: a
 * mistyped list should stop the server, not quietly verify with fewer secrets than meant.
 */
export function parseSigningSecrets(value: string): string[] {
  const secrets = value.split(",").map((secret) => secret.trim());
  if (secrets.includes("")) throw new CliError(`amber serve: ${SIGNING_SECRET_ENV} has an empty entry`);
  if (secrets.length > MAX_SIGNATURES)
    throw new CliError(`amber serve: ${SIGNING_SECRET_ENV} holds more than ${MAX_SIGNATURES} secrets`);
  return secrets;
}

/** Builds the request handler of `amber serve` for a loaded tool file bound to `host`. */
export function createServeHandler(
  server: ToolServer,
  host = "127.0.0.1",
  signingSecrets?: readonly string[],
) {
  const checkSignature = signingSecrets === undefined ? undefined : signatureGate(signingSecrets);
  const validateOrigin = originValidator(host);
  const validateHost = hostValidator(host);
  const handlers = mcpHandlers(server);
  const mcp = async (req: IncomingMessage, res: ServerResponse) => {
    const body = req.method === "GET" || req.method === "HEAD" ? undefined : await readBody(req);
    const headers = new Headers();
    for (const [key, value] of Object.entries(req.headers)) {
      if (typeof value === "string") headers.set(key, value);
      else if (Array.isArray(value)) headers.set(key, value.join(", "));
    }
    const request = new Request(`http://${req.headers.host ?? "localhost"}${req.url}`, {
      method: req.method,
      headers,
      body,
    });
    const response = await handleMcpHttpRequest(request, { handlers, ctx: null, validateOrigin });
    res.writeHead(response.status, Object.fromEntries(response.headers));
    res.end(Buffer.from(await response.arrayBuffer()));
  };
  return async (req: IncomingMessage, res: ServerResponse) => {
    try {
      if (!validateHost(req.headers.host))
        throw new HttpError(
          403,
          "forbidden_host",
          `host not served: ${String(req.headers.host).slice(0, 256)}`,
        );
      const path = new URL(req.url ?? "/", "http://localhost").pathname;
      if (path === "/mcp") return await mcp(req, res);
      // A web page can POST to loopback without asking (a "simple" request, the answer unread):
      // it must not run tools, nor read the list after a DNS rebinding. Browsers send its Origin.
      const origin = req.headers.origin;
      if (origin !== undefined && !validateOrigin(origin))
        throw new HttpError(403, "forbidden_origin", `origin not allowed: ${origin}`);
      if (path === "/tools") {
        if (req.method !== "GET") throw new HttpError(405, "method_not_allowed", "use GET /tools");
        return sendJsonText(res, 200, renderToolsJson(server.tools));
      }
      const name = decodeURIComponent(path.slice(1));
      if (!server.has(name)) throw new HttpError(404, "not_found", `unknown tool: ${name}`);
      if (req.method !== "POST") throw new HttpError(405, "method_not_allowed", `use POST /${name}`);
      const raw = (await readBody(req)).toString("utf8");
      await checkSignature?.(req, raw);
      let args: unknown = {};
      if (raw.trim() !== "") {
        try {
          args = JSON.parse(raw);
        } catch {
          throw new HttpError(400, "invalid_json", "request body is not valid JSON");
        }
      }
      const outcome = await server.call(name, args);
      if ("invalid" in outcome) throw new HttpError(400, "invalid_arguments", outcome.error);
      if (outcome.ok) return sendJson(res, 200, outcome.value === undefined ? null : outcome.value);
      return sendJson(res, 500, { error: { code: "tool_error", message: outcome.error } });
    } catch (error) {
      if (error instanceof HttpError)
        return sendJson(res, error.status, { error: { code: error.code, message: error.message } });
      process.stderr.write(`amber serve: ${printable(String(error))}\n`);
      if (!res.headersSent)
        sendJson(res, 500, { error: { code: "internal_error", message: "internal error" } });
    }
  };
}

/**
 * The signing secrets from {@link SIGNING_SECRET_ENV}, removed from this process's environment so
 * that no tool host it starts inherits them (an unrestricted tool reads every variable).
 */
function takeSigningSecrets(): string[] | undefined {
  const value = process.env[SIGNING_SECRET_ENV];
  delete process.env[SIGNING_SECRET_ENV];
  if (!value) return undefined;
  const secrets = parseSigningSecrets(value);
  process.stderr.write(
    `amber serve: tool calls must carry a valid x-amba-signature (${SIGNING_SECRET_ENV}: ${secrets.length} secret${secrets.length === 1 ? "" : "s"})\n`,
  );
  return secrets;
}

/** The `serve` command. */
export const serveCommand = defineCommand<ServeArgs>({
  meta: {
    name: "serve",
    description: "Serve a tool file over HTTP: POST /<tool>, GET /tools, MCP at /mcp.",
    usage: "amber serve [permission flags] [--untyped] [--watch] <file> [--port N] [--host 127.0.0.1]",
  },
  maxPositionals: 1,
  options: {
    ...MODEL_FACING_OPTIONS,
    port: {
      type: "number",
      value: "N",
      short: "p",
      description: "port to listen on (default 8000, 0 = any free port)",
    },
    host: { type: "string", value: "HOST", description: "address to bind (default 127.0.0.1)" },
  },
  async run(args) {
    // Before any tool host starts: none may inherit it.
    const signingSecrets = takeSigningSecrets();
    const { server, warm } = await openToolServer("serve", args.positionals[0], {
      ...args,
      typed: args.untyped !== true,
    });
    warm();
    // Over HTTP there is no stream to notify on: clients see the new list on their next tools/list.
    const unwatch = args.watch ? watchToolFile(server, "serve", () => {}) : undefined;
    const { createServer } = await import("node:http");
    const host = args.host ?? "127.0.0.1";
    const http = createServer(createServeHandler(server, host, signingSecrets));
    try {
      await new Promise<void>((resolve, reject) => {
        http.once("error", (error) => reject(new CliError(`amber serve: cannot listen: ${error.message}`)));
        http.listen(args.port ?? 8000, host, resolve);
      });
    } catch (error) {
      // The warm tool host (and a watcher) would keep the process alive after the error.
      unwatch?.();
      server.close();
      throw error;
    }
    const address = http.address();
    const port = typeof address === "object" && address ? address.port : args.port;
    process.stderr.write(
      `amber serve: listening on http://${host.includes(":") ? `[${host}]` : host}:${port}\n`,
    );
    await new Promise<void>((resolve) => {
      const stop = () => http.close(() => resolve());
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
    });
    unwatch?.();
    server.close();
    return 0;
  },
});
