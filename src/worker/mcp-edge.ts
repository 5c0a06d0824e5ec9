/**
 * The HTTP edge of both MCP endpoints: `Origin` checks (DNS-rebinding protection), CORS for the
 * origins allowed to call. (401 answers with `WWW-Authenticate`: `mcpUnauthorized` in mcp-oauth.ts.)
 *
 * `Origin` absent → allowed (server-side clients send none). Present → it must be the platform's own
 * origin (`PUBLIC_BASE_URL`'s; the request's own only when the request is addressed to a loopback
 * host, i.e. local development), a loopback origin when the request itself is addressed to loopback,
 * or one the endpoint lists (the app's `allowed_origins`); anything else is 403 `forbidden` without
 * CORS headers. Allowed origins get `OPTIONS` preflights answered (204) and
 * `Access-Control-Allow-Origin` on every answer, errors included, so a browser can read them.
 */
import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv } from "./hono.ts";

export const CORS_ALLOW_METHODS = "POST, GET, DELETE, OPTIONS";
export const CORS_ALLOW_HEADERS =
  "authorization, x-api-key, content-type, accept, mcp-protocol-version, mcp-method, mcp-name, last-event-id, mcp-session-id";
export const CORS_EXPOSE_HEADERS = "mcp-protocol-version, www-authenticate, mcp-session-id";

const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** True for `localhost`, `*.localhost`, 127.0.0.0/8 and `[::1]` host names (URL.hostname form). */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase();
  return LOOPBACK_HOSTS.has(host) || host.endsWith(".localhost") || /^127(\.\d{1,3}){3}$/.test(host);
}

function originOf(url: string): string | null {
  try {
    return new URL(url).origin;
  } catch {
    return null;
  }
}

/**
 * Whether `origin` is the platform's own (or, for a request addressed to loopback, any loopback
 * origin — local tools such as the MCP Inspector run on their own port).
 */
export function isPlatformOrigin(origin: string, requestUrl: string, publicBaseUrl: string): boolean {
  if (publicBaseUrl && originOf(publicBaseUrl) === origin) return true;
  const request = new URL(requestUrl);
  if (!isLoopbackHost(request.hostname)) return false;
  try {
    const url = new URL(origin);
    return (url.protocol === "http:" || url.protocol === "https:") && isLoopbackHost(url.hostname);
  } catch {
    return false;
  }
}

/** Options of {@link mcpOrigin}. */
export interface McpOriginOptions {
  /**
   * The extra origins this endpoint allows for the request (the app's `allowed_origins`), or null
   * when the request names nothing that exists (an unknown project: refused like a foreign origin).
   * Called only when the request carries an `Origin` the platform does not own.
   */
  allowedOrigins?: (c: Context<AppEnv>) => Promise<readonly string[] | null>;
}

function corsHeaders(origin: string): Record<string, string> {
  return {
    "access-control-allow-origin": origin,
    "access-control-expose-headers": CORS_EXPOSE_HEADERS,
    vary: "Origin",
  };
}

/** The `Origin` check and CORS of an MCP endpoint (see the module comment). */
export function mcpOrigin(options: McpOriginOptions = {}): MiddlewareHandler<AppEnv> {
  return async function mcpOrigin(c, next) {
    const origin = c.req.header("origin");
    if (origin === undefined) return next();
    const allowed =
      isPlatformOrigin(origin, c.req.url, c.env.PUBLIC_BASE_URL) ||
      ((await options.allowedOrigins?.(c)) ?? []).includes(origin);
    if (!allowed) {
      return c.json(
        {
          error: {
            code: "forbidden",
            message: `origin ${origin} is not allowed to call this MCP endpoint (add it to the app MCP config's allowed_origins)`,
          },
        },
        403,
        { vary: "Origin" },
      );
    }
    if (c.req.method === "OPTIONS") {
      return new Response(null, {
        status: 204,
        headers: {
          ...corsHeaders(origin),
          "access-control-allow-methods": CORS_ALLOW_METHODS,
          "access-control-allow-headers": CORS_ALLOW_HEADERS,
          "access-control-max-age": "600",
        },
      });
    }
    await next();
    const headers = new Headers(c.res.headers);
    for (const [name, value] of Object.entries(corsHeaders(origin))) headers.set(name, value);
    c.res = new Response(c.res.body, { status: c.res.status, statusText: c.res.statusText, headers });
  };
}
