/**
 * Credential resolution: the checks every route's and MCP endpoint's authentication runs on the one
 * row of src/credentials/statement.ts, and what they resolve to (src/credentials/principal.ts).
 *
 * Credentials (random secrets; only SHA-256 of the secret is stored, compared in constant time):
 * - developer token `amba_dev_<id>_<secret>` — `Authorization: Bearer …` (developer scope);
 * - client key `amba_ck_<id>_<secret>` — `X-Api-Key: …`, names one project;
 * - session token `amba_sess_<id>_<secret>` — `Authorization: Bearer …` next to `X-Api-Key`
 *   (end-user scope); expires after `SESSION_TTL_MS` (src/accounts/end-users.ts), revoked by sign-out;
 * - an OAuth grant's principal (src/oauth), re-checked live on every request.
 *
 * Outcomes: 401 for missing, malformed, unknown, revoked or expired credentials (checked first, so
 * an unauthenticated caller learns nothing about projects); 404 for an unknown project AND for a
 * project the developer does not own (existence is not leaked — the same answer the admin API
 * gives); 401 when a client key or session belongs to a different project than the one addressed.
 *
 * Why a unit of its own rather than src/accounts: the row carries the app-MCP config
 * (src/app-mcp/admin.ts's types) and the project's function signing keys (src/functions/signing.ts),
 * and src/functions imports src/accounts (credential crypto), so accounts could not hold it without a
 * cycle. Resolution sits above accounts, app-mcp and functions and below the Worker, which only
 * reads the headers, runs the statement under its budget of failed checks and sets the context
 * (src/worker/auth.ts). Header checks take the statement as a port (`ResolveRow`), the OAuth and
 * sign-in page checks a `Db`; no Hono `Context`, no `Env`. Pure apart from WebCrypto and that port.
 */
import {
  CREDENTIAL_PREFIX,
  constantTimeEqual,
  type ParsedCredential,
  parseCredential,
  sha256Hex,
} from "../accounts/crypto.ts";
import type { SigninCandidate } from "../accounts/signin.ts";
import type { AppMcpRuntime, AppMcpSettings, AuthMode } from "../app-mcp/admin.ts";
import type { Db } from "../db.ts";
import { notFound, unauthorized } from "../errors.ts";
import { signingKeysFrom } from "../functions/signing.ts";
import { DEFAULT_RATE_LIMIT, type RateLimitTier } from "../rate-limit.ts";
import type {
  AppClient,
  OAuthGrantPrincipal,
  ProjectAccess,
  ProjectRef,
  ProjectSelector,
} from "./principal.ts";
import {
  type Credentials,
  type ProjectJoin,
  projectJoin,
  type ResolvedRow,
  resolveCredentials,
} from "./statement.ts";

/** The statement as a header check runs it (the Worker: under the address's budget of failed checks). */
export type ResolveRow = (creds: Credentials, join: ProjectJoin) => Promise<ResolvedRow>;

/**
 * A request's header credentials, and what a check reports back: `bearer` is the token of
 * `Authorization: Bearer <token>` ("" for another Authorization, undefined for none), `apiKey` the
 * `X-Api-Key` header; `keyOrigins` hears the browser origins of a client key's project once the
 * key checks out (the Worker makes them the request's CORS origins: src/worker/sdk-cors.ts).
 */
export interface HeaderCheck {
  bearer: string | undefined;
  apiKey: string | undefined;
  resolveRow: ResolveRow;
  keyOrigins?: (origins: readonly string[]) => void;
}

const DEFAULT_SETTINGS: Omit<AppMcpSettings, "functionSigning"> = {
  enabled: true,
  authMode: "all",
  slug: null,
  exposedCollections: [],
  exposedFunctions: [],
  rateLimitPerMinute: DEFAULT_RATE_LIMIT,
  allowedOrigins: [],
};

async function secretMatches(secret: string, stored: string | null): Promise<boolean> {
  const digest = await sha256Hex(secret);
  // Compare against a same-length dummy when the row is absent so both paths do the same work.
  return constantTimeEqual(digest, stored ?? "0".repeat(64)) && stored !== null;
}

/** The row's project, or null when it joined none. */
export function projectFrom(row: ResolvedRow): ProjectRef | null {
  if (!row.project_id || !row.project_developer_id) return null;
  return {
    id: row.project_id,
    name: row.project_name ?? "",
    developerId: row.project_developer_id,
    metaRev: Number(row.meta_rev ?? 1),
  };
}

