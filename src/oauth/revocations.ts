/**
 * What the provider revoked on its own in answering a token request — a grant (its client revoking
 * a refresh token, or replaying its exchanged code) or an access token alone (RFC 7009) — so the
 * Worker can record it where every location reads it at once (`revoked_oauth_grants`,
 * `revoked_oauth_tokens`): the library deletes it from `OAUTH_KV` only, whose reads elsewhere may
 * show it for up to 60 s more. Pure: the request's form, the records as read before it, and the
 * provider's answer in; a decision out. A revocation is what the provider takes for one: a token and
 * no grant type, an empty `grant_type=` included (its `!body.grant_type`).
 */
import { sha256Hex } from "../accounts/crypto.ts";
import type { RotationRecord } from "./refresh-reuse.ts";
import type { readAccessTokenRecord } from "./server.ts";
import { oauthErrorCode } from "./token-request.ts";
import { hashMatches } from "./tokens.ts";

/** The record of a grant as read before a token request: rotation fields, and its code's. */
export type GrantBefore = RotationRecord & { authCodeId?: unknown; authCodeWrappedKey?: unknown };

/** An access token's KV record as read before a revocation request (`readAccessTokenRecord`). */
export type AccessTokenBefore = NonNullable<Awaited<ReturnType<typeof readAccessTokenRecord>>>;

/**
 * Whether the provider itself revoked the grant (`grant`, as read before the request) in answering
 * this token request `res`: its client revoking its current or previous refresh token (RFC 7009,
 * answered 200), or its client presenting its already exchanged authorization code again (RFC 6749
 * §4.1.2, answered `invalid_grant`). The library deletes the grant from `OAUTH_KV` on its own
 * there, so the revocation is recorded in `revoked_oauth_grants` once it has answered (as the
 * Worker's `recordingRevoker` records its own). An access token revoked alone ends no grant (it is
 * recorded in `revoked_oauth_tokens` instead: {@link revokedAccessToken}). `clientId` is the client
 * the request authenticates as (`requestClientId`, src/oauth/token-request.ts).
 */
export async function revokedByProvider(
  form: FormData | null,
  token: string,
  grant: GrantBefore,
  clientId: string | null,
  res: Response,
): Promise<boolean> {
  if (clientId === null || clientId !== grant.clientId) return false;
  const grantType = form?.get("grant_type");
  if (!grantType) {
    if (res.status !== 200) return false;
    const hash = await sha256Hex(token);
    return hashMatches(hash, grant.refreshTokenId) || hashMatches(hash, grant.previousRefreshTokenId);
  }
  if (grantType !== "authorization_code" || res.status !== 400 || grant.authCodeWrappedKey) return false;
  return (
    hashMatches(await sha256Hex(token), grant.authCodeId) && (await oauthErrorCode(res)) === "invalid_grant"
  );
}

/**
 * Whether the provider revoked an access token alone in answering this revocation request `res`
 * (RFC 7009, answered 200): the token (`record`, as read before the request) was one of its access
 * tokens, issued to the client the request authenticated as (`clientId`; the provider answers 200
 * without revoking a token of another client, and an unauthenticated request is answered 401), and
 * not yet expired at `now`. The library deletes it from `OAUTH_KV` only, so it is recorded in
 * `revoked_oauth_tokens` once the library has answered (as {@link revokedByProvider} records a
 * grant), until it would have expired.
 */
export function revokedAccessToken(
  form: FormData | null,
  record: AccessTokenBefore | null,
  grant: GrantBefore,
  clientId: string | null,
  res: Response,
  now = Date.now(),
): record is AccessTokenBefore & { expiresAt: number } {
  if (record === null || clientId === null || res.status !== 200) return false;
  if (form?.get("grant_type")) return false;
  const owner = record.grant?.clientId ?? grant.clientId;
  return owner === clientId && typeof record.expiresAt === "number" && record.expiresAt * 1000 > now;
}
