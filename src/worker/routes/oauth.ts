/**
 * MCP authorization (OAuth 2.1) on top of `@cloudflare/workers-oauth-provider` (src/oauth):
 * - RFC 9728 protected resource metadata for every MCP endpoint;
 * - the provider's own endpoints, handed the request unchanged: RFC 8414 metadata, dynamic client
 *   registration (RFC 7591), token + refresh + revocation (RFC 7009);
 * - `/authorize`: the sign-in and consent page (end user of the app, or developer), CSRF-bound to
 *   the browser by a one-time transaction in KV and an HttpOnly SameSite cookie;
 * - grant listing and revocation: the developer's (`/v1/admin/projects/:id/oauth/grants`) and the
 *   end user's own (`/v1/auth/oauth/grants`);
 * - `authenticatePlatformMcpOAuth`, the platform MCP's hook: a Bearer of the provider's shape is
 *   validated for the platform resource (the app MCP's hook, on the hot path, is src/worker/mcp-oauth.ts).
 */
import {
  AuthorizationError,
  type AuthRequest,
  authorizationErrorRedirect,
  CimdFetchError,
  type OAuthHelpers,
} from "@cloudflare/workers-oauth-provider";
import { type Context, Hono, type Next } from "hono";
import { bodyLimit } from "hono/body-limit";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import * as v from "valibot";
import { constantTimeEqual, sha256Hex } from "../../accounts/crypto.ts";
import { SigninSchema } from "../../accounts/schemas.ts";
import { checkSigninPassword } from "../../accounts/signin.ts";
import { isUuid } from "../../credentials/principal.ts";
import {
  authenticateOAuthDeveloper,
  authenticateOAuthProject,
  projectForSignin,
  verifyDeveloperToken,
} from "../../credentials/resolve.ts";
import { AppError, notFound } from "../../errors.ts";
import {
  appSelectorOf,
  appSigninTarget,
  authorizationGrant,
  authorizeTarget,
  describeConsent,
  invalidRequestRefusal,
  isRefusal,
  OWN_HOST_REDIRECT,
  onOwnHost,
  PLATFORM_SIGNIN,
  type Refusal,
  type SignedIn,
  type SigninTarget,
  unfetchedDocumentRefusal,
} from "../../oauth/authorize.ts";
import {
  documentAcceptedElsewhere,
  documentAcceptedRecently,
  fetchesMetadataDocument,
  isMetadataDocumentUrl,
  redirectedDocumentDescription,
  refusedRedirect,
  rememberAcceptedDocument,
} from "../../oauth/cimd.ts";
import { grantPageInput } from "../../oauth/grant-page.ts";
import {
  type GrantRevoker,
  listProjectGrants,
  listSubjectGrants,
  recordProjectSubject,
  revokeProjectGrant,
  revokeSubjectGrant,
} from "../../oauth/grants.ts";
import { authorizePage, errorPage } from "../../oauth/pages.ts";
import { REFRESH_TOKEN_REUSED, refreshWithReuseDetection } from "../../oauth/refresh-reuse.ts";
import {
  APP_MCP_NAME,
  appResource,
  mcpEndpointOnHost,
  platformResource,
  protectedResourceMetadata,
  type ResourceTarget,
} from "../../oauth/resources.ts";
import {
  recordingRevoker,
  recordRevokedAccessToken,
  recordRevokedGrant,
} from "../../oauth/revocation-records.ts";
import { revokedAccessToken, revokedByProvider } from "../../oauth/revocations.ts";
import {
  authorizationServer,
  checkGrantsWith,
  MAX_CLIENT_METADATA_BYTES,
  OAUTH_PATHS,
  readAccessTokenRecord,
  readGrantRecord,
  validateAccessToken,
} from "../../oauth/server.ts";
import {
  closeSigninTransaction,
  openSigninTransaction,
  SIGNIN_TX_TTL_S,
  signinTransaction,
} from "../../oauth/signin-transactions.ts";
import {
  oauthErrorCode,
  oversizedTokenRequest,
  presentedToken,
  requestClientId,
  tokenRequestForm,
} from "../../oauth/token-request.ts";
import {
  isOAuthToken,
  MAX_OAUTH_ID_BYTES,
  oauthIdTooLong,
  subjectOf,
  tokenGrantRef,
} from "../../oauth/tokens.ts";
import { bearerToken } from "../auth.ts";
import type { Env } from "../env.ts";
import type { AppEnv } from "../hono.ts";
import { dbModule } from "../lazy.ts";
import { grantPrincipal, INVALID_OAUTH, issuer, mcpResource } from "../mcp-oauth.ts";
import {
  clientIp,
  enforceRateLimit,
  RateLimitedError,
  RateLimiterUnavailableError,
  rateLimiter,
} from "../rate-limit.ts";
import { formBody } from "../request.ts";
import { requireEndUser, requireProjectAdmin } from "../require.ts";

