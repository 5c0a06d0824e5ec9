/**
 * Routes declare their auth: `routes.get(path, requireProjectAdmin(), async (c) => …)`. Each factory
 * authenticates once (through src/worker/auth.ts, which runs src/credentials/: one SQL statement)
 * and puts the typed principal into the context (`c.var.developerId`, `c.var.project`, …); each
 * factory's type says which (`Authenticated<…>`, src/worker/hono.ts), so only a route that
 * declares it can read them.
 * A failure throws the same 401/404 `AppError` the handler used to throw, before the handler (and
 * so before its body is read). The MCP endpoints authenticate by hand: they add OAuth Bearers and
 * answer a 401 with a `WWW-Authenticate` challenge (routes/app-mcp.ts, routes/platform-mcp.ts).
 */
import type { MiddlewareHandler } from "hono";
import { hotAccess } from "../credentials/principal.ts";
import { subjectOf } from "../oauth/tokens.ts";
import {
  apiKeyHeader,
  authenticateAppClient,
  authenticateClientKey,
  authenticateDeveloper,
  authenticateEndUser,
  authenticateProject,
  authenticateProjectAdmin,
  bearerToken,
  presentedCredentials,
} from "./auth.ts";
import { cachedCredential, credentialKey } from "./credential-cache.ts";
import { type Authenticated, answerAs } from "./hono.ts";
import { noteActiveUser } from "./metering.ts";
import { enforceDeveloperRateLimit } from "./rate-limit.ts";

/**
 * Developer Bearer → `c.var.developerId` and `c.var.developerTokenId` (401 otherwise), counted
 * against the developer's rate limit.
 */
export const requireDeveloper = (): MiddlewareHandler<Authenticated<"developerId" | "developerTokenId">> =>
  async function requireDeveloper(c, next) {
    const { developerId, tokenId } = await authenticateDeveloper(c);
    c.set("credentialHolder", { developerId });
    answerAs(c, `developer:${developerId}`, developerId);
    await enforceDeveloperRateLimit(c.env, developerId);
    c.set("developerId", developerId);
    c.set("developerTokenId", tokenId);
    await next();
  };

/**
 * Developer Bearer, and the developer owns the project named by the path parameter `:id` (404
 * otherwise, as for an unknown project) → `c.var.developerId`, `c.var.project`, `c.var.appConfig`;
 * counted against the developer's rate limit.
 */
export const requireProjectAdmin = (): MiddlewareHandler<
  Authenticated<"developerId" | "project" | "appConfig">
> =>
  async function requireProjectAdmin(c, next) {
    const { developerId, project, config } = await authenticateProjectAdmin(c, c.req.param("id") ?? "");
    c.set("credentialHolder", { developerId });
    answerAs(c, project.id, developerId);
    await enforceDeveloperRateLimit(c.env, developerId);
    c.set("developerId", developerId);
    c.set("project", project);
    c.set("appConfig", config);
    await next();
  };

/**
 * Developer Bearer, or `X-Api-Key` + end-user session Bearer, for the project named by `:id` →
 * `c.var.principal`, `c.var.appRuntime`. With `cached`, a resolution is reused from the isolate's
 * credential cache (src/worker/credential-cache.ts) — the REST data routes, on the hot path.
 */
export const requireProjectCaller = (
  options: { cached?: boolean } = {},
): MiddlewareHandler<Authenticated<"principal" | "appRuntime">> =>
  async function requireProjectCaller(c, next) {
    const projectId = c.req.param("id") ?? "";
    const load = async () => hotAccess(await authenticateProject(c, { projectId }));
    const { principal, config } = options.cached
      ? await cachedCredential(
          await credentialKey(...presentedCredentials(c), "rest", projectId.toLowerCase()),
          load,
        )
      : await load();
    answerAs(c, principal.project.id, principal.project.developerId);
    c.set("principal", principal);
    c.set("appRuntime", config);
    c.set("corsOrigins", config.allowedOrigins);
    if (principal.scope === "end_user") noteActiveUser(c, principal.project.id, principal.user.id);
    await next();
  };

/**
 * `X-Api-Key`, with or without an end-user session Bearer (an app's client code: `POST /v1/events`)
 * → `c.var.appClient`, `c.var.appRuntime`. Resolved through the isolate's credential cache like the
 * REST data routes; a session's end user is noted active (`mau`).
 */
export const requireAppClient = (): MiddlewareHandler<Authenticated<"appClient" | "appRuntime">> =>
  async function requireAppClient(c, next) {
    const key = await credentialKey(bearerToken(c), apiKeyHeader(c), "app-client");
    const { principal, config } = await cachedCredential(key, () => authenticateAppClient(c));
    answerAs(c, principal.project.id, principal.project.developerId);
    c.set("appClient", principal);
    c.set("appRuntime", config);
    c.set("corsOrigins", config.allowedOrigins);
    if (principal.user) noteActiveUser(c, principal.project.id, principal.user.id);
    await next();
  };

/** `X-Api-Key` alone (end-user sign-up) → `c.var.project`, the key's project. */
export const requireClientKey = (): MiddlewareHandler<Authenticated<"project">> =>
  async function requireClientKey(c, next) {
    const { project } = await authenticateClientKey(c);
    answerAs(c, project.id, project.developerId);
    c.set("project", project);
    await next();
  };

/** `X-Api-Key` + session Bearer, no project in the path → `c.var.endUser`, `c.var.project`, `c.var.sessionId`. */
export const requireEndUser = (): MiddlewareHandler<Authenticated<"endUser" | "project" | "sessionId">> =>
  async function requireEndUser(c, next) {
    const { user, project, sessionId } = await authenticateEndUser(c);
    c.set("credentialHolder", { subject: subjectOf("end_user", user.id) });
    answerAs(c, project.id, project.developerId);
    noteActiveUser(c, project.id, user.id);
    c.set("endUser", user);
    c.set("project", project);
    c.set("sessionId", sessionId);
    await next();
  };
