/**
 * Credential resolution for every route and the app MCP endpoint.
 *
 * Credentials (random secrets; only SHA-256 of the secret is stored, compared in constant time):
 * - developer token `amba_dev_<id>_<secret>` — `Authorization: Bearer …` (developer scope);
 * - client key `amba_ck_<id>_<secret>` — `X-Api-Key: …`, names one project;
 * - session token `amba_sess_<id>_<secret>` — `Authorization: Bearer …` next to `X-Api-Key`
 *   (end-user scope); expires after `SESSION_TTL_MS` (src/accounts/end-users.ts), revoked by sign-out.
 *
 * Every resolution is ONE SQL statement: the credential rows, the project and its app-MCP config are
 * left-joined onto a single row, then checked here. Outcomes: 401 for missing, malformed, unknown,
 * revoked or expired credentials (checked first, so an unauthenticated caller learns nothing about
 * projects); 404 for an unknown project AND for a project the developer does not own (existence is
 * not leaked — the same answer the admin API gives); 401 when a client key or session belongs to a
 * different project than the one addressed.
 */

import { type SQL, sql } from "drizzle-orm";
import type { Context } from "hono";
import {
  CREDENTIAL_PREFIX,
  constantTimeEqual,
  type ParsedCredential,
  parseCredential,
  sha256Hex,
} from "../accounts/crypto.ts";
import type { SigninCandidate } from "../accounts/signin.ts";
import type { AppMcpRuntime, AppMcpSettings, AuthMode } from "../app-mcp/admin.ts";

import { UUID } from "../data/columns.ts";
import type { Actor } from "../data/service.ts";
import { AppError, notFound, unauthorized } from "../errors.ts";
import { signingKeysFrom } from "../functions/signing.ts";
import { WeightedLru } from "../mcp/lru.ts";
import { isOAuthToken } from "../oauth/tokens.ts";
import { DEFAULT_RATE_LIMIT, type RateLimitTier } from "../rate-limit.ts";
import type { Db } from "./db.ts";
import type { AppEnv } from "./hono.ts";
import { failedCredentialGuard } from "./rate-limit.ts";

/** The project a request addresses, as resolved with its credentials. */
export interface ProjectRef {
  id: string;
  name: string;
  developerId: string;
  metaRev: number;
}

/** Who is calling, for which project. */
export type Principal =
  | { scope: "developer"; developerId: string; project: ProjectRef }
  | { scope: "end_user"; project: ProjectRef; user: { id: string; email: string }; clientKeyId: string };

/** The data service's view of a principal: developer scope, or the signed-in end user. */
export const actorOf = (principal: Principal): Actor =>
  principal.scope === "developer"
    ? { scope: "developer", tenant: principal.project.developerId }
    : { scope: "end_user", userId: principal.user.id, tenant: principal.project.developerId };

/** How a request names its project: by id (`/…/:id/…`) or by app-MCP hostname slug. */
export type ProjectSelector = { projectId: string } | { slug: string };

/** Result of `authenticateProject`: the principal plus the app-MCP config, from one round trip. */
export interface ProjectAccess {
  principal: Principal;
  config: AppMcpSettings;
}

/**
 * `ProjectAccess` as the hot routes use it and the credential cache keeps it: the config without
 * the exposure lists (`AppMcpRuntime`).
 */
export interface HotAccess {
  principal: Principal;
  config: AppMcpRuntime;
}

export const hotAccess = ({ principal, config }: ProjectAccess): HotAccess => {
  const { exposedCollections: _collections, exposedFunctions: _functions, ...runtime } = config;
  return { principal, config: runtime };
};

/** True for a canonical uuid string (ids from URLs are checked before they reach SQL). */
export const isUuid = (value: string): boolean => UUID.test(value);

const DEFAULT_SETTINGS: Omit<AppMcpSettings, "functionSigning"> = {
  enabled: true,
  authMode: "all",
  slug: null,
  exposedCollections: [],
  exposedFunctions: [],
  rateLimitPerMinute: DEFAULT_RATE_LIMIT,
  allowedOrigins: [],
};