type Ctx = Context<AppEnv>;

const TX_COOKIE = "amba_oauth_tx";

/**
 * Where the sign-in form's transaction cookie lives. Over https it is `__Host-amba_oauth_tx`
 * (Secure, Path=/, no Domain): a browser takes it only from this very origin over https, so no
 * sibling subdomain, and no network attacker on plain http, can plant or shadow one (MCP security
 * best practices for consent cookies; the provider's own consent helpers insist on the prefix).
 * Plain `amba_oauth_tx` on `/authorize` under `npm run dev` (http), where `__Host-` cannot be set.
 */
const txCookie = (c: Ctx) =>
  new URL(c.req.url).protocol === "https:"
    ? { prefix: "host" as const, path: "/", secure: true }
    : { prefix: undefined, path: OAUTH_PATHS.authorize, secure: false };

/** The OAuth helpers (grants, clients) of this deployment's authorization server. */
export function oauthHelpers<E extends AppEnv>(c: Context<E>): OAuthHelpers {
  const iss = issuer(c);
  return authorizationServer(iss, [platformResource(iss)]).getOAuthApi(c.env);
}

/** Platform MCP: the developer an OAuth Bearer names, or null when the Bearer is not an OAuth token. */
export async function authenticatePlatformMcpOAuth(
  c: Ctx,
): Promise<{ developerId: string; tokenId: string; grantId: string; accessTokenId: string } | null> {
  const token = bearerToken(c);
  if (!token || !isOAuthToken(token)) return null;
  const caller = await validateAccessToken(c.env, issuer(c), mcpResource(c, "platform"), token);
  if (caller?.props.kind !== "developer" || caller.props.projectId !== null)
    throw new AppError(401, "unauthorized", INVALID_OAUTH);
  const grant = {
    developerId: caller.props.developerId,
    tokenId: caller.props.tokenId,
    grantId: caller.grantId,
    accessTokenId: caller.accessTokenId,
  };
  await authenticateOAuthDeveloper(c.var.db, grant);
  return grant;
}

// ── Grants ──────────────────────────────────────────────────────────────────────────────────────

/**
 * Every revocation this Worker makes (developer, end user, reuse detection): recorded first, then
 * deleted by the provider (`recordingRevoker`, src/oauth/revocation-records.ts). This isolate's
 * cached resolutions of it are forgotten once the request is answered (the `credentialHolder` its
 * route sets, src/worker/app.ts).
 */
export const grantRevoker = <E extends AppEnv>(c: Context<E>): GrantRevoker =>
  recordingRevoker(c.var.db, oauthHelpers(c));

/** Revoke a project's grant, or 404. */
export async function revokeProjectGrantOr404<E extends AppEnv>(
  c: Context<E>,
  projectId: string,
  grantId: string,
) {
  if (!(await revokeProjectGrant(c.env, grantRevoker(c), projectId, grantId)))
    throw notFound("grant not found");
  return { id: grantId, revoked: true };
}

// A grant recorded as revoked, or whose principal is gone for good, ends at its next code exchange
// or refresh (src/oauth/server.ts `endDeadGrants`): the same checks as at every MCP request, in one
// statement.
checkGrantsWith(async (env, props, grantId) => {
  const { createDb } = await dbModule();
  const db = createDb(env as Env);
  try {
    if (props.projectId !== null)
      await authenticateOAuthProject(db, grantPrincipal(props, grantId), { projectId: props.projectId });
    else if (props.kind === "developer") await authenticateOAuthDeveloper(db, { ...props, grantId });
    return true;
  } catch (err) {
    if (err instanceof AppError && (err.status === 401 || err.status === 404)) return false;
    throw err;
  }
});

