/**
 * Client ID Metadata Documents (CIMD): a `client_id` that is an https URL with a path names a
 * client by the JSON document at that URL, which the provider fetches (10 s deadline, 5 KiB cap,
 * kept in a Cache API cache for as long as the document's `Cache-Control` allows, at most a week).
 * The URL is the caller's choice, so every request that would fetch one is counted per address
 * (src/worker/routes/oauth.ts); these are the facts that decision needs. The provider turns CIMD on
 * only with the `global_fetch_strictly_public` compatibility flag (outbound fetch reaches public
 * addresses only).
 */

/**
 * The Cache API cache the provider keeps validated documents in (`@cloudflare/workers-oauth-provider`
 * 1.2.x). Should a later version rename it, nothing is found here and every request naming a
 * document counts: the bound holds, only cached clients pay for it.
 */
export const CIMD_CACHE_NAME = "workers-oauth-provider:cimd:v1";

/** Whether this Worker runs with `global_fetch_strictly_public`, on which the provider's CIMD depends. */
export function metadataDocumentsEnabled(): boolean {
  const flags = (globalThis as { Cloudflare?: { compatibilityFlags?: Record<string, boolean> } }).Cloudflare
    ?.compatibilityFlags;
  return flags?.global_fetch_strictly_public === true;
}

/**
 * Whether the provider takes `clientId` for a metadata document URL: an https URL whose raw text
 * has a path after the authority (the provider's own test, which reads the path as written rather
 * than as `new URL()` normalizes it). Pure.
 */
export function isMetadataDocumentUrl(clientId: string): boolean {
  try {
    if (new URL(clientId).protocol !== "https:") return false;
  } catch {
    return false;
  }
  const rest = clientId.slice(clientId.indexOf("://") + 3);
  const end = rest.search(/[/?#]/);
  return end !== -1 && rest[end] === "/";
}

/** Whether the provider holds a document for `url` in its cache, so naming it fetches nothing. */
export async function metadataDocumentCached(url: string): Promise<boolean> {
  if (typeof caches === "undefined") return false;
  try {
    const hit = await (await caches.open(CIMD_CACHE_NAME)).match(url);
    await hit?.body?.cancel();
    return hit !== undefined;
  } catch {
    return false;
  }
}

/**
 * Whether looking up `clientId` (as a request names its client) would fetch a metadata document:
 * CIMD on, a document URL, not in the provider's cache.
 */
export async function fetchesMetadataDocument(clientId: string | null | undefined): Promise<boolean> {
  if (typeof clientId !== "string" || !metadataDocumentsEnabled() || !isMetadataDocumentUrl(clientId))
    return false;
  return !(await metadataDocumentCached(clientId));
}
