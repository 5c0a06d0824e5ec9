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
 * Characters of JSON the cached resolutions may hold together. Weighed, not counted: a resolution
 * carries the app's config, whose exposed collection and function names (up to 1,000 each) make it
 * up to ≈ 100 KB, and an app has as many valid credentials as it signs up end users.
 */
export const CREDENTIAL_BUDGET_CHARS = 1024 * 1024;

interface Entry<T> {
  value: T;
  expires: number;
}

const entries = new WeightedLru<string, Entry<unknown>>(
  CREDENTIAL_BUDGET_CHARS,
  (entry, key) => key.length + JSON.stringify(entry.value).length,
);

/** The cache key of these credential strings (raw, as presented) and selector. */
export const credentialKey = (...parts: (string | undefined)[]): Promise<string> =>
  sha256Hex(JSON.stringify(parts));

/** The cached value under `key`, else `load()` (remembered for the TTL when it resolves). */
export async function cachedCredential<T>(key: string, load: () => Promise<T>): Promise<T> {
  const now = Date.now();
  const hit = entries.get(key);
  if (hit && hit.expires > now) return hit.value as T;
  if (hit) entries.delete(key);
  const value = await load();
  entries.set(key, { value, expires: now + CREDENTIAL_TTL_MS });
  return value;
}

/** Drop every cached resolution in this isolate (after a revoke, sign-out or config change). */
export function forgetCredentials(): void {
  entries.clear();
}