export const oauthRoutes = new Hono<AppEnv>();

oauthRoutes.get("/v1/admin/projects/:id/oauth/grants", requireProjectAdmin(), async (c) => {
  const { project } = c.var;
  const page = grantPageInput(c.req.query("limit"), c.req.query("cursor"));
  return c.json(await listProjectGrants(c.env, oauthHelpers(c), project.id, page));
});

oauthRoutes.delete("/v1/admin/projects/:id/oauth/grants/:grantId", requireProjectAdmin(), async (c) => {
  const { project } = c.var;
  return c.json(await revokeProjectGrantOr404(c, project.id, c.req.param("grantId")));
});

oauthRoutes.get("/v1/auth/oauth/grants", requireEndUser(), async (c) => {
  return c.json({
    grants: await listSubjectGrants(oauthHelpers(c), subjectOf("end_user", c.var.endUser.id)),
  });
});

oauthRoutes.delete("/v1/auth/oauth/grants/:grantId", requireEndUser(), async (c) => {
  const grantId = c.req.param("grantId");
  const subject = subjectOf("end_user", c.var.endUser.id);
  if (!(await revokeSubjectGrant(c.env, grantRevoker(c), subject, grantId)))
    throw notFound("grant not found");
  return c.json({ id: grantId, revoked: true });
});

// ── Metadata and the provider's endpoints ──────────────────────────────────────────────────────

const protectedResource = (c: Ctx, resource: string, name: string): Response =>
  c.json(protectedResourceMetadata(resource, issuer(c), name), 200, {
    "access-control-allow-origin": "*",
    "cache-control": "public, max-age=300",
  });

oauthRoutes.get("/.well-known/oauth-protected-resource/mcp", (c) => {
  const { resource, name } = mcpEndpointOnHost(
    new URL(c.req.url).hostname,
    issuer(c),
    c.env.APP_MCP_HOST_SUFFIX,
  );
  return protectedResource(c, resource, name);
});

// Browser-based MCP clients fetch the metadata cross-origin with an `MCP-Protocol-Version` header.
oauthRoutes.options("/.well-known/oauth-protected-resource/*", (c) =>
  c.body(null, 204, {
    "access-control-allow-origin": "*",
    "access-control-allow-methods": "GET, OPTIONS",
    "access-control-allow-headers": "mcp-protocol-version",
    "access-control-max-age": "86400",
  }),
);

oauthRoutes.get("/.well-known/oauth-protected-resource/app/:projectId/mcp", (c) => {
  const projectId = c.req.param("projectId").toLowerCase();
  if (!isUuid(projectId)) throw notFound("no such MCP endpoint");
  return protectedResource(c, appResource(issuer(c), projectId), APP_MCP_NAME);
});

/**
 * RFC 6749 §5.2 and RFC 7591 §3.2.2: the token and registration endpoints answer errors as
 * `{error, error_description}` with `error` a string — also the platform's own failures there (a
 * store past its deadline, a rate limit, an unexpected error), which the rest of the API answers
 * as `{error: {code, message}}`, a shape an OAuth client cannot read. Status and headers
 * (`Retry-After`) are kept; 429 and 503 are `temporarily_unavailable`, other 5xx `server_error`.
 */
const oauthErrorBody = async (c: Ctx, next: Next) => {
  await next();
  if (!c.error) return;
  const { status, headers } = c.res;
  const body = (await c.res.json().catch(() => null)) as { error?: { message?: unknown } } | null;
  const error =
    status === 429 || status === 503
      ? "temporarily_unavailable"
      : status >= 500
        ? "server_error"
        : "invalid_request";
  const description = typeof body?.error?.message === "string" ? body.error.message : "internal error";
  const res = Response.json({ error, error_description: description }, { status, headers });
  res.headers.delete("content-length");
  res.headers.set("cache-control", "no-store");
  c.res = undefined; // replaced, not merged with the JSON error's headers
  c.res = res;
};
oauthRoutes.use(OAUTH_PATHS.token, oauthErrorBody);
oauthRoutes.use(OAUTH_PATHS.register, oauthErrorBody);

