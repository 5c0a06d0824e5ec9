/**
 * The Worker's side of credential resolution (the checks themselves: src/credentials/): reads a
 * request's credential headers, runs the one resolution statement under the address's budget of
 * failed checks (src/worker/rate-limit.ts), and makes a client key's browser origins the request's
 * CORS origins. The middleware routes declare (src/worker/require.ts) and the MCP endpoints call
 * these; the credential cache keys on {@link presentedCredentials}.
 */

import type { Context } from "hono";
import { CREDENTIAL_PREFIX, sha256Hex } from "../accounts/crypto.ts";
import type { SigninCandidate } from "../accounts/signin.ts";
import type { AppMcpRuntime, AppMcpSettings } from "../app-mcp/admin.ts";
import type { AppClient, ProjectAccess, ProjectRef, ProjectSelector } from "../credentials/principal.ts";
import {
  type HeaderCheck,
  type ResolveRow,
  resolveAppClient,
  resolveClientKey,
  resolveDeveloper,
  resolveEndUser,
  resolveProjectAdmin,
  resolveProjectCaller,
} from "../credentials/resolve.ts";
import { resolveCredentials } from "../credentials/statement.ts";
import { AppError } from "../errors.ts";
import { WeightedLru } from "../mcp/lru.ts";
import { isOAuthToken } from "../oauth/tokens.ts";
import type { AppEnv } from "./hono.ts";
import { failedCredentialGuard } from "./rate-limit.ts";

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
 * malformed one) counts nothing. A client key that checks out makes its project's `allowed_origins`
 * the request's CORS origins (src/worker/sdk-cors.ts).
 */
async function budgeted<E extends AppEnv, T>(
  c: Context<E>,
  check: (headers: HeaderCheck) => Promise<T>,
): Promise<T> {
  const guard = failedCredentialGuard(c.env, c.req.raw.headers, (promise) =>
    c.executionCtx.waitUntil(promise),
  );
  let reached = false;
  let proof: string | undefined;
  const resolveRow: ResolveRow = async (creds, join) => {
    proof = await sha256Hex(JSON.stringify(creds));
    if (!((provenCredentials.get(proof) ?? 0) > Date.now())) guard.before();
    reached = true;
    return resolveCredentials(c.var.db, creds, join);
  };
  try {
    const result = await check({
      bearer: bearerToken(c),
      apiKey: apiKeyHeader(c),
      resolveRow,
      keyOrigins: (origins) => c.set("corsOrigins", origins),
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

/** Developer scope: `Authorization: Bearer <developer token>` → the developer (401 otherwise). */
export const authenticateDeveloper = <E extends AppEnv>(
  c: Context<E>,
): Promise<{ developerId: string; tokenId: string }> => budgeted(c, resolveDeveloper);

/**
 * The caller against a project (developer token, or client key + session), one round trip:
 * `resolveProjectCaller` (src/credentials/resolve.ts).
 */
export const authenticateProject = <E extends AppEnv>(
  c: Context<E>,
  ref: ProjectSelector,
): Promise<ProjectAccess> => budgeted(c, (check) => resolveProjectCaller(check, ref));

/** Admin routes: developer Bearer only, and the developer must own the project (else 404). */
export const authenticateProjectAdmin = <E extends AppEnv>(
  c: Context<E>,
  projectId: string,
): Promise<{ developerId: string; project: ProjectRef; config: AppMcpSettings }> =>
  budgeted(c, (check) => resolveProjectAdmin(check, projectId));

/**
 * `X-Api-Key` alone (end-user sign-up / sign-in): the key's project, and with `signinEmail` that
 * project's user with this email (or null) for the password check, in the same round trip.
 */
export const authenticateClientKey = <E extends AppEnv>(
  c: Context<E>,
  options: { signinEmail?: string } = {},
): Promise<{ clientKeyId: string; project: ProjectRef; signinUser: SigninCandidate | null }> =>
  budgeted(c, (check) => resolveClientKey(check, options));

/** `X-Api-Key` + session Bearer without a project in the path (`/v1/auth/me`, sign-out). */
export const authenticateEndUser = <E extends AppEnv>(
  c: Context<E>,
): Promise<{
  clientKeyId: string;
  sessionId: string;
  project: ProjectRef;
  user: { id: string; email: string };
}> => budgeted(c, resolveEndUser);

/** `X-Api-Key`, and optionally an end-user session Bearer of the same project: an app's client code. */
export const authenticateAppClient = <E extends AppEnv>(
  c: Context<E>,
): Promise<{ principal: AppClient; config: AppMcpRuntime }> => budgeted(c, resolveAppClient);
