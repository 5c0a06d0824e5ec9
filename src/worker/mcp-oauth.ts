/**
 * The MCP endpoints' OAuth hook (src/oauth): the resource an MCP request is addressed to, the 401
 * challenge that leads an OAuth client to sign in, and the app MCP's Bearer validation. Kept apart
 * from the OAuth routes (routes/oauth.ts) because the app MCP endpoint is on the hot path: this module
 * loads the authorization server lazily, so a Worker that serves header credentials never compiles it
 * (README "Decisions").
 */
import type { Context } from "hono";
import type { ProjectAccess, ProjectSelector } from "../credentials/principal.ts";
import { authenticateOAuthProject } from "../credentials/resolve.ts";
import { AppError } from "../errors.ts";
import { lazyModule } from "../lazy-module.ts";
import { wwwAuthenticate } from "../oauth/challenge.ts";
import {
  appResource,
  issuerOf,
  platformResource,
  resourceMetadataUrl,
  slugResource,
} from "../oauth/resources.ts";
import type { OAuthProps } from "../oauth/server.ts";
import { isOAuthToken } from "../oauth/tokens.ts";
import { bearerToken } from "./auth.ts";
import type { AppEnv } from "./hono.ts";

/** The OAuth provider, loaded with the first OAuth token presented. */
const oauthServer = lazyModule(() => import("../oauth/server.ts"));

type Ctx = Context<AppEnv>;

/** Issuers by `PUBLIC_BASE_URL` (one per deployment): every app MCP request asks, and it parses a URL. */
const issuers = new Map<string, string>();

export function issuer<E extends AppEnv>(c: Context<E>): string {
  const base = c.env.PUBLIC_BASE_URL;
  // Without a base the issuer is the request's own origin.
  if (!base?.trim()) return issuerOf(base, c.req.url);
  let known = issuers.get(base);
  if (known === undefined) {
    known = issuerOf(base, c.req.url);
    issuers.set(base, known);
  }
  return known;
}

/** The canonical resource an MCP request is addressed to (`slug` set: the hostname endpoint). */
export function mcpResource(c: Ctx, endpoint: { projectId: string } | { slug: string } | "platform"): string {
  if (endpoint === "platform") return platformResource(issuer(c));
  if ("slug" in endpoint) return slugResource(endpoint.slug, c.env.APP_MCP_HOST_SUFFIX, issuer(c));
  return appResource(issuer(c), endpoint.projectId);
}

/** The 401 an MCP endpoint answers, with the challenge that leads an OAuth client to sign in. */
export function mcpUnauthorized(c: Ctx, resource: string, err: AppError): Response {
  const credentials = c.req.header("authorization") !== undefined || c.req.header("x-api-key") !== undefined;
  const challenge = wwwAuthenticate({
    resourceMetadataUrl: resourceMetadataUrl(resource),
    ...(credentials ? { error: "invalid_token" as const, description: err.message } : {}),
  });
  return c.json({ error: { code: err.code, message: err.message } }, 401, { "www-authenticate": challenge });
}

/**
 * Who a grant acts as, and the grant (checked against `revoked_oauth_grants`), as resolution takes
 * it; with `accessTokenId` (an MCP request's token, not a refresh) that token is checked against
 * `revoked_oauth_tokens` too.
 */
export const grantPrincipal = (props: OAuthProps, grantId: string, accessTokenId?: string) =>
  props.kind === "developer"
    ? {
        kind: "developer" as const,
        developerId: props.developerId,
        tokenId: props.tokenId,
        grantId,
        accessTokenId,
      }
    : { kind: "end_user" as const, userId: props.userId, grantId, accessTokenId };

export const INVALID_OAUTH = "invalid, expired or revoked access token for this MCP endpoint";

/**
 * App MCP: when the Bearer is one of the provider's tokens, validate it for `resource` and resolve
 * its principal (the same `ProjectAccess` header credentials give); null when it is not an OAuth
 * token, so the caller falls through to the header resolver. The authorization server (and with it
 * `@cloudflare/workers-oauth-provider`) is imported only here, once such a token is presented.
 */
export async function authenticateAppMcpOAuth(
  c: Ctx,
  selector: ProjectSelector,
  resource: string,
): Promise<ProjectAccess | null> {
  const token = bearerToken(c);
  if (!token || !isOAuthToken(token)) return null;
  const { validateAccessToken } = await oauthServer();
  const caller = await validateAccessToken(c.env, issuer(c), resource, token);
  if (!caller || caller.props.projectId === null) throw new AppError(401, "unauthorized", INVALID_OAUTH);
  const access = await authenticateOAuthProject(
    c.var.db,
    grantPrincipal(caller.props, caller.grantId, caller.accessTokenId),
    selector,
  );
  // A hostname can move to another project; the grant stays with the project it was made for.
  if (access.principal.project.id !== caller.props.projectId)
    throw new AppError(401, "unauthorized", INVALID_OAUTH);
  return access;
}
