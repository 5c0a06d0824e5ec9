/**
 * `createApp()`: the Worker app, in two halves built by the same `buildApp()` (error renderer, 404,
 * body limit, path guard, database, credential-cache invalidation):
 * - the hot app, loaded at start-up: app MCP (`/app/:id/mcp`, `/mcp` on a `<slug>.<suffix>` host),
 *   the REST data and function-invoke routes under `/v1/projects/…`, event ingestion
 *   (`/v1/events`) and `/healthz`;
 * - the cold app (cold-app.ts): everything else (console, OAuth, OpenAPI, platform MCP, the admin
 *   API), imported on the first request that needs it. The build splits it into modules that only
 *   that `import()` reaches, so start-up neither compiles nor evaluates it (README "Decisions").
 * Every path is served by exactly one half; `isHotRequest` decides which.
 */
import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { getPath } from "hono/utils/url";
import { type AnswerHold, answerMemory } from "../answer-memory.ts";
import { forgetCredentials } from "./credential-cache.ts";
import type { Env } from "./env.ts";
import { renderError, renderNotFound } from "./errors.ts";
import { databaseHealth } from "./health.ts";
import type { AppEnv } from "./hono.ts";
import { withStoreDeadlines } from "./kv-deadline.ts";
import { dbModule } from "./lazy.ts";
import { pathGuard } from "./path-guard.ts";
import { appMcpRoutes, slugFromHost } from "./routes/app-mcp.ts";
import { dataRoutes } from "./routes/data.ts";
import { eventRoutes } from "./routes/events.ts";
import { functionInvokeRoutes } from "./routes/function-invoke.ts";
import { hotSdkCors } from "./sdk-cors.ts";

/**
 * The answer hold of each request the Worker's entry is serving (src/answer-memory.ts): opened
 * before the request is routed, released once it has answered, and found through the request itself
 * by `buildApp`'s first middleware (Hono's `c.req.raw` is the `Request` it was given until then).
 */
const answerHolds = new WeakMap<Request, AnswerHold>();

/**
 * Whose share of the isolate's answer memory a request's reads count against: the project in its
 * path (`/app/<id>/…`, `/v1/projects/<id>/…`, `/v1/admin/projects/<id>/…`), the app of its
 * hostname, or "" — the platform's own requests (sign-in, account, platform MCP) share one share.
 */
export function answerShare(path: string, url: string, hostSuffix: string): string {
  const project = /^\/(?:app|v1\/projects|v1\/admin\/projects)\/([^/]+)/.exec(path);
  // As the routes read it (decoded; ids are uuids of either case): spelling an id another way is
  // the same app, not a share of its own.
  if (project) return decodedLower(project[1]!);
  const slug = hostSuffix && path === "/mcp" ? slugFromHost(new URL(url).hostname, hostSuffix) : null;
  return slug === null ? "" : `host:${slug}`;
}

function decodedLower(segment: string): string {
  try {
    return decodeURIComponent(segment).toLowerCase();
  } catch {
    return segment.toLowerCase();
  }
}

/** Largest request body the platform accepts (JSON rows, tool calls). */
export const MAX_BODY_BYTES = 1024 * 1024;

/**
 * Whether the hot app serves this request: its path (as Hono routes it) is `/healthz` or
 * `/v1/events`, under `/app/` or `/v1/projects/`, or `/mcp` on an app's own host. No other route
 * lives under these.
 */
export function isHotRequest(path: string, url: string, hostSuffix: string): boolean {
  if (path === "/healthz" || path === "/v1/events") return true;
  if (path.startsWith("/app/") || path.startsWith("/v1/projects/")) return true;
  return path === "/mcp" && slugFromHost(new URL(url).hostname, hostSuffix) !== null;
}

/**
 * The paths an app's own hostname (`<slug>.<suffix>`) serves: its MCP endpoint, the discovery
 * documents MCP clients fetch from the endpoint's origin (`/.well-known/…`), the authorization
 * server's endpoints (`OAUTH_PATHS` in src/oauth/server.ts, not imported: it loads the provider),
 * and `/healthz`. Nothing else — the console, the API reference, the admin and account API, the
 * platform MCP: the slug is the tenant's to choose, and `login.mcp.amba.host/console` must not
 * show the platform's own sign-in page under a name a tenant picked.
 */
const APP_HOST_PATHS: ReadonlySet<string> = new Set([
  "/mcp",
  "/healthz",
  "/authorize",
  "/oauth/token",
  "/oauth/register",
]);

/** Whether an app's hostname serves `path` ({@link APP_HOST_PATHS}, or a discovery document). */
export const servedOnAppHost = (path: string): boolean =>
  APP_HOST_PATHS.has(path) || path.startsWith("/.well-known/");

