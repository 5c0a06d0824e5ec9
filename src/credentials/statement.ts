/**
 * The credential-resolution statement: every check of a request's credentials reads ONE row — the
 * credential rows (developer token, client key, session, or an OAuth grant's principal), the user,
 * the project and its app-MCP config left-joined, and for an OAuth caller whether its grant, or its
 * access token alone, is recorded as revoked. Absent joins give nulls; src/credentials/resolve.ts
 * checks the row. One round trip per resolution (test/worker/app-mcp/hotpath.test.ts counts them).
 */
import { type SQL, sql } from "drizzle-orm";
import type { ParsedCredential } from "../accounts/crypto.ts";
import type { Db } from "../db.ts";
import { isUuid, type ProjectSelector } from "./principal.ts";

/** The credentials a resolution looks up, each by its row id. */
export interface Credentials {
  developer?: ParsedCredential;
  clientKey?: ParsedCredential;
  session?: ParsedCredential;
  /** Sign-in: also fetch the key's (or the addressed) project's user with this email (saves a round trip). */
  signinEmail?: string;
  /** OAuth grant principals (src/oauth): rows named by id, checked live without a secret. */
  oauthTokenId?: string;
  oauthUserId?: string;
  /** The grant an OAuth access token or refresh belongs to: is it in `revoked_oauth_grants`? */
  oauthGrantId?: string;
  /** The OAuth access token presented (its SHA-256, hex): is it in `revoked_oauth_tokens`? */
  oauthAccessTokenId?: string;
}

/** The one row every resolution reads; absent joins give nulls. */
export interface ResolvedRow {
  token_developer_id: string | null;
  token_hash: string | null;
  token_live: boolean | null;
  key_project_id: string | null;
  key_hash: string | null;
  key_live: boolean | null;
  session_project_id: string | null;
  session_hash: string | null;
  session_live: boolean | null;
  user_id: string | null;
  user_email: string | null;
  user_project_id: string | null;
  signin_user_id: string | null;
  signin_email: string | null;
  signin_hash: string | null;
  signin_salt: string | null;
  signin_iterations: number | string | null;
  project_id: string | null;
  project_name: string | null;
  project_developer_id: string | null;
  meta_rev: string | number | null;
  function_signing_secret: string | null;
  previous_signing_secret: string | null;
  previous_signing_expires_ms: number | string | null;
  mcp_enabled: boolean | null;
  mcp_auth_mode: string | null;
  mcp_slug: string | null;
  mcp_collections: string[] | null;
  mcp_functions: string[] | null;
  mcp_rate_limit: number | null;
  mcp_origins: string[] | null;
  /** `oauthGrantId` is recorded as revoked (false without one). */
  grant_revoked: boolean;
  /** `oauthAccessTokenId` is recorded as revoked alone (false without one). */
  token_revoked: boolean;
}

/** Which project the row joins: the one named, the client key's, or none. */
export type ProjectJoin = ProjectSelector | { fromClientKey: true } | { none: true };

function projectCondition(join: ProjectJoin): SQL {
  if ("projectId" in join) return sql`p.id = ${join.projectId}::uuid`;
  if ("slug" in join) return sql`p.id = (select project_id from app_mcp_configs where slug = ${join.slug})`;
  if ("fromClientKey" in join) return sql`p.id = k.project_id`;
  return sql`false`;
}

/**
 * Whether an OAuth grant is recorded as revoked (`revoked_oauth_grants`, one primary-key probe);
 * `false` for header credentials, whose statement stays as it was.
 */
const grantRevoked = (grantId: string | undefined): SQL =>
  grantId === undefined
    ? sql`false`
    : sql`exists (select 1 from revoked_oauth_grants r where r.grant_id = ${grantId}::text)`;

/**
 * Whether an OAuth access token is recorded as revoked alone (`revoked_oauth_tokens`, one
 * primary-key probe by its SHA-256); `false` without one (header credentials, refresh checks).
 */
const accessTokenRevoked = (tokenId: string | undefined): SQL =>
  tokenId === undefined
    ? sql`false`
    : sql`exists (select 1 from revoked_oauth_tokens rt where rt.token_id = ${tokenId}::text)`;

/**
 * The single statement: credential rows + user + project + app-MCP config, left-joined, and for an
 * OAuth caller whether its grant, or its access token alone, is revoked.
 */
export async function resolveCredentials(
  db: Db,
  creds: Credentials,
  join: ProjectJoin,
): Promise<ResolvedRow> {
  const result = await db.execute(sql`
    select
      t.developer_id::text as token_developer_id, t.secret_hash as token_hash,
      (t.revoked_at is null) as token_live,
      k.project_id::text as key_project_id, k.secret_hash as key_hash,
      (k.revoked_at is null) as key_live,
      s.project_id::text as session_project_id, s.secret_hash as session_hash,
      (s.revoked_at is null and s.expires_at > now()) as session_live,
      u.id::text as user_id, u.email as user_email, u.project_id::text as user_project_id,
      su.id::text as signin_user_id, su.email as signin_email, su.password_hash as signin_hash,
      su.password_salt as signin_salt, su.password_iterations as signin_iterations,
      p.id::text as project_id, p.name as project_name, p.developer_id::text as project_developer_id,
      p.meta_rev, p.function_signing_secret, p.previous_signing_secret,
      (extract(epoch from p.previous_signing_secret_expires_at) * 1000)::float8 as previous_signing_expires_ms,
      m.enabled as mcp_enabled, m.auth_mode as mcp_auth_mode, m.slug as mcp_slug,
      to_jsonb(m.exposed_collections) as mcp_collections, to_jsonb(m.exposed_functions) as mcp_functions,
      m.rate_limit_per_minute as mcp_rate_limit, to_jsonb(m.allowed_origins) as mcp_origins,
      ${grantRevoked(creds.oauthGrantId)} as grant_revoked,
      ${accessTokenRevoked(creds.oauthAccessTokenId)} as token_revoked
    from (select 1) as one
    left join developer_tokens t on t.id = ${creds.developer?.id ?? creds.oauthTokenId ?? null}::uuid
    left join client_keys k on k.id = ${creds.clientKey?.id ?? null}::uuid
    left join sessions s on s.id = ${creds.session?.id ?? null}::uuid
    left join projects p on ${projectCondition(join)}
    left join app_users u on u.id = coalesce(s.user_id, ${creds.oauthUserId ?? null}::uuid)
    left join app_users su on su.project_id = coalesce(k.project_id, p.id) and su.email = ${creds.signinEmail ?? null}::text
    left join app_mcp_configs m on m.project_id = p.id
  `);
  return result.rows[0] as unknown as ResolvedRow;
}

/**
 * The join for a project a request names, or none: a malformed id can name no project, and answers
 * like an unknown one (after the credential check).
 */
export const projectJoin = (ref: ProjectSelector | null): ProjectJoin =>
  !ref || ("projectId" in ref && !isUuid(ref.projectId)) ? { none: true } : ref;
