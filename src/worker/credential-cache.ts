/**
 * Isolate cache of resolved credentials for the hot routes (app MCP, REST data): the key is a
 * SHA-256 of the presented credential(s) and the project selector, the value the `ProjectAccess`
 * the one-statement resolution returned (principal, app-MCP config, `meta_rev`).
 *
 * Staleness bound: an entry is used for at most {@link CREDENTIAL_TTL_MS}. Within this isolate,
 * every control-plane write (revoke, sign-out, config/exposure/collection change — any non-GET
 * request outside the hot routes) drops the whole cache once it has answered (`forgetCredentials`,
 * wired in src/worker/app.ts); other isolates see such a change within the TTL (README Decisions).
 * Only successful resolutions are cached; failures always go to the database.
 */
import { sha256Hex } from "../accounts/crypto.ts";
import { WeightedLru } from "../mcp/lru.ts";

/** How long a resolved credential is reused without asking the database. */
export const CREDENTIAL_TTL_MS = 5_000;
/**
 * Characters of JSON the cached principals may hold together, and (apart) the app configs they
 * share. Weighed, not counted: a config carries the app's exposed collection and function names
 * (up to 1,000 each, ≈ 100 KB), and an app has as many valid credentials as it signs up end users.
 */
export const CREDENTIAL_BUDGET_CHARS = 1024 * 1024;

/** A resolution: who calls, for which project (at which `meta_rev`), and that app's config. */
export interface Resolution<C> {
  principal: { project: { id: string; metaRev: number } };
  config: C;
}

interface Entry {
  principal: Resolution<unknown>["principal"];
  configKey: string;
  expires: number;
}

const entries = new WeightedLru<string, Entry>(
  CREDENTIAL_BUDGET_CHARS,
  (entry, key) => key.length + JSON.stringify(entry.principal).length,
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

/** Drop every cached resolution in this isolate (after a revoke, sign-out or config change). */
export function forgetCredentials(): void {
  entries.clear();
  configs.clear();
}