/**
 * The request as addressed by its `Host` header when that names an app's hostname and the URL does
 * not. DESIGN.md resolves the hostname endpoint by "Host <slug>.<APP_MCP_HOST_SUFFIX>": on Cloudflare
 * (and under `wrangler dev`) the URL is built from the `Host` header, so the two never differ there
 * and this returns `request` itself; a caller that builds the URL on its own host and names the app
 * in `Host` (an in-process `fetch`, a proxy keeping the header) reached the platform MCP instead.
 * Only an app's hostname is taken from the header: the URL's own host is kept otherwise.
 */
export function addressedByHost(request: Request, hostSuffix: string): Request {
  const host = request.headers.get("host");
  if (host === null || !hostSuffix || !host.toLowerCase().includes(hostSuffix)) return request;
  const url = new URL(request.url);
  if (url.host.toLowerCase() === host.toLowerCase()) return request;
  if (slugFromHost(url.hostname, hostSuffix) !== null) return request;
  let named: URL;
  try {
    named = new URL(`${url.protocol}//${host}`);
  } catch {
    return request;
  }
  if (slugFromHost(named.hostname, hostSuffix) === null) return request;
  url.host = named.host;
  return new Request(url, request);
}

/**
 * The request re-addressed from `<slug>.<alias>` to `<slug>.<suffix>` when its URL's host or its
 * `Host` header is under the alias suffix (`APP_MCP_HOST_ALIAS`): `npm run dev` serves app hostnames
 * under `mcp.localhost` and takes production's `mcp.amba.host` as the same, so a client that sends
 * DESIGN.md's `Host: <slug>.mcp.amba.host` to the dev server reaches that app, not the platform MCP.
 * Any other name under the alias (`login.<alias>.`, `x.login.<alias>`) is re-addressed the same way,
 * so it meets the suffix's own 404 (`appHostKind`) rather than the platform; a name merely containing
 * the alias is left as it came.
 */
export function aliasedHost(request: Request, alias: string | undefined, suffix: string): Request {
  const from = alias?.trim().toLowerCase();
  if (!from || !suffix || from === suffix.toLowerCase()) return request;
  const url = new URL(request.url);
  for (const host of [url.host, request.headers.get("host")]) {
    if (host === null || !host.toLowerCase().includes(from)) continue;
    let named: URL;
    try {
      named = new URL(`${url.protocol}//${host}`);
    } catch {
      continue;
    }
    const name = named.hostname.toLowerCase();
    const bare = name.replace(/\.+$/, "");
    if (!bare.endsWith(`.${from}`)) continue;
    const slug = slugFromHost(named.hostname, from);
    url.hostname =
      slug !== null
        ? `${slug}.${suffix.toLowerCase()}`
        : `${bare.slice(0, -from.length)}${suffix.toLowerCase()}${name.slice(bare.length)}`;
    const headers = new Headers(request.headers);
    headers.set("host", url.host);
    return new Request(url, new Request(request, { headers }));
  }
  return request;
}

/** 404 for a platform path asked for on an app's hostname. */
function notOnAppHost(request: Request, path: string): Response {
  return Response.json(
    {
      error: {
        code: "not_found",
        message: `no route for ${request.method} ${path} on an app's hostname; the platform's own host serves it`,
      },
    },
    { status: 404 },
  );
}

/**
 * Which kind of host `url` is on: `app` — an app's hostname `<slug>.<suffix>`; `other` — any other
 * name under the suffix (`login.<suffix>.` with its trailing dot, which DNS resolves as the same name,
 * or `x.login.<suffix>`): no app is served there and neither is the platform, whose pages would show
 * under a label a tenant picked; null — not under the suffix, or the platform's own host should it
 * sit there. A URL without the suffix anywhere in it cannot be under it — the hot routes on the
 * platform's host take that substring test, not a parse of their URL.
 */
function appHostKind(
  url: string,
  env: Pick<Env, "APP_MCP_HOST_SUFFIX" | "PUBLIC_BASE_URL">,
): "app" | "other" | null {
  const suffix = env.APP_MCP_HOST_SUFFIX?.toLowerCase();
  if (!suffix || !url.includes(suffix)) return null;
  const { hostname } = new URL(url);
  const name = hostname.toLowerCase().replace(/\.+$/, "");
  if (!name.endsWith(`.${suffix}`)) return null;
  const base = env.PUBLIC_BASE_URL?.trim();
  if (base && URL.canParse(base) && new URL(base).hostname.toLowerCase().replace(/\.+$/, "") === name)
    return null;
  return slugFromHost(hostname, suffix) === null ? "other" : "app";
}

/** 404 for every request to a name under the app suffix that is no app's hostname. */
function noAppHost(request: Request, path: string): Response {
  return Response.json(
    {
      error: {
        code: "not_found",
        message: `no route for ${request.method} ${path}: this hostname is not an app's hostname (<slug>.<suffix>, no trailing dot)`,
      },
    },
    { status: 404 },
  );
}