/** The bearer token of `Authorization: Bearer <token>`, if any. */
export function bearerToken(c: Context): string | undefined {
  const header = c.req.header("authorization");
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1] ?? "";
}

/** The `X-Api-Key` header, if any. */
export const apiKeyHeader = (c: Context): string | undefined => c.req.header("x-api-key");

/**
 * The credentials a request presents, as resolution reads them: the Bearer token, and the
 * `X-Api-Key` only where it is read — not beside a developer token, nor (`oauth`: the app MCP) beside
 * one of the authorization server's tokens. The credential cache keys on these, not on the raw
 * headers: keyed by those, one token had unlimited keys (`bearer`, more spaces, any unread
 * X-Api-Key), each a resolution of its own in the budget every tenant's share.
 */
export function presentedCredentials(c: Context, oauth = false): (string | undefined)[] {
  const bearer = bearerToken(c);
  const keyUnread =
    bearer !== undefined &&
    (bearer.startsWith(CREDENTIAL_PREFIX.developer) || (oauth && isOAuthToken(bearer)));
  return [bearer, keyUnread ? undefined : apiKeyHeader(c)];
}

interface Credentials {
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
interface ResolvedRow {
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

type ProjectJoin = ProjectSelector | { fromClientKey: true } | { none: true };

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
async function resolve(db: Db, creds: Credentials, join: ProjectJoin): Promise<ResolvedRow> {
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

/** {@link resolve} for one request's credentials, as {@link budgeted} hands it to a check. */
type ResolveRow = (creds: Credentials, join: ProjectJoin) => Promise<ResolvedRow>;

/** How long a credential that resolved keeps its pass through its address's failed-check budget. */
export const PROVEN_CREDENTIAL_TTL_MS = 60 * 60 * 1000;
/** Credentials (SHA-256 of a check's credentials) an isolate remembers as resolved: 64 characters each. */
const MAX_PROVEN_CREDENTIALS = 4_096;

/**
 * Credentials that resolved in this isolate within {@link PROVEN_CREDENTIAL_TTL_MS}, by the SHA-256
 * of a check's credentials (never the secrets themselves), and until when. An address's budget of
 * failed checks is shared by everyone behind it (a NAT, CI runners, a hosted assistant's egress):
 * past it, every check of a credential the credential cache did not hold was refused — the admin
 * API, the console and the platform MCP cache none, the hot routes one for 5 s — so one tenant
 * sending made-up tokens from there locked every other tenant there out
 * (test/worker/tenant-red3.test.ts). A credential known to resolve costs the database what any
 * valid credential does and is no guess, so it passes; one that then fails (revoked, expired)
 * loses its pass at that failure, so a credential that stopped working cannot be replayed past the
 * budget.
 */
const provenCredentials = new WeightedLru<string, number>(MAX_PROVEN_CREDENTIALS, () => 1);

/**
 * Run a credential check of `c` under its address's budget of failed checks (the guard in
 * src/worker/rate-limit.ts): the statement is refused (429) while the address is over it — unless
 * these credentials resolved in this isolate lately ({@link provenCredentials}) — and a 401 once the
 * statement has run counts one failure. A check refused before the database (no credential, a
 * malformed one) counts nothing.
 */
async function budgeted<E extends AppEnv, T>(
  c: Context<E>,
  check: (resolveRow: ResolveRow) => Promise<T>,
): Promise<T> {
  const guard = failedCredentialGuard(c.env, c.req.raw.headers, (promise) =>
    c.executionCtx.waitUntil(promise),
  );
  let reached = false;
  let proof: string | undefined;
  try {
    const result = await check(async (creds, join) => {
      proof = await sha256Hex(JSON.stringify(creds));
      if (!((provenCredentials.get(proof) ?? 0) > Date.now())) guard.before();
      reached = true;
      return resolve(c.var.db, creds, join);
    });
    if (proof !== undefined) provenCredentials.set(proof, Date.now() + PROVEN_CREDENTIAL_TTL_MS);
    return result;
  } catch (err) {
    if (reached && err instanceof AppError && err.status === 401) {
      if (proof !== undefined) provenCredentials.delete(proof);
      guard.failed();
    }
    throw err;
  }
}

async function secretMatches(secret: string, stored: string | null): Promise<boolean> {
  const digest = await sha256Hex(secret);
  // Compare against a same-length dummy when the row is absent so both paths do the same work.
  return constantTimeEqual(digest, stored ?? "0".repeat(64)) && stored !== null;
}

function projectFrom(row: ResolvedRow): ProjectRef | null {
  if (!row.project_id || !row.project_developer_id) return null;
  return {
    id: row.project_id,
    name: row.project_name ?? "",
    developerId: row.project_developer_id,
    metaRev: Number(row.meta_rev ?? 1),
  };
}

function settingsFrom(row: ResolvedRow): AppMcpSettings {
  // The previous secret's expiry is checked where the keys are used: they are cached past it.
  const functionSigning = signingKeysFrom(
    row.function_signing_secret ?? "",
    row.previous_signing_secret,
    row.previous_signing_expires_ms,
  );
  if (row.mcp_enabled === null) return { ...DEFAULT_SETTINGS, functionSigning };
  return {
    enabled: row.mcp_enabled,
    authMode: (row.mcp_auth_mode ?? "all") as AuthMode,
    slug: row.mcp_slug,
    exposedCollections: row.mcp_collections ?? [],
    exposedFunctions: row.mcp_functions ?? [],
    rateLimitPerMinute: (row.mcp_rate_limit ?? DEFAULT_RATE_LIMIT) as RateLimitTier,
    allowedOrigins: row.mcp_origins ?? [],
    functionSigning,
  };
}

async function checkDeveloper(cred: ParsedCredential, row: ResolvedRow): Promise<string> {
  const ok = await secretMatches(cred.secret, row.token_hash);
  if (!ok || row.token_live !== true || !row.token_developer_id)
    throw unauthorized("invalid developer token");
  return row.token_developer_id;
}

async function checkClientKey(cred: ParsedCredential, row: ResolvedRow): Promise<string> {
  const ok = await secretMatches(cred.secret, row.key_hash);
  if (!ok || row.key_live !== true || !row.key_project_id)
    throw unauthorized("invalid or revoked client key");
  return row.key_project_id;
}

/**
 * A client key checked out against `row`, whose project is the key's: the browser origins that
 * project lists (`allowed_origins`) become the request's CORS origins (src/worker/sdk-cors.ts), so
 * what the request answers from here on — an expired session's 401, a refused password, a 429 —
 * is readable by the app's web client. Not before the key checks out, and never for a project the
 * key does not belong to.
 */
function noteKeyOrigins<E extends AppEnv>(c: Context<E>, row: ResolvedRow, keyProjectId: string): void {
  if (row.project_id === keyProjectId) c.set("corsOrigins", row.mcp_origins ?? []);
}

async function checkSession(
  cred: ParsedCredential,
  row: ResolvedRow,
  keyProjectId: string,
): Promise<{ id: string; email: string }> {
  const ok = await secretMatches(cred.secret, row.session_hash);
  if (!ok || row.session_live !== true || !row.user_id || row.user_email === null) {
    throw unauthorized("invalid or expired session");
  }
  if (row.session_project_id !== keyProjectId)
    throw unauthorized("session does not belong to this client key's project");
  return { id: row.user_id, email: row.user_email };
}

function developerCredential(c: Context): ParsedCredential {
  const token = bearerToken(c);
  if (token === undefined) throw unauthorized("missing Authorization: Bearer <developer token>");
  const cred = parseCredential("developer", token);
  if (!cred) throw unauthorized("invalid developer token");
  return cred;
}

function clientKeyCredential(c: Context): ParsedCredential {
  const key = apiKeyHeader(c);
  if (key === undefined) throw unauthorized("missing X-Api-Key");
  const cred = parseCredential("clientKey", key);
  if (!cred) throw unauthorized("invalid or revoked client key");
  return cred;
}

function sessionCredential(c: Context): ParsedCredential {
  const token = bearerToken(c);
  if (token === undefined) throw unauthorized("missing Authorization: Bearer <session token>");
  const cred = parseCredential("session", token);
  if (!cred) throw unauthorized("invalid or expired session");
  return cred;
}

/** Developer scope: `Authorization: Bearer <developer token>` → the developer (401 otherwise). */
export async function authenticateDeveloper<E extends AppEnv>(
  c: Context<E>,
): Promise<{ developerId: string; tokenId: string }> {
  return budgeted(c, async (resolveRow) => {
    const cred = developerCredential(c);
    const row = await resolveRow({ developer: cred }, { none: true });
    return { developerId: await checkDeveloper(cred, row), tokenId: cred.id };
  });
}

/**
 * Resolve the caller against a project in one round trip. A Bearer that is a developer token selects
 * developer scope (the developer must own the project, else 404); otherwise `X-Api-Key` + a session
 * Bearer select end-user scope (key and session must belong to the project, else 401).
 */
export async function authenticateProject<E extends AppEnv>(
  c: Context<E>,
  ref: ProjectSelector,
): Promise<ProjectAccess> {
  return budgeted(c, async (resolveRow) => {
    const bearer = bearerToken(c);
    const developerMode = bearer?.startsWith(CREDENTIAL_PREFIX.developer) || apiKeyHeader(c) === undefined;
    if (developerMode && bearer?.startsWith(CREDENTIAL_PREFIX.session)) {
      throw unauthorized("an end-user session token must come with X-Api-Key: <client key>");
    }
    const creds: Credentials = developerMode
      ? { developer: developerCredential(c) }
      : { clientKey: clientKeyCredential(c), session: sessionCredential(c) };
    // A malformed id can name no project; answer like an unknown one (after the credential check).
    const join: ProjectJoin = "projectId" in ref && !isUuid(ref.projectId) ? { none: true } : ref;
    const row = await resolveRow(creds, join);

    if (creds.developer) {
      const developerId = await checkDeveloper(creds.developer, row);
      const project = projectFrom(row);
      if (!project || project.developerId !== developerId) throw notFound("project not found");
      return { principal: { scope: "developer", developerId, project }, config: settingsFrom(row) };
    }
    const keyCred = creds.clientKey as ParsedCredential;
    const keyProjectId = await checkClientKey(keyCred, row);
    noteKeyOrigins(c, row, keyProjectId);
    const user = await checkSession(creds.session as ParsedCredential, row, keyProjectId);
    const project = projectFrom(row);
    if (!project) throw notFound("project not found");
    if (project.id !== keyProjectId) throw unauthorized("client key does not belong to this project");
    return {
      principal: { scope: "end_user", project, user, clientKeyId: keyCred.id },
      config: settingsFrom(row),
    };
  });
}

/**
 * Admin routes: developer Bearer only, and the developer must own the project (else 404). One round
 * trip; returns the project and its app-MCP config.
 */
export async function authenticateProjectAdmin<E extends AppEnv>(
  c: Context<E>,
  projectId: string,
): Promise<{ developerId: string; project: ProjectRef; config: AppMcpSettings }> {
  return budgeted(c, async (resolveRow) => {
    const cred = developerCredential(c);
    const row = await resolveRow({ developer: cred }, isUuid(projectId) ? { projectId } : { none: true });
    const developerId = await checkDeveloper(cred, row);
    const project = projectFrom(row);
    if (!project || project.developerId !== developerId) throw notFound("project not found");
    return { developerId, project, config: settingsFrom(row) };
  });
}

function signinCandidate(row: ResolvedRow): SigninCandidate | null {
  if (!row.signin_user_id || row.signin_email === null || !row.signin_hash || !row.signin_salt) return null;
  return {
    id: row.signin_user_id,
    email: row.signin_email,
    password: { hash: row.signin_hash, salt: row.signin_salt, iterations: Number(row.signin_iterations) },
  };
}

/**
 * `X-Api-Key` alone (end-user sign-up / sign-in): the key's project. With `signinEmail`, the same
 * round trip also returns that project's user with this email (or null) for the password check.
 */
export async function authenticateClientKey<E extends AppEnv>(
  c: Context<E>,
  options: { signinEmail?: string } = {},
): Promise<{ clientKeyId: string; project: ProjectRef; signinUser: SigninCandidate | null }> {
  return budgeted(c, async (resolveRow) => {
    const cred = clientKeyCredential(c);
    const row = await resolveRow(
      { clientKey: cred, signinEmail: options.signinEmail },
      { fromClientKey: true },
    );
    noteKeyOrigins(c, row, await checkClientKey(cred, row));
    const project = projectFrom(row);
    if (!project) throw unauthorized("invalid or revoked client key");
    return { clientKeyId: cred.id, project, signinUser: signinCandidate(row) };
  });
}

/** `X-Api-Key` + session Bearer without a project in the path (`/v1/auth/me`, sign-out). */
export async function authenticateEndUser<E extends AppEnv>(
  c: Context<E>,
): Promise<{
  clientKeyId: string;
  sessionId: string;
  project: ProjectRef;
  user: { id: string; email: string };
}> {
  return budgeted(c, async (resolveRow) => {
    const keyCred = clientKeyCredential(c);
    const sessionCred = sessionCredential(c);
    const row = await resolveRow({ clientKey: keyCred, session: sessionCred }, { fromClientKey: true });
    const keyProjectId = await checkClientKey(keyCred, row);
    noteKeyOrigins(c, row, keyProjectId);
    const user = await checkSession(sessionCred, row, keyProjectId);
    const project = projectFrom(row);
    if (!project) throw unauthorized("invalid or revoked client key");
    return { clientKeyId: keyCred.id, sessionId: sessionCred.id, project, user };
  });
}

/**
 * An app's client code (`POST /v1/events`): the client key's project, and the end user when a
 * session came with the key. `user` is absent for a caller not signed in.
 */
export interface AppClient {
  project: ProjectRef;
  clientKeyId: string;
  user?: { id: string; email: string };
}

/**
 * `X-Api-Key`, and optionally an end-user session Bearer of the same project (401 otherwise): the
 * key's project and app config, one round trip. A developer token is not a client credential.
 */
export async function authenticateAppClient<E extends AppEnv>(
  c: Context<E>,
): Promise<{ principal: AppClient; config: AppMcpRuntime }> {
  return budgeted(c, async (resolveRow) => {
    const keyCred = clientKeyCredential(c);
    const bearer = bearerToken(c);
    if (bearer?.startsWith(CREDENTIAL_PREFIX.developer))
      throw unauthorized("send X-Api-Key (and an optional end-user session), not a developer token");
    const sessionCred = bearer === undefined ? undefined : sessionCredential(c);
    const row = await resolveRow({ clientKey: keyCred, session: sessionCred }, { fromClientKey: true });
    const keyProjectId = await checkClientKey(keyCred, row);
    noteKeyOrigins(c, row, keyProjectId);
    const user = sessionCred ? await checkSession(sessionCred, row, keyProjectId) : undefined;
    const project = projectFrom(row);
    if (!project) throw unauthorized("invalid or revoked client key");
    const { exposedCollections: _collections, exposedFunctions: _functions, ...config } = settingsFrom(row);
    return { principal: { project, clientKeyId: keyCred.id, ...(user ? { user } : {}) }, config };
  });
}

/**
 * The principal an OAuth grant acts as (its props, src/oauth), re-checked on every request, the
 * grant (its provider id), checked against `revoked_oauth_grants` in the same statement, and — for
 * an MCP request, not a refresh — the access token presented (`accessTokenId`, its SHA-256), checked
 * against `revoked_oauth_tokens` there too.
 */
export type OAuthGrantPrincipal =
  | { kind: "end_user"; userId: string; grantId: string; accessTokenId?: string }
  | { kind: "developer"; developerId: string; tokenId: string; grantId: string; accessTokenId?: string };

const REVOKED_GRANT = "this authorization was revoked";
const REVOKED_ACCESS_TOKEN = "this access token was revoked";

/**
 * OAuth hook: an access token validated by the authorization server names a principal; this checks
 * it is still live in the same one statement as header credentials (the developer token the grant
 * was authorized with is not revoked; the end user still exists in that project) and resolves the
 * project. The result is the same `ProjectAccess` header credentials give, so policy, auth mode,
 * rate limits and metering apply unchanged.
 */
export async function authenticateOAuthProject(
  db: Db,
  grant: OAuthGrantPrincipal,
  ref: ProjectSelector,
): Promise<ProjectAccess> {
  const oauth = { oauthGrantId: grant.grantId, oauthAccessTokenId: grant.accessTokenId };
  const creds: Credentials =
    grant.kind === "developer"
      ? { oauthTokenId: grant.tokenId, ...oauth }
      : { oauthUserId: grant.userId, ...oauth };
  const join: ProjectJoin = "projectId" in ref && !isUuid(ref.projectId) ? { none: true } : ref;
  const row = await resolve(db, creds, join);
  if (row.grant_revoked) throw unauthorized(REVOKED_GRANT);
  if (row.token_revoked) throw unauthorized(REVOKED_ACCESS_TOKEN);
  const project = projectFrom(row);
  if (grant.kind === "developer") {
    if (row.token_live !== true || row.token_developer_id !== grant.developerId)
      throw unauthorized("the developer token this authorization was granted with is revoked");
    if (!project || project.developerId !== grant.developerId) throw notFound("project not found");
    return {
      principal: { scope: "developer", developerId: grant.developerId, project },
      config: settingsFrom(row),
    };
  }
  if (!project || !row.user_id || row.user_email === null || row.user_project_id !== project.id)
    throw unauthorized("this authorization's user no longer exists in this project");
  return {
    principal: {
      scope: "end_user",
      project,
      user: { id: row.user_id, email: row.user_email },
      clientKeyId: `oauth:${grant.grantId}`,
    },
    config: settingsFrom(row),
  };
}

/**
 * OAuth hook for the platform MCP: the developer a grant names, if its developer token is live and
 * neither the grant nor (`accessTokenId`) the access token presented is revoked.
 */
export async function authenticateOAuthDeveloper(
  db: Db,
  grant: { developerId: string; tokenId: string; grantId: string; accessTokenId?: string },
): Promise<{ developerId: string }> {
  const row = await resolve(
    db,
    { oauthTokenId: grant.tokenId, oauthGrantId: grant.grantId, oauthAccessTokenId: grant.accessTokenId },
    { none: true },
  );
  if (row.grant_revoked) throw unauthorized(REVOKED_GRANT);
  if (row.token_revoked) throw unauthorized(REVOKED_ACCESS_TOKEN);
  if (row.token_live !== true || row.token_developer_id !== grant.developerId)
    throw unauthorized("the developer token this authorization was granted with is revoked");
  return { developerId: grant.developerId };
}

/**
 * OAuth sign-in page, developer: the developer token pasted on the page, checked like a Bearer
 * (and, for an app, ownership of the project). Returns the token's row id, which the grant keeps.
 */
export async function verifyDeveloperToken(
  db: Db,
  token: string,
  ref: ProjectSelector | null,
): Promise<{ developerId: string; tokenId: string; project: ProjectRef | null }> {
  const cred = parseCredential("developer", token.trim());
  if (!cred) throw unauthorized("invalid developer token");
  const join: ProjectJoin = !ref || ("projectId" in ref && !isUuid(ref.projectId)) ? { none: true } : ref;
  const row = await resolve(db, { developer: cred }, join);
  const developerId = await checkDeveloper(cred, row);
  const project = projectFrom(row);
  if (ref && (!project || project.developerId !== developerId)) throw notFound("project not found");
  return { developerId, tokenId: cred.id, project };
}

/**
 * OAuth sign-in page, end user: the addressed project, its app-MCP config and (with `signinEmail`)
 * its user with that email for the password check — one round trip. Null for an unknown project.
 */
export async function projectForSignin(
  db: Db,
  ref: ProjectSelector,
  signinEmail?: string,
): Promise<{ project: ProjectRef; config: AppMcpSettings; signinUser: SigninCandidate | null } | null> {
  const join: ProjectJoin = "projectId" in ref && !isUuid(ref.projectId) ? { none: true } : ref;
  const row = await resolve(db, { signinEmail }, join);
  const project = projectFrom(row);
  if (!project) return null;
  return { project, config: settingsFrom(row), signinUser: signinCandidate(row) };
}
