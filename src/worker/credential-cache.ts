/**
 * Isolate cache of resolved credentials for the hot routes (app MCP, REST data): the key is a
 * SHA-256 of the presented credential(s) and the project selector, the value the `ProjectAccess`
 * the one-statement resolution returned (principal, app-MCP config, `meta_rev`).
 *
 * Staleness bound: an entry is used for at most {@link CREDENTIAL_TTL_MS}. Within this isolate, a
 * control-plane write (revoke, sign-out, config/exposure/collection change — a non-GET request
 * outside the hot routes) forgets, once it has answered, the resolutions of whoever made it
 * (`forgetCredentials`, wired in src/worker/app.ts): a developer's, every one of their projects'; an
 * end user's, their project's; an OAuth token request's, its subject's. Not the whole cache: any
 * request could make one (an anonymous POST to no route did), and every tenant of the isolate went
 * back to the database on its next call. Other isolates see a change within the TTL (README
 * Decisions). Only successful resolutions are cached; failures always go to the database.
 */
import { sha256Hex } from "../accounts/crypto.ts";
import { WeightedLru } from "../mcp/lru.ts";
import { subjectOf } from "../oauth/tokens.ts";

/** How long a resolved credential is reused without asking the database. */
export const CREDENTIAL_TTL_MS = 5_000;
/**
 * Characters of JSON the cached principals may hold together, and (apart) the app configs they
 * share. Weighed, not counted: a config carries the app's exposed collection and function names
 * (up to 1,000 each, ≈ 100 KB), and an app has as many valid credentials as it signs up end users.
 */
export const CREDENTIAL_BUDGET_CHARS = 1024 * 1024;

/**
 * A resolution: who calls (a developer, or an app's end user), for which project (its developer, at
 * which `meta_rev`), and that app's config.
 */
export interface Resolution<C> {
  principal: {
    project: { id: string; metaRev: number; developerId?: string };
    developerId?: string;
    user?: { id: string };
  };
  config: C;
}

/**
 * Whose cached resolutions a control-plane write may have made stale: a developer's (those of all
 * their projects, end users' included: a developer changes their apps), one project's, or those of
 * one OAuth subject (`u_<user>`, `d_<developer>`: a token request may revoke its grant).
 */
export type CredentialHolder = { developerId: string } | { projectId: string } | { subject: string };

/** Whether `principal`'s resolution is one of `holder`'s. */
function heldBy(holder: CredentialHolder, principal: Resolution<unknown>["principal"]): boolean {
  if ("developerId" in holder) return principal.project.developerId === holder.developerId;
  if ("projectId" in holder) return principal.project.id === holder.projectId;
  const subject = principal.user
    ? subjectOf("end_user", principal.user.id)
    : principal.developerId && subjectOf("developer", principal.developerId);
  return subject === holder.subject;
}

interface Entry {
  principal: Resolution<unknown>["principal"];
  configKey: string;
  expires: number;
}

/**
 * The most of {@link CREDENTIAL_BUDGET_CHARS} one tenant's credentials keep: those of all the apps
 * of one developer together. An app has as many valid credentials as it signs up end users: without
 * a share of its own, one app whose callers present thousands of distinct credentials (or whose
 * developer scripts them) pushed every other app's out, and their next calls all went back to the
 * database. The share is the developer's, not the app's: a developer has up to 100 apps, and four
 * apps' shares were the whole budget (test/worker/tenant-red3.test.ts). Past it, the developer's
 * apps forget their own least recently used credentials.
 */
export const CREDENTIAL_SHARE_CHARS = CREDENTIAL_BUDGET_CHARS / 4;

const entries = new WeightedLru<string, Entry>(
  CREDENTIAL_BUDGET_CHARS,
  (entry, key) => key.length + JSON.stringify(entry.principal).length,
  {
    of: ({ principal: { project } }) =>
      project.developerId === undefined ? `app:${project.id}` : `developer:${project.developerId}`,
    budget: CREDENTIAL_SHARE_CHARS,
  },
);
/**
 * The configs of the cached resolutions, once per (project, `meta_rev`) — every config change bumps
 * the rev — however many of the app's credentials are cached. Kept with each principal, a large
 * app's config was weighed once per caller: a few dozen of its end users calling filled the budget,
 * and every other app's credentials in the isolate went back to the database on each request.
 */
const configs = new WeightedLru<string, unknown>(
  CREDENTIAL_BUDGET_CHARS,
  (config, key) => key.length + JSON.stringify(config).length,
);

const configKeyOf = ({ project }: Resolution<unknown>["principal"]) => `${project.id}:${project.metaRev}`;

/** The cache key of these credential strings (raw, as presented) and selector. */
export const credentialKey = (...parts: (string | undefined)[]): Promise<string> =>
  sha256Hex(JSON.stringify(parts));

/** The cached resolution under `key`, else `load()` (remembered for the TTL when it resolves). */
export async function cachedCredential<R extends Resolution<unknown>>(
  key: string,
  load: () => Promise<R>,
): Promise<R> {
  const now = Date.now();
  const hit = entries.get(key);
  if (hit && hit.expires > now) {
    const config = configs.get(hit.configKey);
    if (config !== undefined) return { principal: hit.principal, config } as R;
  }
  if (hit) entries.delete(key);
  const value = await load();
  const configKey = configKeyOf(value.principal);
  entries.set(key, { principal: value.principal, configKey, expires: now + CREDENTIAL_TTL_MS });
  configs.set(configKey, value.config);
  return value;
}

/** Forget `holder`'s cached resolutions in this isolate (after their revoke, sign-out or config change). */
export function forgetCredentials(holder: CredentialHolder): void {
  entries.deleteWhere((entry) => heldBy(holder, entry.principal));
  // An OAuth subject's token request changes no app's config.
  if ("subject" in holder) return;
  origins.deleteWhere(({ app }) =>
    "developerId" in holder ? app.developerId === holder.developerId : app.id === holder.projectId,
  );
}

/**
 * An app's `allowed_origins` as the MCP endpoints' Origin check reads them — before any credential,
 * a CORS preflight has none —, by the request's project selector (also the SDK routes' CORS, for a
 * preflight or an answer no credential resolved: src/worker/sdk-cors.ts). Cached like a resolution (the
 * same TTL, forgotten by the same control-plane writes: the developer's config change applies at
 * once here): read every time, each request with a foreign `Origin` was one statement, a browser
 * app's every call and anyone's, for a known app or a made-up one. Unknown apps are not cached
 * (src/worker/routes/app-mcp.ts counts them against the address's failed checks instead).
 */
interface OriginsEntry {
  app: { id: string; developerId: string };
  origins: readonly string[];
  expires: number;
}

const origins = new WeightedLru<string, OriginsEntry>(
  CREDENTIAL_BUDGET_CHARS,
  (entry, key) => key.length + entry.app.id.length * 2 + entry.origins.join("").length,
);

/** The allowed origins cached under `selector`, else `load()`'s (remembered for the TTL unless null). */
export async function cachedOrigins(
  selector: string,
  load: () => Promise<{ projectId: string; developerId: string; origins: readonly string[] } | null>,
): Promise<readonly string[] | null> {
  const now = Date.now();
  const hit = origins.get(selector);
  if (hit && hit.expires > now) return hit.origins;
  if (hit) origins.delete(selector);
  const app = await load();
  if (app === null) return null;
  const owner = { id: app.projectId, developerId: app.developerId };
  origins.set(selector, { app: owner, origins: app.origins, expires: now + CREDENTIAL_TTL_MS });
  return app.origins;
}