/**
 * A Hono app with the platform's middleware and error handling, then the routes `mount` adds.
 * `outermost` adds middleware that runs before the platform's own, so it also sees what they
 * answer themselves (the body limit's 413, the path guard's 400).
 */
export function buildApp(
  mount: (app: Hono<AppEnv>) => void,
  outermost: (app: Hono<AppEnv>) => void = () => {},
): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  app.onError(renderError);
  app.notFound(renderNotFound);
  // First: the body limit gives a request with a streamed body a new `Request`, unknown to the map.
  app.use("*", function answerHold(c, next) {
    c.set("answerHold", answerHolds.get(c.req.raw));
    return next();
  });
  outermost(app);

  app.use(
    "*",
    bodyLimit({
      maxSize: MAX_BODY_BYTES,
      onError: (c) =>
        c.json(
          { error: { code: "payload_too_large", message: `body exceeds ${MAX_BODY_BYTES} bytes` } },
          413,
        ),
    }),
  );
  app.use("*", pathGuard());
  // src/worker/db.ts is imported here, on an isolate's first request, not at start-up: with it come
  // drizzle's pg-core (dialect, session, query builders) and the platform's table objects, whose
  // evaluation was the largest share of start-up left (BENCHMARKS.md "Start-up and bundle").
  // A request the Worker's entry serves gets a handle of its own, whose answers stay charged to the
  // request's answer hold until it has answered (src/answer-memory.ts).
  app.use("*", async function database(c, next) {
    const { createDb } = await dbModule();
    c.set("db", createDb(c.env, c.var.answerHold));
    await next();
  });
  // Control-plane writes (revoke, sign-out, config, exposure, collections…) make this isolate forget
  // the cached resolutions of whoever made them (`credentialHolder`, set where the request was
  // authenticated) once answered, failed or not; the hot routes (app MCP, /v1/projects/… data and
  // invoke) do not. A request nobody is known to have made forgets nothing: an anonymous POST to no
  // route used to drop every tenant's resolutions in the isolate.
  app.use("*", async function credentialCache(c, next) {
    await next();
    if (c.req.method === "GET" || c.req.method === "HEAD" || c.req.method === "OPTIONS") return;
    if (isHotRequest(c.req.path, c.req.url, c.env.APP_MCP_HOST_SUFFIX)) return;
    const holder = c.get("credentialHolder");
    if (holder) forgetCredentials(holder);
  });

  mount(app);
  return app;
}

/** The hot half: what agents and SDK clients call on every request. */
export function hotApp(): Hono<AppEnv> {
  return buildApp((app) => {
    app.get("/healthz", async (c) => {
      const database = await databaseHealth(c.var.db, `${c.env.DATABASE_URL}|${c.env.LOCAL_DB_URL ?? ""}`);
      return c.json({ ok: database.ok, version: c.env.APP_VERSION, database }, database.ok ? 200 : 503);
    });
    // Each sub-app declares its full paths.
    app.route("/", appMcpRoutes);
    app.route("/", dataRoutes);
    app.route("/", functionInvokeRoutes);
    app.route("/", eventRoutes);
  }, hotSdkCors);
}

/** The Worker's fetch handler (what src/worker/index.ts exports; tests call it directly too). */
export interface WorkerApp {
  fetch(request: Request, env: Env, ctx?: ExecutionContext): Promise<Response>;
}

export function createApp(): WorkerApp {
  const hot = hotApp();
  let cold: Promise<Hono<AppEnv>> | undefined;
  const loadCold = () =>
    (cold ??= import("./cold-app.ts").then(
      (m) => m.coldApp(),
      (err) => {
        cold = undefined; // a failed import is retried by the next request
        throw err;
      },
    ));
  return {
    async fetch(received, bindings, ctx) {
      const env = withStoreDeadlines(bindings);
      const request = addressedByHost(
        aliasedHost(received, env.APP_MCP_HOST_ALIAS, env.APP_MCP_HOST_SUFFIX),
        env.APP_MCP_HOST_SUFFIX,
      );
      const path = getPath(request);
      const host = appHostKind(request.url, env);
      if (host === "other") return noAppHost(request, path);
      if (host === "app" && !servedOnAppHost(path)) return notOnAppHost(request, path);
      // The database answers this request reads stay charged until it has answered (the response
      // built from them is complete: every route answers a body it has built, none streams rows).
      const hold = answerMemory.open(answerShare(path, request.url, env.APP_MCP_HOST_SUFFIX));
      answerHolds.set(request, hold);
      try {
        if (isHotRequest(path, request.url, env.APP_MCP_HOST_SUFFIX))
          return await hot.fetch(request, env, ctx);
        return await (await loadCold()).fetch(request, env, ctx);
      } finally {
        answerMemory.release(hold);
      }
    },
  };
}
