/**
 * The app's own MCP endpoint: /app/:projectId/mcp and <slug>.<APP_MCP_HOST_SUFFIX>/mcp. Both
 * addresses serve the same surface with the same auth, kill switch, auth mode and allowlist.
 */

import type { Context } from "hono";
import { Hono } from "hono";
import { AppError, forbidden } from "../../errors.ts";
import { handleMcpHttpRequest, methodNotAllowed } from "../../mcp/index.ts";
import { appMcpHandlers } from "../app-mcp.ts";
import { appSurface } from "../app-surface.ts";
import { authenticateProject, type ProjectAccess, type ProjectSelector } from "../auth.ts";
import type { AppEnv } from "../hono.ts";
import { enforceRateLimit } from "../rate-limit.ts";
import { authenticateAppMcpOAuth, mcpResource, mcpUnauthorized } from "./oauth.ts";

export const appMcpRoutes = new Hono<AppEnv>();

/** `<slug>` when the request's host is `<slug>.<suffix>`, else null. */
export function slugFromHost(host: string, suffix: string): string | null {
  if (!host || !suffix) return null;
  const name = host.toLowerCase();
  if (!name.endsWith(`.${suffix}`)) return null;
  const slug = name.slice(0, -(suffix.length + 1));
  return /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(slug) ? slug : null;
}

/** OAuth Bearer (src/oauth) or header credentials → the caller; a 401 carries the OAuth challenge. */
async function authenticate(
  c: Context<AppEnv>,
  selector: ProjectSelector,
): Promise<ProjectAccess | Response> {
  const resource = mcpResource(c, selector);
  try {
    return (await authenticateAppMcpOAuth(c, selector, resource)) ?? (await authenticateProject(c, selector));
  } catch (err) {
    if (err instanceof AppError && err.status === 401) return mcpUnauthorized(c, resource, err);
    throw err;
  }
}

async function serve(c: Context<AppEnv>, selector: ProjectSelector): Promise<Response> {
  // Cheap refusals first: GET (SSE stream) and DELETE (session end) are not offered by this stateless server.
  if (c.req.method !== "POST") return methodNotAllowed();
  const access = await authenticate(c, selector);
  if (access instanceof Response) return access;
  const { principal, config } = access;
  if (!config.enabled)
    throw forbidden("the app MCP endpoint of this project is disabled (config.enabled = false)");
  if (config.authMode === "client_only" && principal.scope === "developer") {
    throw forbidden(
      "this app MCP endpoint accepts only client keys + end-user sessions (auth_mode client_only)",
    );
  }
  if (config.authMode === "developer_only" && principal.scope === "end_user") {
    throw forbidden("this app MCP endpoint accepts only developer tokens (auth_mode developer_only)");
  }
  const caller =
    principal.scope === "developer" ? `dev:${principal.developerId}` : `user:${principal.user.id}`;
  await enforceRateLimit(c.env, `mcp:${principal.project.id}:${caller}`, "this app MCP caller");
  const waitUntil = (promise: Promise<unknown>) => c.executionCtx.waitUntil(promise);
  const surface = await appSurface(c.env, c.var.db, principal.project, config, waitUntil);
  return handleMcpHttpRequest(c.req.raw, {
    handlers: appMcpHandlers,
    ctx: { env: c.env, db: c.var.db, principal, surface, waitUntil },
    onInternalError: (err, method) => console.error(`app MCP ${method} failed`, err),
  });
}

appMcpRoutes.all("/app/:projectId/mcp", (c) => serve(c, { projectId: c.req.param("projectId") }));

appMcpRoutes.all("/mcp", (c, next) => {
  const slug = slugFromHost(new URL(c.req.url).hostname, c.env.APP_MCP_HOST_SUFFIX);
  return slug ? serve(c, { slug }) : next();
});
