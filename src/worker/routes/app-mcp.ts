/**
 * The app's own MCP endpoint: /app/:projectId/mcp and <slug>.<APP_MCP_HOST_SUFFIX>/mcp. Both
 * addresses serve the same surface with the same auth, kill switch, auth mode, allowlist and
 * allowed browser origins (CORS, src/worker/mcp-edge.ts). Failed authentication is a 401 with
 * `WWW-Authenticate: Bearer realm="amba", error="invalid_token", error_description="…"`. The rate
 * limit is charged per `tools/call` (src/app-mcp/handlers.ts), so a batch pays for every call in it,
 * on the binding of the app's tier (`rate_limit_per_minute`).
 */

import type { Context, Next } from "hono";
import { Hono } from "hono";
import { answerBudget } from "../../answer-budget.ts";
import { type AppMcpRefusal, appMcpRefusal } from "../../app-mcp/admission.ts";
import type { AppSurface } from "../../app-mcp/surface.ts";
import { actorOf, type HotAccess, hotAccess, type ProjectSelector } from "../../credentials/principal.ts";
import { AppError, forbidden } from "../../errors.ts";
import { functionUrlPolicy } from "../../functions/outbound-policy.ts";
import { handleMcpHttpRequest, methodNotAllowed } from "../../mcp/index.ts";
import { allowedOriginsOf } from "../allowed-origins.ts";
import { authenticateProject, presentedCredentials } from "../auth.ts";
import { cachedCredential, credentialKey } from "../credential-cache.ts";
import { type AppEnv, answerAs } from "../hono.ts";
import { hotServices } from "../lazy.ts";
import { mcpOrigin } from "../mcp-edge.ts";
import { authenticateAppMcpOAuth, mcpResource, mcpUnauthorized } from "../mcp-oauth.ts";
import { noteActiveUser, requestMeter } from "../metering.ts";
import { appLimiter, TIER_LIMITERS } from "../rate-limit.ts";

export const appMcpRoutes = new Hono<AppEnv>();

/** `<slug>` when the request's host is `<slug>.<suffix>`, else null. */
export function slugFromHost(host: string, suffix: string): string | null {
  if (!host || !suffix) return null;
  const name = host.toLowerCase();
  if (!name.endsWith(`.${suffix}`)) return null;
  const slug = name.slice(0, -(suffix.length + 1));
  return /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(slug) ? slug : null;
}

/** How the request names its project: the path's id, or the slug of its host (null: neither). */
function selectorOf(c: Context<AppEnv>): ProjectSelector | null {
  const projectId = c.req.param("projectId");
  if (projectId !== undefined) return { projectId };
  const slug = slugFromHost(new URL(c.req.url).hostname, c.env.APP_MCP_HOST_SUFFIX);
  return slug ? { slug } : null;
}

/**
 * The app's `allowed_origins`, looked up without credentials (a CORS preflight carries none);
 * null for an unknown project.
 */
async function allowedOrigins(c: Context<AppEnv>): Promise<readonly string[] | null> {
  const selector = selectorOf(c);
  return selector === null ? null : allowedOriginsOf(c, selector);
}

const appOrigin = mcpOrigin({ allowedOrigins });

/** OAuth Bearer (src/oauth) or header credentials → the caller; a 401 carries the OAuth challenge. */
async function authenticate(c: Context<AppEnv>, selector: ProjectSelector): Promise<HotAccess | Response> {
  const resource = mcpResource(c, selector);
  // Served from the isolate's credential cache (src/worker/credential-cache.ts) when warm.
  // The credentials as resolution reads them and the project id as the database compares it (a
  // uuid in any case): one credential, one key.
  const named = "projectId" in selector ? { projectId: selector.projectId.toLowerCase() } : selector;
  const key = await credentialKey(...presentedCredentials(c, true), JSON.stringify(named), resource);
  try {
    return await cachedCredential(key, async () =>
      hotAccess(
        (await authenticateAppMcpOAuth(c, selector, resource)) ?? (await authenticateProject(c, selector)),
      ),
    );
  } catch (err) {
    if (err instanceof AppError && err.status === 401) return mcpUnauthorized(c, resource, err);
    throw err;
  }
}

/** The 403's message for each reason the endpoint refuses a caller (src/app-mcp/admission.ts). */
const REFUSALS: Record<AppMcpRefusal, string> = {
  disabled: "the app MCP endpoint of this project is disabled (config.enabled = false)",
  client_only: "this app MCP endpoint accepts only client keys + end-user sessions (auth_mode client_only)",
  developer_only: "this app MCP endpoint accepts only developer tokens (auth_mode developer_only)",
};

async function serve(c: Context<AppEnv>, selector: ProjectSelector): Promise<Response> {
  // Cheap refusals first: GET (SSE stream) and DELETE (session end) are not offered by this stateless server.
  if (c.req.method !== "POST") return methodNotAllowed();
  const access = await authenticate(c, selector);
  if (access instanceof Response) return access;
  const { principal, config } = access;
  answerAs(c, principal.project.id, principal.project.developerId);
  const refused = appMcpRefusal(config, principal.scope);
  if (refused !== null) throw forbidden(REFUSALS[refused]);
  if (principal.scope === "end_user") noteActiveUser(c, principal.project.id, principal.user.id);
  const waitUntil = (promise: Promise<unknown>) => c.executionCtx.waitUntil(promise);
  // Not at start-up: the handlers and the surface come with the first request that gets this far.
  const { appMcpHandlers, appSurface, storageGuard, storageQuotaBytes } = await hotServices();
  // Lazy: only tools/list and tools/call need the surface (initialize, ping, notifications do not).
  let surface: Promise<AppSurface> | undefined;
  const loadSurface = () => {
    surface ??= appSurface(c.env.META_KV, c.var.db, principal.project, waitUntil);
    return surface;
  };
  const ctx = {
    db: c.var.db,
    principal,
    actor: actorOf(principal),
    surface: loadSurface,
    // The app's tier, from the cached credential resolution (choosing it costs no round trip), and
    // for end users the app's aggregate budget, asked together with it.
    limit: appLimiter(
      c.env,
      principal,
      TIER_LIMITERS[config.rateLimitPerMinute] ?? "RATE_LIMITER",
      waitUntil,
    ),
    policy: functionUrlPolicy(c.env.FUNCTION_URL_POLICY),
    signing: config.functionSigning,
    meter: requestMeter(c),
    storage: storageGuard(c.var.db, storageQuotaBytes(c.env.STORAGE_QUOTA_MIB), waitUntil),
    // Per HTTP request: a batch's calls answer from one budget (src/answer-budget.ts).
    answers: answerBudget(),
  };
  return handleMcpHttpRequest(c.req.raw, {
    handlers: appMcpHandlers,
    ctx,
    onInternalError: (err, method) => console.error(`app MCP ${method} failed`, err),
  });
}

appMcpRoutes.use("/app/:projectId/mcp", appOrigin);
appMcpRoutes.all("/app/:projectId/mcp", (c) => serve(c, { projectId: c.req.param("projectId") }));

// `/mcp` on a `<slug>.<suffix>` host is this app's endpoint; on any other host, the platform MCP's.
appMcpRoutes.use("/mcp", (c: Context<AppEnv>, next: Next) => (selectorOf(c) ? appOrigin(c, next) : next()));
appMcpRoutes.all("/mcp", (c, next) => {
  const selector = selectorOf(c);
  return selector ? serve(c, selector) : next();
});
