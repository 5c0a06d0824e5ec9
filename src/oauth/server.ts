/**
 * The OAuth 2.1 authorization server (`@cloudflare/workers-oauth-provider`) for the MCP endpoints,
 * and the shapes this platform stores in its grants.
 *
 * The provider fixes its resource registry at construction, but every project has its own MCP
 * endpoint, so the registry is built per request from the one resource that request is about: the
 * `resource` of an authorization request, the resource stored on the grant a code or refresh token
 * belongs to, or the endpoint a token is presented at. Audiences are therefore always exact: a
 * token for app A's MCP is never valid at app B's or at the platform MCP.
 *
 * Token shapes and subjects: src/oauth/tokens.ts.
 */
import { OAuthAuthorizationServer, OAuthError } from "@cloudflare/workers-oauth-provider";
import { sha256Hex } from "../accounts/crypto.ts";
import { metadataDocumentsEnabled, refuseMetadataDocumentRedirects } from "./cimd.ts";
import { tokenGrantRef } from "./tokens.ts";

/** Bindings the OAuth layer needs. */
export interface OAuthEnv {
  OAUTH_KV: KVNamespace;
}

/** Paths of the authorization server's endpoints (on the issuer's origin). */
export const OAUTH_PATHS = {
  authorize: "/authorize",
  token: "/oauth/token",
  register: "/oauth/register",
  metadata: "/.well-known/oauth-authorization-server",
} as const;

/**
 * The largest client registration (RFC 7591) accepted, in bytes. Registration is open and the
 * provider keeps each client for 90 days (renewed while in use), so without a bound below the
 * Worker's 1 MiB body limit each registration an address may make (AUTH_IP_RATE_LIMITER's budget)
 * could store a MiB. What hosted and desktop clients send is well under 2 KiB.
 */
export const MAX_CLIENT_METADATA_BYTES = 8 * 1024;

/** Access tokens live one hour; the grant (and its rotating refresh token) 30 days. */
export const ACCESS_TOKEN_TTL_S = 60 * 60;
export const REFRESH_TOKEN_TTL_S = 30 * 24 * 60 * 60;

/** Who a grant acts as: stored encrypted as the grant's props, checked live on every request. */
export type OAuthProps =
  | { kind: "end_user"; projectId: string; userId: string }
  | { kind: "developer"; projectId: string | null; developerId: string; tokenId: string };

/** What a grant says about itself in the clear (grant metadata), for listing and revocation. */
export interface GrantMetadata {
  /** The project whose app MCP the grant is for; null for the platform MCP. */
  projectId: string | null;
  scope: "end_user" | "developer";
  /** The end user's or the developer's id. */
  principalId: string;
  email: string;
  clientName: string;
  resource: string;
}

/**
 * Whether a grant (`grantId`) is not recorded as revoked and the principal it acts as still exists
 * (the end user in its project, the developer token it was authorized with unrevoked): the Worker's
 * check, in the database (src/worker/routes/oauth.ts registers it with {@link checkGrantsWith};
 * this layer has no database). The revocation record is what makes a refresh at a location whose
 * `OAUTH_KV` still reads a just-revoked grant fail (KV reads elsewhere may be up to 60 s stale).
 */
export type GrantLiveness = (env: OAuthEnv, props: OAuthProps, grantId: string) => Promise<boolean>;

let liveness: GrantLiveness | undefined;

/** Use `check` at every code exchange and refresh (see {@link endDeadGrants}). */
export function checkGrantsWith(check: GrantLiveness): void {
  liveness = check;
}

/**
 * The provider's `tokenExchangeCallback`, run at every code exchange and refresh: a grant recorded
 * as revoked (read from a stale `OAUTH_KV`: without this, a refresh there minted new tokens and
 * wrote the grant back), or whose principal is gone for good, is answered `invalid_grant`, and the
 * provider then revokes it. Access is checked live at every MCP request anyway, so for a gone
 * principal nothing leaked without this — but the grant kept refreshing into tokens refused at
 * once, so a client never learned to ask the person again, and the grant stayed listed as live.
 * A paused app (`enabled: false`) or another `auth_mode` is no end: both can be undone, and the MCP
 * endpoint refuses meanwhile.
 */
async function endDeadGrants({
  props,
  env,
  grantId,
}: {
  props: unknown;
  env: OAuthEnv;
  grantId: string;
}): Promise<undefined> {
  if (liveness && !(await liveness(env, props as OAuthProps, grantId)))
    throw new OAuthError("invalid_grant", {
      description:
        "this authorization was revoked, or the account or developer token it was made with no longer exists; authorize again",
    });
  return undefined;
}

const servers = new Map<string, OAuthAuthorizationServer<OAuthEnv>>();