/** The token requests whose 200 issued tokens (the others that answer 200 are revocations). */
const ISSUING_GRANTS: ReadonlySet<string> = new Set(["authorization_code", "refresh_token"]);

const METADATA_FETCHES = "requests naming a client metadata document (a client_id URL) from this address";

/**
 * Client ID Metadata Documents (src/oauth/cimd.ts): a token request whose client (the one the
 * provider looks up, `requestClientId` of src/oauth/token-request.ts) is a document URL the
 * provider does not hold in its cache makes the Worker fetch a URL the caller chose. Each address
 * gets AUTH_IP_RATE_LIMITER's budget of such requests, shared with /authorize
 * (`oauth-client-metadata:<ip>`, see {@link parseRequest}); over it, 429 before any fetch. A
 * registered client, or a document in the cache, costs no fetch and is not counted; nor is a
 * document whose client this isolate issued tokens to lately (an authorization-code or refresh
 * grant answered 200; `documentAcceptedRecently`: a hosted assistant refreshing its users' tokens
 * from shared egress addresses is not the caller the budget is for).
 */
oauthRoutes.use(OAUTH_PATHS.token, async function metadataDocumentBudget(c, next) {
  const ip = clientIp(c.req.raw.headers);
  if (ip && c.req.method === "POST") {
    const form = await tokenRequestForm(c.req.raw);
    const client = requestClientId(form, c.req.header("authorization"));
    if (client === null || oauthIdTooLong(client) || !isMetadataDocumentUrl(client)) return next();
    if (!documentAcceptedRecently(client) && (await fetchesMetadataDocument(client))) {
      try {
        await enforceRateLimit(
          c.env,
          `oauth-client-metadata:${ip}`,
          METADATA_FETCHES,
          "AUTH_IP_RATE_LIMITER",
        );
      } catch (err) {
        if (!(err instanceof RateLimitedError) || !(await documentAcceptedElsewhere(c.env.OAUTH_KV, client)))
          throw err;
      }
    }
    await next();
    // Only a grant that issued tokens: a revocation answers 200 too (RFC 7009), for any token and a
    // public client named by `client_id` alone, and would exempt any document that parses.
    if (c.res.status === 200 && ISSUING_GRANTS.has(String(form?.get("grant_type") ?? "")))
      rememberAcceptedDocument(client, c.env.OAUTH_KV, (p) => c.executionCtx.waitUntil(p));
    return;
  }
  await next();
});

/**
 * A token request whose client's metadata document URL answered with a redirect (refused, not
 * followed: src/oauth/cimd.ts `refuseMetadataDocumentRedirects`) gets the provider's
 * `invalid_client`, with a description that says why instead of "Client not found".
 */
oauthRoutes.use(OAUTH_PATHS.token, async function redirectedDocumentError(c, next) {
  await next();
  if (c.req.method !== "POST" || c.res.status !== 401) return;
  const client = requestClientId(await tokenRequestForm(c.req.raw), c.req.header("authorization"));
  const status = client !== null && isMetadataDocumentUrl(client) ? refusedRedirect(client) : undefined;
  if (status === undefined || (await oauthErrorCode(c.res)) !== "invalid_client") return;
  const res = Response.json(
    { error: "invalid_client", error_description: redirectedDocumentDescription(status) },
    { status: 401, headers: c.res.headers },
  );
  res.headers.delete("content-length");
  c.res = undefined; // replaced, not merged
  c.res = res;
});

/**
 * The request as the provider must see it: on the issuer's origin. The provider answers its
 * endpoints (RFC 8414 metadata, registration, token) only at URLs on its issuer's origin and
 * anything else with an empty 404; the Worker also answers on other hosts — an app's hostname
 * (whose clients may look for the authorization server on the MCP server's own origin), or any
 * host a caller builds its URL on — so there the request is handed over as if addressed to the
 * issuer. The documents and endpoints it names are the issuer's all the same.
 */