/** The row's app-MCP config (the defaults for a project without one) and function signing keys. */
export function settingsFrom(row: ResolvedRow): AppMcpSettings {
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

/** The row's user with the sign-in email, with their stored password, or null. */
export function signinCandidate(row: ResolvedRow): SigninCandidate | null {
  if (!row.signin_user_id || row.signin_email === null || !row.signin_hash || !row.signin_salt) return null;
  return {
    id: row.signin_user_id,
    email: row.signin_email,
    password: { hash: row.signin_hash, salt: row.signin_salt, iterations: Number(row.signin_iterations) },
  };
}

async function checkDeveloper(cred: ParsedCredential, row: ResolvedRow): Promise<string> {
  const ok = await secretMatches(cred.secret, row.token_hash);
  if (!ok || row.token_live !== true || !row.token_developer_id)
    throw unauthorized("invalid developer token");
  return row.token_developer_id;
}

/**
 * A client key checked against `row`. Once it checks out, the browser origins its project lists
 * (`allowed_origins`) go to `keyOrigins`, so what the request answers from here on — an expired
 * session's 401, a refused password, a 429 — is readable by the app's web client. Not before the key
 * checks out, and never for a project the key does not belong to.
 */
async function checkClientKey(check: HeaderCheck, cred: ParsedCredential, row: ResolvedRow): Promise<string> {
  const ok = await secretMatches(cred.secret, row.key_hash);
  if (!ok || row.key_live !== true || !row.key_project_id)
    throw unauthorized("invalid or revoked client key");
  if (row.project_id === row.key_project_id) check.keyOrigins?.(row.mcp_origins ?? []);
  return row.key_project_id;
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

function developerCredential(bearer: string | undefined): ParsedCredential {
  if (bearer === undefined) throw unauthorized("missing Authorization: Bearer <developer token>");
  const cred = parseCredential("developer", bearer);
  if (!cred) throw unauthorized("invalid developer token");
  return cred;
}

function clientKeyCredential(apiKey: string | undefined): ParsedCredential {
  if (apiKey === undefined) throw unauthorized("missing X-Api-Key");
  const cred = parseCredential("clientKey", apiKey);
  if (!cred) throw unauthorized("invalid or revoked client key");
  return cred;
}

function sessionCredential(bearer: string | undefined): ParsedCredential {
  if (bearer === undefined) throw unauthorized("missing Authorization: Bearer <session token>");
  const cred = parseCredential("session", bearer);
  if (!cred) throw unauthorized("invalid or expired session");
  return cred;
}

/** Developer scope: a developer token Bearer → the developer (401 otherwise). */
export async function resolveDeveloper(
  check: HeaderCheck,
): Promise<{ developerId: string; tokenId: string }> {
  const cred = developerCredential(check.bearer);
  const row = await check.resolveRow({ developer: cred }, { none: true });
  return { developerId: await checkDeveloper(cred, row), tokenId: cred.id };
}

/**
 * The caller against a project, in one round trip. A Bearer that is a developer token selects
 * developer scope (the developer must own the project, else 404); otherwise `X-Api-Key` + a session
 * Bearer select end-user scope (key and session must belong to the project, else 401).
 */
export async function resolveProjectCaller(check: HeaderCheck, ref: ProjectSelector): Promise<ProjectAccess> {
  const { bearer } = check;
  const developerMode = bearer?.startsWith(CREDENTIAL_PREFIX.developer) || check.apiKey === undefined;
  if (developerMode && bearer?.startsWith(CREDENTIAL_PREFIX.session)) {
    throw unauthorized("an end-user session token must come with X-Api-Key: <client key>");
  }
  const creds: Credentials = developerMode
    ? { developer: developerCredential(bearer) }
    : { clientKey: clientKeyCredential(check.apiKey), session: sessionCredential(bearer) };
  const row = await check.resolveRow(creds, projectJoin(ref));

  if (creds.developer) {
    const developerId = await checkDeveloper(creds.developer, row);
    const project = projectFrom(row);
    if (!project || project.developerId !== developerId) throw notFound("project not found");
    return { principal: { scope: "developer", developerId, project }, config: settingsFrom(row) };
  }
  const keyCred = creds.clientKey as ParsedCredential;
  const keyProjectId = await checkClientKey(check, keyCred, row);
  const user = await checkSession(creds.session as ParsedCredential, row, keyProjectId);
  const project = projectFrom(row);
  if (!project) throw notFound("project not found");
  if (project.id !== keyProjectId) throw unauthorized("client key does not belong to this project");
  return {
    principal: { scope: "end_user", project, user, clientKeyId: keyCred.id },
    config: settingsFrom(row),
  };
}

/**
 * Admin routes: a developer token Bearer only, and the developer must own the project (else 404).
 * One round trip; the project and its app-MCP config.
 */
export async function resolveProjectAdmin(
  check: HeaderCheck,
  projectId: string,
): Promise<{ developerId: string; project: ProjectRef; config: AppMcpSettings }> {
  const cred = developerCredential(check.bearer);
  const row = await check.resolveRow({ developer: cred }, projectJoin({ projectId }));
  const developerId = await checkDeveloper(cred, row);
  const project = projectFrom(row);
  if (!project || project.developerId !== developerId) throw notFound("project not found");
  return { developerId, project, config: settingsFrom(row) };
}

/**
 * `X-Api-Key` alone (end-user sign-up / sign-in): the key's project. With `signinEmail`, the same
 * round trip also returns that project's user with this email (or null) for the password check.
 */
export async function resolveClientKey(
  check: HeaderCheck,
  options: { signinEmail?: string } = {},
): Promise<{ clientKeyId: string; project: ProjectRef; signinUser: SigninCandidate | null }> {
  const cred = clientKeyCredential(check.apiKey);
  const row = await check.resolveRow(
    { clientKey: cred, signinEmail: options.signinEmail },
    { fromClientKey: true },
  );
  await checkClientKey(check, cred, row);
  const project = projectFrom(row);
  if (!project) throw unauthorized("invalid or revoked client key");
  return { clientKeyId: cred.id, project, signinUser: signinCandidate(row) };
}

/** `X-Api-Key` + session Bearer without a project in the path (`/v1/auth/me`, sign-out). */
export async function resolveEndUser(check: HeaderCheck): Promise<{
  clientKeyId: string;
  sessionId: string;
  project: ProjectRef;
  user: { id: string; email: string };
}> {
  const keyCred = clientKeyCredential(check.apiKey);
  const sessionCred = sessionCredential(check.bearer);
  const row = await check.resolveRow({ clientKey: keyCred, session: sessionCred }, { fromClientKey: true });
  const keyProjectId = await checkClientKey(check, keyCred, row);
  const user = await checkSession(sessionCred, row, keyProjectId);
  const project = projectFrom(row);
  if (!project) throw unauthorized("invalid or revoked client key");
  return { clientKeyId: keyCred.id, sessionId: sessionCred.id, project, user };
}

/**
 * `X-Api-Key`, and optionally an end-user session Bearer of the same project (401 otherwise): the
 * key's project and app config, one round trip. A developer token is not a client credential.
 */
export async function resolveAppClient(
  check: HeaderCheck,
): Promise<{ principal: AppClient; config: AppMcpRuntime }> {
  const keyCred = clientKeyCredential(check.apiKey);
  const { bearer } = check;
  if (bearer?.startsWith(CREDENTIAL_PREFIX.developer))
    throw unauthorized("send X-Api-Key (and an optional end-user session), not a developer token");
  const sessionCred = bearer === undefined ? undefined : sessionCredential(bearer);
  const row = await check.resolveRow({ clientKey: keyCred, session: sessionCred }, { fromClientKey: true });
  const keyProjectId = await checkClientKey(check, keyCred, row);
  const user = sessionCred ? await checkSession(sessionCred, row, keyProjectId) : undefined;
  const project = projectFrom(row);
  if (!project) throw unauthorized("invalid or revoked client key");
  const { exposedCollections: _collections, exposedFunctions: _functions, ...config } = settingsFrom(row);
  return { principal: { project, clientKeyId: keyCred.id, ...(user ? { user } : {}) }, config };
}

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
  const row = await resolveCredentials(db, creds, projectJoin(ref));
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
  const row = await resolveCredentials(
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
  const row = await resolveCredentials(db, { developer: cred }, projectJoin(ref));
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
  const row = await resolveCredentials(db, { signinEmail }, projectJoin(ref));
  const project = projectFrom(row);
  if (!project) return null;
  return { project, config: settingsFrom(row), signinUser: signinCandidate(row) };
}
