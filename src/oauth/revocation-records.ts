/**
 * The revocation records of OAuth grants and access tokens (`revoked_oauth_grants`,
 * `revoked_oauth_tokens`): what the provider deletes from `OAUTH_KV` — whose reads at other
 * locations may show it for up to 60 s more — is written here first (a grant this Worker revokes)
 * or right after the provider answered (what it revoked on its own: src/oauth/revocations.ts), and
 * the statement that resolves an OAuth caller (src/credentials/statement.ts) and the check at every refresh
 * refuse it at every location from then on. Services: a `Db` and plain inputs.
 */
import type { OAuthHelpers } from "@cloudflare/workers-oauth-provider";
import { sql } from "drizzle-orm";
import type { Db } from "../db.ts";
import type { GrantRevoker } from "./grants.ts";

/** How long a revoked grant's row is kept: past the longest a grant lives (30 days) by a day. */
const REVOKED_GRANT_RETENTION = "31 days";
/** Old rows one revocation prunes at most (more than the one it adds, so the table shrinks to its window). */
const REVOKED_GRANT_PRUNE = 100;

/**
 * Record that the grant `grantId` is revoked, before the authorization server deletes it from
 * `OAUTH_KV` (whose reads elsewhere may show it for up to 60 s more): from then on the statement
 * that resolves an OAuth caller (every credential-cache miss, every platform MCP request) and the
 * check at every refresh refuse it, at every location. One statement, which also prunes up to
 * {@link REVOKED_GRANT_PRUNE} rows past {@link REVOKED_GRANT_RETENTION} (by the `revoked_at`
 * index; never the row it writes). Revoking again renews the row.
 */
export async function recordRevokedGrant(db: Db, grantId: string): Promise<void> {
  await db.execute(sql`
    with pruned as (
      delete from revoked_oauth_grants where grant_id in (
        select grant_id from revoked_oauth_grants
        where revoked_at < now() - ${REVOKED_GRANT_RETENTION}::interval and grant_id <> ${grantId}::text
        limit ${REVOKED_GRANT_PRUNE}::int
      )
    )
    insert into revoked_oauth_grants (grant_id) values (${grantId}::text)
    on conflict (grant_id) do update set revoked_at = now()
  `);
}

/** Old rows one access-token revocation prunes at most (more than the one it adds). */
const REVOKED_TOKEN_PRUNE = 100;

/**
 * Record that the access token whose SHA-256 is `tokenId` (the provider's id for it) was revoked
 * alone (RFC 7009) and would have expired at `expiresAt` (seconds since the epoch, its KV record's):
 * the provider deletes it from `OAUTH_KV` only, whose reads elsewhere may show it for up to 60 s
 * more; from then on the statement that resolves an OAuth caller refuses it at every location. One
 * statement, which also prunes up to {@link REVOKED_TOKEN_PRUNE} rows of tokens already expired (by
 * the `expires_at` index): a row lives as long as its token could. Revoking again keeps the row.
 */
export async function recordRevokedAccessToken(db: Db, tokenId: string, expiresAt: number): Promise<void> {
  await db.execute(sql`
    with pruned as (
      delete from revoked_oauth_tokens where token_id in (
        select token_id from revoked_oauth_tokens
        where expires_at < now() and token_id <> ${tokenId}::text
        limit ${REVOKED_TOKEN_PRUNE}::int
      )
    )
    insert into revoked_oauth_tokens (token_id, expires_at)
    values (${tokenId}::text, to_timestamp(${expiresAt}::float8))
    on conflict (token_id) do nothing
  `);
}

/**
 * How this Worker revokes a grant (developer, end user, reuse detection): recorded in
 * `revoked_oauth_grants` first ({@link recordRevokedGrant}), then deleted by the provider from
 * `OAUTH_KV`. KV reads at other locations may show the grant for up to 60 s after the delete; the
 * record, read in the statement that resolves an OAuth caller and at every refresh, refuses it
 * everywhere from the moment it is written. Recorded first, so a revocation whose record fails
 * (503) changes nothing and can be retried.
 */
export const recordingRevoker =
  (db: Db, oauth: Pick<OAuthHelpers, "revokeGrant">): GrantRevoker =>
  async ({ subject, grantId }) => {
    await recordRevokedGrant(db, grantId);
    await oauth.revokeGrant(grantId, subject);
  };