function onIssuerOrigin(c: Ctx): Request {
  const iss = issuer(c);
  const url = new URL(c.req.url);
  if (url.origin === iss) return c.req.raw;
  return new Request(`${iss}${url.pathname}${url.search}`, c.req.raw);
}

/** Metadata and registration need no particular resource; the platform's stands in. */
const asFetch = (c: Ctx, resource: string) =>
  authorizationServer(issuer(c), [resource]).fetch(
    onIssuerOrigin(c),
    c.env,
    c.executionCtx as ExecutionContext<unknown>,
  );

/**
 * RFC 8414 metadata, without the provider's `protected_resources`: built with the platform's resource
 * standing in, it would list that one alone, while this server issues tokens for every project's
 * endpoints too — an open-ended set, which RFC 9728 §4 leaves unlisted (each endpoint's own resource
 * metadata names this issuer).
 */
oauthRoutes.on(["GET", "HEAD", "OPTIONS"], OAUTH_PATHS.metadata, async (c) => {
  const res = await asFetch(c, platformResource(issuer(c)));
  if (c.req.method !== "GET" || !res.ok) return res;
  const { protected_resources: _, ...metadata } = (await res.json()) as Record<string, unknown>;
  return new Response(JSON.stringify(metadata), res);
});
// Registration is open (RFC 7591) and the provider keeps every client for 90 days, so each address
// gets AUTH_IP_RATE_LIMITER's budget of registrations (under its own key), each of a bounded size.
// Every method goes to the provider, which answers one other than POST and OPTIONS with 405 and an
// OAuth error body (a client reads `error` as a string), not the API's 404 `{error: {code, message}}`.
oauthRoutes.all(
  OAUTH_PATHS.register,
  bodyLimit({
    maxSize: MAX_CLIENT_METADATA_BYTES,
    onError: (c) =>
      c.json(
        {
          error: "invalid_client_metadata",
          error_description: `client metadata is at most ${MAX_CLIENT_METADATA_BYTES} bytes`,
        },
        413,
      ),
  }),
  async (c) => {
    const ip = clientIp(c.req.raw.headers);
    if (c.req.method === "POST" && ip) {
      await enforceRateLimit(
        c.env,
        `oauth-register:${ip}`,
        "client registrations from this address",
        "AUTH_IP_RATE_LIMITER",
      );
    }
    return asFetch(c, platformResource(issuer(c)));
  },
);

oauthRoutes.all(OAUTH_PATHS.token, async (c) => {
  // A code, refresh token or revoked token names its grant; the grant names its one resource.
  let resource = platformResource(issuer(c));
  if (c.req.method === "POST") {
    const form = await tokenRequestForm(c.req.raw);
    if (oversizedTokenRequest(form, c.req.header("authorization")))
      return c.json(
        {
          error: "invalid_request",
          error_description: `client_id (also as a client assertion's iss), code, refresh_token and token are at most ${MAX_OAUTH_ID_BYTES} bytes`,
        },
        400,
      );
    const token = presentedToken(form);
    const ref = token ? tokenGrantRef(token) : null;
    // A revocation, or a refused code or refresh token (which revokes its grant), ends tokens of
    // the subject the presented one names: its resolutions cached here are forgotten.
    if (ref) c.set("credentialHolder", { subject: ref.subject });
    // A revocation (RFC 7009: a token, no grant type) may name an access token, revoked alone: its
    // record is read alongside the grant's, before the library deletes it.
    const revocation = token !== null && ref !== null && !form?.get("grant_type");
    const tokenId = revocation && token ? await sha256Hex(token) : null;
    const [grant, accessBefore] = await Promise.all([
      ref ? readGrantRecord(c.env, ref.subject, ref.grantId) : null,
      ref && tokenId ? readAccessTokenRecord(c.env, ref.subject, ref.grantId, tokenId) : null,
    ]);
    if (typeof grant?.resource === "string") resource = grant.resource;
    const clientId = requestClientId(form, c.req.header("authorization"));
    if (token && ref && grant && form?.get("grant_type") === "refresh_token") {
      const res = await refreshWithReuseDetection(
        c.env,
        ref,
        token,
        grant,
        clientId,
        () => asFetch(c, resource),
        grantRevoker(c),
      );
      if (res !== "reused") return res;
      return c.json(REFRESH_TOKEN_REUSED, 400, { "cache-control": "no-store", pragma: "no-cache" });
    }
    if (token && ref && grant) {
      const res = await asFetch(c, resource);
      if (await revokedByProvider(form, token, grant, clientId, res))
        await recordRevokedGrant(c.var.db, ref.grantId);
      else if (tokenId && revokedAccessToken(form, accessBefore, grant, clientId, res))
        await recordRevokedAccessToken(c.var.db, tokenId, accessBefore.expiresAt);
      return res;
    }
  }
  return asFetch(c, resource);
});

