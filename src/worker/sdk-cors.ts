/**
 * CORS for the SDK routes an app's client code calls from a browser: the data and invoke routes
 * under `/v1/projects/:id/…` (hot app), `POST /v1/events` (hot app) and `/v1/auth/*` (cold app).
 * Additive: a request without an `Origin`, or with one its project does not list in
 * `allowed_origins`, is answered exactly as it was before — no CORS header, no refusal (server-side
 * callers and tools may send any `Origin`).
 *
 * - Answers: an `Origin` the project lists gets `Access-Control-Allow-Origin: <it>`, `Vary: Origin`
 *   and the headers a client reads (`Retry-After`, …) exposed — on every answer, errors included,
 *   so the app can read a 401 or a 429. No `Allow-Credentials`: no cookies are used.
 *   Which project: the one the request's credentials resolved to (`c.var.corsOrigins`, from the
 *   same — cached — resolution: no round trip of its own); failing that, on `/v1/projects/:id/…`,
 *   the project in the path (`allowedOriginsOf`, the app MCP's cached anonymous lookup). The
 *   credential-only routes have nothing else: an answer given before their client key checked
 *   out (a missing or unknown key, the sign-in per-address limit) carries no CORS header.
 * - Preflights (`OPTIONS` with an `Origin`): on `/v1/projects/:id/…`, 204 with the route's methods
 *   for a listed origin, 403 `forbidden` without CORS headers otherwise (a preflight is never a
 *   real call: refusing one breaks nothing). On the credential-only routes a preflight names no
 *   project and carries no credential, so it is answered 204 for any origin with
 *   `Access-Control-Allow-Origin: *`: it echoes nothing and tells nothing of any project; whether
 *   the browser may read the answer is decided on the real request, by the key's project.
 *
 * Registered outermost (`buildApp`'s `outermost`), so the body limit's 413 and the path guard's 400
 * get the headers too.
 */
import type { Context, Hono, MiddlewareHandler } from "hono";
import { isExactOrigin } from "../app-mcp/exact-origin.ts";
import { allowedOriginsOf } from "./allowed-origins.ts";
import type { AppEnv } from "./hono.ts";

/** Request headers an SDK call may send (beyond the CORS-safelisted ones). */
export const SDK_ALLOW_HEADERS = "authorization, x-api-key, content-type, accept";
/** Response headers a browser client may read (beyond the CORS-safelisted ones). */
export const SDK_EXPOSE_HEADERS = "retry-after, x-amba-request-id";
/** Seconds a browser may reuse a preflight's answer. */
export const SDK_PREFLIGHT_MAX_AGE = "600";

/** The project-scoped SDK routes (hot app) and their methods. */
const PROJECT_ROUTES: readonly [string, string][] = [
  ["/v1/projects/:id/collections/:name/rows", "GET, POST"],
  ["/v1/projects/:id/collections/:name/rows/:rowId", "GET, PATCH, DELETE"],
  ["/v1/projects/:id/collections/:name/find", "POST"],
  ["/v1/projects/:id/collections/:name/aggregate", "POST"],
  ["/v1/projects/:id/collections/:name/nearest", "POST"],
  ["/v1/projects/:id/functions/:name/invoke", "POST"],
];

/** The credential-only SDK routes of the hot app. */
const HOT_CLIENT_ROUTES: readonly [string, string][] = [["/v1/events", "POST"]];

/** The credential-only SDK routes of the cold app. */
const COLD_CLIENT_ROUTES: readonly [string, string][] = [
  ["/v1/auth/signup", "POST"],
  ["/v1/auth/signin", "POST"],
  ["/v1/auth/signout", "POST"],
  ["/v1/auth/me", "GET"],
];

/** The request's `Origin`, or null when it sends none (an empty one is none). */
function requestOrigin(c: Context<AppEnv>): string | null {
  const origin = c.req.header("origin");
  return origin ? origin : null;
}

/**
 * The allowed origins of the project in the path; null when there is none, the lookup is refused
 * (the address is over its failed-check budget) or fails: such a request is answered as before.
 */
async function pathOrigins(c: Context<AppEnv>, projectId: string): Promise<readonly string[] | null> {
  try {
    return await allowedOriginsOf(c, { projectId });
  } catch {
    return null;
  }
}

/** `origin` is one `list` holds, exactly (listed origins are exact, so nothing else can match). */
const listed = (origin: string, list: readonly string[] | null | undefined): boolean =>
  list != null && isExactOrigin(origin) && list.includes(origin);

function withCors(res: Response, origin: string): Response {
  const headers = new Headers(res.headers);
  headers.set("access-control-allow-origin", origin);
  headers.set("access-control-expose-headers", SDK_EXPOSE_HEADERS);
  headers.append("vary", "Origin");
  return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
}

const preflightHeaders = (methods: string): Record<string, string> => ({
  "access-control-allow-methods": `${methods}, OPTIONS`,
  "access-control-allow-headers": SDK_ALLOW_HEADERS,
  "access-control-max-age": SDK_PREFLIGHT_MAX_AGE,
});

/** CORS of one SDK route: `project` — its project is in the path (`:id`); `client` — credentials only. */
function sdkCors(methods: string, scope: "project" | "client"): MiddlewareHandler<AppEnv> {
  return async function sdkCors(c, next) {
    const origin = requestOrigin(c);
    if (origin === null) return next();
    // Read now: once later middleware has run, `param` answers for their routes (`*`: none).
    const projectId = scope === "project" ? (c.req.param("id") ?? "") : "";
    if (c.req.method === "OPTIONS") {
      if (scope === "client")
        return new Response(null, {
          status: 204,
          headers: { "access-control-allow-origin": "*", ...preflightHeaders(methods) },
        });
      // Not an exact origin: no project lists it, and no lookup is spent on it.
      if (isExactOrigin(origin) && listed(origin, await pathOrigins(c, projectId))) {
        return new Response(null, {
          status: 204,
          headers: { "access-control-allow-origin": origin, vary: "Origin", ...preflightHeaders(methods) },
        });
      }
      return c.json(
        {
          error: {
            code: "forbidden",
            message: `origin ${JSON.stringify(origin)} is not allowed to call this project (add it to the app MCP config's allowed_origins)`,
          },
        },
        403,
        { vary: "Origin" },
      );
    }
    await next();
    if (!isExactOrigin(origin)) return;
    const list = c.var.corsOrigins ?? (scope === "project" ? await pathOrigins(c, projectId) : null);
    if (listed(origin, list)) c.res = withCors(c.res, origin);
  };
}

function mount(app: Hono<AppEnv>, routes: readonly [string, string][], scope: "project" | "client") {
  for (const [path, methods] of routes) app.use(path, sdkCors(methods, scope));
}

/** The hot app's SDK routes' CORS (`buildApp`'s `outermost`). */
export function hotSdkCors(app: Hono<AppEnv>): void {
  mount(app, PROJECT_ROUTES, "project");
  mount(app, HOT_CLIENT_ROUTES, "client");
}

/** The cold app's SDK routes' CORS (`/v1/auth/*`). */
export function coldSdkCors(app: Hono<AppEnv>): void {
  mount(app, COLD_CLIENT_ROUTES, "client");
}
