/**
 * Refresh token reuse detection (OAuth 2.1 §4.3.1, RFC 9700 §4.14.2) around the provider's
 * rotation. The provider rotates the refresh token on every use and keeps the one before the
 * current valid, so a client whose answer was lost in transit can retry. It keeps it valid for good,
 * though (a use of the previous token leaves it the previous one, so a thief holding it could
 * refresh for the whole life of the grant), and it only refuses a token older than that.
 *
 * Here the previous token is accepted once, and any other use — the previous token again, or an
 * older one — is a replay: one of its two holders is not the client, and which one cannot be told,
 * so the grant is revoked and both lose what it issued (the person authorizes again).
 *
 * "Older" means a refresh token the grant did issue: each one that drops out of the provider's pair
 * (current, previous) at a rotation is remembered by its hash ({@link retire}). Anything else that
 * names the grant — its access token sent as a refresh token by a confused client, or a string made
 * up from the grant's subject and id, which the code, every access token and the grant listings
 * show — was never a refresh token, so it proves no theft: refused as the provider refuses it
 * (`invalid_grant`), it ends nothing. Without that, a stolen access token (an hour's worth) ended
 * a 30-day grant, and anyone holding a grant's ids and its public client's id could end it. A token
 * rotated out at one location may be read as retired elsewhere only up to 60 s later (KV): a replay
 * there meanwhile is refused without ending the grant, as the provider alone would.
 *
 * Only the grant's own client can set that off. The provider answers a refresh token it does not
 * know with `invalid_grant` before it compares clients, and such a token is easily made: a grant's
 * subject and id are all a refresh needs to name it (`<subject>:<grant id>:<anything>`). Another
 * client presenting one proves nothing about the grant's holder, so it is refused as the provider
 * refuses it and ends nothing; otherwise anyone who learnt a grant's ids (from a leaked code, say)
 * could end it from a client of their own.
 */
import { sha256Hex } from "../accounts/crypto.ts";
import type { GrantRevoker } from "./grants.ts";
import { type OAuthEnv, REFRESH_TOKEN_TTL_S } from "./server.ts";
import { oauthErrorCode } from "./token-request.ts";
import { hashMatches } from "./tokens.ts";

/**
 * How a refresh token is being used: the current one, the one retry of the previous one, a replay
 * (of a token the grant issued), `unknown` (a token the grant never issued as a refresh token), or
 * (`foreign`) any but the current one from a client that is not the grant's — never a replay.
 */
export type RefreshUse = "current" | "retry" | "replay" | "unknown" | "foreign";

/** The rotation fields of a grant as the provider stores it (hex SHA-256 of each refresh token), and its client. */
export interface RotationRecord {
  refreshTokenId?: unknown;
  previousRefreshTokenId?: unknown;
  clientId?: unknown;
}

/** Where the hash of a grant's previous refresh token is kept once it has been retried. */
const retriedKey = (subject: string, grantId: string) => `amba-oauth:refresh-retried:${subject}:${grantId}`;

/** Where a refresh token the grant issued and rotated out is remembered, by its hash (one key each). */
const retiredKey = (ref: { subject: string; grantId: string }, hash: string) =>
  `amba-oauth:refresh-retired:${ref.subject}:${ref.grantId}:${hash}`;

/**
 * Classify a refresh token presented for `grant` by `clientId` (the client the request
 * authenticates as; one KV read, only for the previous token).
 */
export async function refreshUse(
  env: OAuthEnv,
  ref: { subject: string; grantId: string },
  token: string,
  grant: RotationRecord,
  clientId: string | null,
): Promise<{ use: RefreshUse; hash: string }> {
  const hash = await sha256Hex(token);
  if (hashMatches(hash, grant.refreshTokenId)) return { use: "current", hash };
  if (clientId === null || clientId !== grant.clientId) return { use: "foreign", hash };
  if (!hashMatches(hash, grant.previousRefreshTokenId)) {
    const retired = await env.OAUTH_KV.get(retiredKey(ref, hash));
    return { use: retired !== null ? "replay" : "unknown", hash };
  }
  const retried = await env.OAUTH_KV.get(retriedKey(ref.subject, ref.grantId));
  return { use: retried !== null && hashMatches(hash, retried) ? "replay" : "retry", hash };
}

/** Remember that the previous refresh token (`hash`) had its one retry. */
export const markRetried = (env: OAuthEnv, ref: { subject: string; grantId: string }, hash: string) =>
  env.OAUTH_KV.put(retriedKey(ref.subject, ref.grantId), hash, { expirationTtl: REFRESH_TOKEN_TTL_S });

/**
 * Remember that the grant issued the refresh token whose hash is `hash` and has rotated it out (a
 * successful refresh drops one token out of the provider's pair: the previous one after a use of
 * the current, the current one after the retry of the previous). Kept as long as a grant lives.
 */
export async function retire(env: OAuthEnv, ref: { subject: string; grantId: string }, hash: unknown) {
  if (typeof hash !== "string" || !/^[0-9a-f]{64}$/.test(hash)) return;
  await env.OAUTH_KV.put(retiredKey(ref, hash), "1", { expirationTtl: REFRESH_TOKEN_TTL_S });
}

/** The body a refresh answered as a replay is refused with (the grant is revoked by then). */
export const REFRESH_TOKEN_REUSED: { error: string; error_description: string } = {
  error: "invalid_grant",
  error_description:
    "refresh token reused: it was already rotated out, so the authorization is revoked; authorize again",
};

/**
 * A refresh through the provider (`exchange`), with reuse detection: the previous token retries
 * once, a replay of a refresh token the grant issued revokes it (`revoke`), and a token it never
 * issued as one (an access token, a made-up string) is refused by the provider and ends nothing. A
 * replay is acted on only once the provider has authenticated the client — its answer is tokens or
 * `invalid_grant`, not `invalid_client` — so a request that cannot authenticate as a confidential
 * client cannot revoke that client's grant; and only when that client (`clientId`, the one the
 * request authenticates as: `requestClientId`, src/oauth/token-request.ts) is the grant's, so no
 * other client can end it with a refresh token made up from its subject and id.
 *
 * The provider's answer, or `reused` once the grant is revoked (answered {@link REFRESH_TOKEN_REUSED}).
 */
export async function refreshWithReuseDetection(
  env: OAuthEnv,
  ref: { subject: string; grantId: string },
  token: string,
  grant: RotationRecord,
  clientId: string | null,
  exchange: () => Promise<Response>,
  revoke: GrantRevoker,
): Promise<Response | "reused"> {
  const { use, hash } = await refreshUse(env, ref, token, grant, clientId);
  const res = await exchange();
  if (use === "foreign" || use === "unknown") return res;
  if (use === "current") {
    if (res.ok) await retire(env, ref, grant.previousRefreshTokenId);
    return res;
  }
  if (use === "retry") {
    if (res.ok) await Promise.all([markRetried(env, ref, hash), retire(env, ref, grant.refreshTokenId)]);
    return res;
  }
  if (!res.ok && (res.status !== 400 || (await oauthErrorCode(res)) !== "invalid_grant")) return res;
  await revoke(ref);
  return "reused";
}