// ── /authorize ──────────────────────────────────────────────────────────────────────────────────

const PAGE_HEADERS = {
  "cache-control": "no-store",
  "x-frame-options": "DENY",
  "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
};

const page = (c: Ctx, body: ReturnType<typeof errorPage>, status = 200) =>
  c.html(body, status as 200, PAGE_HEADERS);

const refuse = (c: Ctx, status: number, title: string, message: string) =>
  page(c, errorPage(title, message), status);

/**
 * Count a browser request against its address's `AUTH_IP_RATE_LIMITER` budget under `prefix`;
 * over it (429) or with the limiter unable to answer (503, it fails closed), the page saying so,
 * with `Retry-After`. Null: go on. Without a client IP (tests, other hosts) nothing is counted.
 */
async function pageRateLimit(
  c: Ctx,
  prefix: string,
  what: string,
  title: string,
  message?: string,
): Promise<Response | null> {
  const ip = clientIp(c.req.raw.headers);
  if (!ip) return null;
  try {
    await enforceRateLimit(c.env, `${prefix}:${ip}`, what, "AUTH_IP_RATE_LIMITER");
    return null;
  } catch (err) {
    if (err instanceof RateLimiterUnavailableError) {
      c.header("retry-after", err.headers["retry-after"]);
      return refuse(c, 503, "Sign-in is briefly unavailable", err.message);
    }
    if (!(err instanceof RateLimitedError)) throw err;
    c.header("retry-after", err.headers["retry-after"]);
    return refuse(c, 429, title, message ?? err.message);
  }
}

const refused = (c: Ctx, refusal: Refusal) => refuse(c, refusal.status, refusal.title, refusal.message);

/** What the page offers for the endpoint a request names: the app it looks up, or its refusal page. */
async function signinTarget(c: Ctx, target: ResourceTarget): Promise<SigninTarget | Response> {
  if (target.kind === "platform") return PLATFORM_SIGNIN;
  const selector = appSelectorOf(target);
  const decided = appSigninTarget(selector, await projectForSignin(c.var.db, selector));
  return isRefusal(decided) ? refused(c, decided) : decided;
}

/** Parse and validate the authorization request (client, redirect URI, PKCE S256, resource). */
async function parseRequest(
  c: Ctx,
  request: Request,
): Promise<
  { oauth: OAuthHelpers; authRequest: AuthRequest; target: ResourceTarget; resource: string } | Response
> {
  const iss = issuer(c);
  const named = authorizeTarget(request.url, iss, c.env.APP_MCP_HOST_SUFFIX);
  if (isRefusal(named)) return refused(c, named);
  const { target, resource } = named;
  // A client_id URL the provider must fetch (the page's view and each form post look it up): the
  // address's budget of such requests, shared with the token endpoint (metadataDocumentBudget).
  if (await fetchesMetadataDocument(new URL(request.url).searchParams.get("client_id"))) {
    const limited = await pageRateLimit(
      c,
      "oauth-client-metadata",
      METADATA_FETCHES,
      "Too many sign-in requests",
      "Too many sign-in requests naming a client metadata document (a client_id URL) came from this address. Wait a minute, then try again.",
    );
    if (limited) return limited;
  }
  const oauth = authorizationServer(iss, [resource]).getOAuthApi(c.env);
  try {
    const authRequest = await oauth.parseAuthRequest(request);
    if (onOwnHost(authRequest.redirectUri, iss, c.env.APP_MCP_HOST_SUFFIX))
      return refused(c, OWN_HOST_REDIRECT);
    return { oauth, authRequest, target, resource };
  } catch (err) {
    // A client_id that is a URL (Client ID Metadata Document) whose document cannot be fetched
    // names no client we can check: the client's fault, told to the person, not a 500.
    if (err instanceof CimdFetchError)
      return refused(c, unfetchedDocumentRefusal(refusedRedirect(err.metadataUrl)));
    // Shown here, never redirected (even when the provider offers `redirectTo`): registration is
    // open, so a redirect URI is whatever its registrant chose, and an automatic redirect on a
    // malformed request would make this origin an open redirector (RFC 9700 §4.11.2). Only a person
    // who saw this page (Allow or Deny) is sent back to the client.
    if (err instanceof AuthorizationError) return refused(c, invalidRequestRefusal(err.description));
    throw err;
  }
}