/** The authorization server for `issuer` with exactly these resources (instances are reused per isolate). */
export function authorizationServer(issuer: string, resources: string[]): OAuthAuthorizationServer<OAuthEnv> {
  // The provider's client metadata document fetches must not follow redirects (src/oauth/cimd.ts).
  refuseMetadataDocumentRedirects();
  const key = `${issuer} ${resources.join(" ")}`;
  let server = servers.get(key);
  if (!server) {
    if (servers.size >= 256) servers.clear();
    server = new OAuthAuthorizationServer<OAuthEnv>({
      issuer,
      resources,
      authorizeEndpoint: `${issuer}${OAUTH_PATHS.authorize}`,
      tokenEndpoint: `${issuer}${OAUTH_PATHS.token}`,
      clientRegistrationEndpoint: `${issuer}${OAUTH_PATHS.register}`,
      accessTokenTTL: ACCESS_TOKEN_TTL_S,
      refreshTokenTTL: REFRESH_TOKEN_TTL_S,
      // Client ID Metadata Documents need outbound fetches restricted to public addresses; the
      // provider turns them on only with the `global_fetch_strictly_public` compatibility flag.
      // Each request that would fetch one is counted per address (src/oauth/cimd.ts).
      clientIdMetadataDocumentEnabled: metadataDocumentsEnabled(),
      tokenExchangeCallback: endDeadGrants,
      onError: () => {},
    });
    servers.set(key, server);
  }
  return server;
}

/**
 * A grant as the provider stores it (`grant:<subject>:<grant id>`, its documented KV layout), in
 * one KV read: the fields this platform reads, unchecked — its resource and metadata, its client,
 * and the hashes of its current and previous refresh tokens (src/oauth/refresh-reuse.ts). Null when
 * there is no such grant.
 */
export function readGrantRecord(
  env: OAuthEnv,
  subject: string,
  grantId: string,
): Promise<{
  resource?: unknown;
  metadata?: unknown;
  refreshTokenId?: unknown;
  previousRefreshTokenId?: unknown;
  clientId?: unknown;
  /** Hex SHA-256 of the grant's authorization code, and (until the code is exchanged) its wrapped key. */
  authCodeId?: unknown;
  authCodeWrappedKey?: unknown;
} | null> {
  return env.OAUTH_KV.get(`grant:${subject}:${grantId}`, { type: "json" });
}

/**
 * An access token as the provider stores it (`token:<subject>:<grant id>:<token id>`, the token id
 * being the SHA-256 of the whole token, hex): the fields this platform reads, unchecked — when it
 * expires (seconds since the epoch) and the client it was issued to. Null when there is none (an
 * unknown, expired or revoked token — or a refresh token, which the provider keeps on its grant).
 */
export function readAccessTokenRecord(
  env: OAuthEnv,
  subject: string,
  grantId: string,
  tokenId: string,
): Promise<{ expiresAt?: unknown; grant?: { clientId?: unknown } } | null> {
  return env.OAUTH_KV.get(`token:${subject}:${grantId}:${tokenId}`, { type: "json" });
}

/**
 * A validated access token: who it acts as, its grant, and its own id (`accessTokenId`, the
 * SHA-256 of the token, hex — the provider's id for it, checked against `revoked_oauth_tokens`).
 */
export interface OAuthCaller {
  props: OAuthProps;
  grantId: string;
  clientId: string;
  accessTokenId: string;
}

/**
 * Validate an access token presented at `resource`; null when it is not valid there (unknown,
 * expired, revoked, other audience), and also when its grant is gone from `OAUTH_KV`. Not the last
 * word on revocation: KV reads at other locations may be up to 60 s stale, so the caller resolves
 * the returned grant in the database, where the statement that checks its principal also refuses a
 * grant recorded in `revoked_oauth_grants` (src/credentials/statement.ts). The provider revokes a grant
 * by listing the grant's token records and deleting each, then the grant record; a KV list is
 * eventually consistent, so a token issued moments before elsewhere (a refresh at another location)
 * can be missed and would stay valid for the rest of its hour. The grant record is one key, deleted
 * last: reading it next to the token (in parallel, so no added latency) bounds every token by its
 * grant. Two KV reads per validation — the MCP endpoints validate on a credential-cache miss only
 * (at most once per `CREDENTIAL_TTL_MS` per token and isolate on the app MCP). An access token
 * revoked alone (RFC 7009) is deleted from `OAUTH_KV` only, so the caller's statement also refuses
 * one recorded in `revoked_oauth_tokens`, by the `accessTokenId` returned here.
 */
export async function validateAccessToken(
  env: OAuthEnv,
  issuer: string,
  resource: string,
  token: string,
): Promise<OAuthCaller | null> {
  const ref = tokenGrantRef(token);
  if (!ref) return null;
  const [valid, grant, accessTokenId] = await Promise.all([
    authorizationServer(issuer, [resource]).validateToken(resource, token, env),
    readGrantRecord(env, ref.subject, ref.grantId),
    sha256Hex(token),
  ]);
  if (!valid || !grant || valid.audience !== resource) return null;
  return { props: valid.props as OAuthProps, grantId: ref.grantId, clientId: valid.clientId, accessTokenId };
}