/**
 * The sign-in page is read by a person: a failure the platform names and the person can wait out
 * (a database or store that did not answer in time: a 5xx `AppError`) is shown as a page, with its
 * `Retry-After`, instead of the JSON the API routes answer with.
 */
oauthRoutes.use(OAUTH_PATHS.authorize, async (c, next) => {
  await next();
  const err = c.error;
  if (!(err instanceof AppError) || err.status < 500) return;
  const res = await refuse(c, err.status, "Sign-in is briefly unavailable", err.message);
  for (const [name, value] of Object.entries(err.headers ?? {})) res.headers.set(name, value);
  c.res = undefined; // replaced, not merged with the JSON error's headers
  c.res = res;
});

oauthRoutes.get(OAUTH_PATHS.authorize, async (c) => {
  // Open to anyone and each view costs a KV write, a query and maybe a client-metadata fetch: each
  // address gets AUTH_IP_RATE_LIMITER's budget of views (under its own key), before any of them.
  const limited = await pageRateLimit(
    c,
    "oauth-authorize",
    "sign-in pages",
    "Too many sign-in requests",
    "Too many sign-in pages were opened from this address. Wait a minute, then try again.",
  );
  if (limited) return limited;
  const parsed = await parseRequest(c, c.req.raw);
  if (parsed instanceof Response) return parsed;
  const target = await signinTarget(c, parsed.target);
  if (target instanceof Response) return target;
  const consent = await describeConsent(parsed.oauth, parsed.authRequest);
  const tx = await openSigninTransaction(c.env, new URL(c.req.url).search);
  const { prefix, path, secure } = txCookie(c);
  setCookie(c, TX_COOKIE, tx, {
    ...(prefix ? { prefix } : {}),
    path,
    httpOnly: true,
    sameSite: "Lax",
    secure,
    maxAge: SIGNIN_TX_TTL_S,
  });
  return page(
    c,
    authorizePage({
      clientName: consent.clientName,
      appName: target.appName,
      platform: parsed.target.kind === "platform",
      redirectHost: consent.redirectHost,
      tx,
      endUserAllowed: target.endUserAllowed,
      developerAllowed: target.developerAllowed,
      notice: target.notice,
    }),
  );
});

const FormSchema = v.object({
  tx: v.string(),
  mode: v.picklist(["end_user", "developer"]),
  action: v.picklist(["allow", "deny"]),
  email: v.optional(v.string()),
  password: v.optional(v.string()),
  developer_token: v.optional(v.string()),
});

const EXPIRED =
  "This sign-in form has expired or was not sent from this page. Go back to your assistant and connect again.";

oauthRoutes.post(OAUTH_PATHS.authorize, async (c) => {
  // Sign-in attempts count against the caller's IP before anything else runs, as on /v1/auth/*.
  const limited = await pageRateLimit(c, "auth", "auth attempts from this address", "Too many attempts");
  if (limited) return limited;
  const form = v.safeParse(FormSchema, await formBody(c));
  if (!form.success)
    return refuse(c, 400, "Incomplete form", "The sign-in form was incomplete. Go back and try again.");
  const input = form.output;
  // CSRF: the transaction must be the one this browser was given (cookie) and still unused (KV).
  // Cookie and field are both the sender's, so a value longer than any KV key is no transaction.
  if (
    oauthIdTooLong(input.tx) ||
    !constantTimeEqual(getCookie(c, TX_COOKIE, txCookie(c).prefix) ?? "", input.tx)
  )
    return refuse(c, 403, "Form expired", EXPIRED);
  const stored = await signinTransaction(c.env, input.tx);
  if (!stored) return refuse(c, 403, "Form expired", EXPIRED);
  const parsed = await parseRequest(c, new Request(`${issuer(c)}${OAUTH_PATHS.authorize}${stored.query}`));
  if (parsed instanceof Response) return parsed;
  const { oauth, authRequest, resource } = parsed;
  const target = await signinTarget(c, parsed.target);
  if (target instanceof Response) return target;
  const finish = async () => {
    await closeSigninTransaction(c.env, input.tx);
    const { prefix, path, secure } = txCookie(c);
    deleteCookie(c, TX_COOKIE, { ...(prefix ? { prefix } : {}), path, secure });
  };
  if (input.action === "deny") {
    await finish();
    return c.redirect(authorizationErrorRedirect(authRequest, "access_denied"), 302);
  }
  const consent = await describeConsent(oauth, authRequest);
  const again = (status: number, error: string) =>
    page(
      c,
      authorizePage({
        clientName: consent.clientName,
        appName: target.appName,
        platform: parsed.target.kind === "platform",
        redirectHost: consent.redirectHost,
        tx: input.tx,
        endUserAllowed: target.endUserAllowed,
        developerAllowed: target.developerAllowed,
        notice: target.notice,
        error,
        email: input.email,
      }),
      status,
    );

  let who: SignedIn;
  if (input.mode === "end_user") {
    if (!target.endUserAllowed || !target.selector || !target.projectId)
      return refuse(
        c,
        403,
        "App accounts cannot connect here",
        target.notice ?? "This MCP endpoint does not accept app accounts.",
      );
    const signin = v.safeParse(SigninSchema, { email: input.email ?? "", password: input.password ?? "" });
    if (!signin.success) return again(400, "Enter your email address and password.");
    const found = await projectForSignin(c.var.db, target.selector, signin.output.email);
    if (!found) return refuse(c, 404, "No such app", "This MCP endpoint names no app.");
    try {
      await checkSigninPassword(
        rateLimiter(c.env, "AUTH_RATE_LIMITER"),
        found.project.id,
        signin.output,
        found.signinUser,
      );
    } catch (err) {
      // A wrong password, too many attempts, or a limiter that cannot answer (it fails closed):
      // the form again, saying which.
      if (err instanceof AppError && (err.status === 401 || err.status === 429 || err.status === 503))
        return again(err.status, err.status === 401 ? "Invalid email or password." : err.message);
      throw err;
    }
    const user = found.signinUser as NonNullable<typeof found.signinUser>;
    who = { kind: "end_user", projectId: found.project.id, user: { id: user.id, email: user.email } };
  } else {
    if (!target.developerAllowed)
      return refuse(
        c,
        403,
        "Developers cannot connect here",
        `${target.appName} accepts only app accounts on this MCP endpoint (auth mode client_only).`,
      );
    let dev: Awaited<ReturnType<typeof verifyDeveloperToken>>;
    try {
      dev = await verifyDeveloperToken(c.var.db, input.developer_token ?? "", target.selector);
    } catch (err) {
      if (err instanceof AppError && (err.status === 401 || err.status === 404))
        return again(
          401,
          `That developer token is not valid${target.projectId ? ` for ${target.appName}` : ""}.`,
        );
      throw err;
    }
    who = {
      kind: "developer",
      projectId: target.projectId,
      developerId: dev.developerId,
      tokenId: dev.tokenId,
    };
  }
  const { props, metadata } = authorizationGrant(who, consent.clientName, resource);
  const subject = subjectOf(props.kind, metadata.principalId);
  // Completing it revokes the subject's earlier grants of this client (the provider's default).
  c.set("credentialHolder", { subject });
  const { redirectTo } = await oauth.completeAuthorization({
    request: authRequest,
    userId: subject,
    metadata,
    scope: authRequest.scope,
    props,
  });
  if (metadata.projectId) await recordProjectSubject(c.env, metadata.projectId, subject);
  await finish();
  return c.redirect(redirectTo, 302);
});
