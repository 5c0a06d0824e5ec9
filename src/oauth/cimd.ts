/**
 * Client ID Metadata Documents (CIMD): a `client_id` that is an https URL with a path names a
 * client by the JSON document at that URL, which the provider fetches (10 s deadline, 5 KiB cap,
 * kept in a Cache API cache for as long as the document's `Cache-Control` allows, at most a week).
 * The URL is the caller's choice, so every request that would fetch one is counted per address
 * (src/worker/routes/oauth.ts); these are the facts that decision needs. The provider turns CIMD on
 * only with the `global_fetch_strictly_public` compatibility flag (outbound fetch reaches public
 * addresses only). A document that answers with a redirect is refused, not followed
 * ({@link refuseMetadataDocumentRedirects}).
 */
import { sha256Hex } from "../accounts/crypto.ts";

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

/**
 * How long a document URL whose client was just issued tokens is taken for that client's own
 * document rather than a caller's pick. A hosted assistant refreshes all its users' tokens from a few
 * egress addresses, and a document without `Cache-Control` is fetched on each request: counted per
 * address, such a client would be capped at the per-address budget (60 token requests a minute) for
 * all its users together. A URL that named a client the provider issued tokens to is that client's
 * document: fetching it again reaches only the host that serves it, which is what the budget is for.
 * Remembered in this isolate's memory and, for the others, in `OAUTH_KV` (read only when the budget
 * would refuse, written once per isolate and {@link ACCEPTED_DOCUMENT_MS}).
 */
export const ACCEPTED_DOCUMENT_MS = 10 * 60_000;
const ACCEPTED_DOCUMENTS_MAX = 1_000;
const acceptedDocuments = new Map<string, number>();

/** The `OAUTH_KV` key that says `url`'s client was issued tokens lately. */
export const acceptedDocumentKey = async (url: string): Promise<string> =>
  `cimd-accepted:${await sha256Hex(url)}`;

/**
 * Remember that the provider issued tokens to the client of document `url` (a token response 200):
 * in this isolate, and in `kv` (through `waitUntil`, after the response) when this isolate did not
 * know it yet.
 */
export function rememberAcceptedDocument(
  url: string,
  kv: KVNamespace | undefined,
  waitUntil: (promise: Promise<unknown>) => void,
  now = Date.now(),
): void {
  const known = documentAcceptedRecently(url, now);
  acceptedDocuments.delete(url);
  if (acceptedDocuments.size >= ACCEPTED_DOCUMENTS_MAX)
    acceptedDocuments.delete(acceptedDocuments.keys().next().value as string);
  acceptedDocuments.set(url, now + ACCEPTED_DOCUMENT_MS);
  if (known || !kv) return;
  waitUntil(
    acceptedDocumentKey(url)
      .then((key) => kv.put(key, "1", { expirationTtl: ACCEPTED_DOCUMENT_MS / 1000 }))
      .catch((err: unknown) => console.error("remembering an accepted client metadata document failed", err)),
  );
}

/** Whether `url`'s client was issued tokens in this isolate within {@link ACCEPTED_DOCUMENT_MS}. */
export function documentAcceptedRecently(url: string, now = Date.now()): boolean {
  const until = acceptedDocuments.get(url);
  if (until === undefined) return false;
  if (until > now) return true;
  acceptedDocuments.delete(url);
  return false;
}

/**
 * Whether another isolate remembered `url`'s client as issued tokens ({@link rememberAcceptedDocument});
 * false when the store cannot say (the budget then refuses, as without the marker).
 */
export async function documentAcceptedElsewhere(kv: KVNamespace | undefined, url: string): Promise<boolean> {
  if (!kv) return false;
  try {
    return (await kv.get(await acceptedDocumentKey(url))) !== null;
  } catch {
    return false;
  }
}

/**
 * The `User-Agent` the provider (`@cloudflare/workers-oauth-provider` 1.2.x) sends on its outbound
 * fetches: a client metadata document, and (unused here) an enterprise IdP's JWKS.
 */
const PROVIDER_USER_AGENT = "workers-oauth-provider/";

/**
 * Whether a `fetch(input, init)` is the provider fetching a client metadata document: a document URL
 * (as a string, the provider's call), with the provider's `User-Agent`. Pure.
 */
export function isProviderDocumentFetch(input: unknown, init: RequestInit | undefined): boolean {
  const headers = init?.headers;
  if (typeof input !== "string" || headers === undefined || headers === null) return false;
  // The provider passes a plain object; read it without building `Headers` (every fetch asks).
  const agent =
    headers instanceof Headers || Array.isArray(headers)
      ? new Headers(headers).get("user-agent")
      : Object.entries(headers).find(([name]) => name.toLowerCase() === "user-agent")?.[1];
  return typeof agent === "string" && agent.startsWith(PROVIDER_USER_AGENT) && isMetadataDocumentUrl(input);
}

/** Redirects lately refused per document URL (their status), for the error the client is told. */
const refusedRedirects = new Map<string, number>();
const REFUSED_REDIRECTS_MAX = 100;

/**
 * The HTTP status of a redirect a metadata document URL answered with lately in this isolate
 * ({@link refuseMetadataDocumentRedirects}), so an error can say why its client is refused;
 * undefined when it did not (or it is no longer remembered).
 */
export const refusedRedirect = (url: string): number | undefined => refusedRedirects.get(url);

/**
 * The `error_description` a token request's client whose metadata document URL answered with
 * redirect `status` is refused with (`invalid_client`).
 */
export const redirectedDocumentDescription = (status: number): string =>
  `the client metadata document (the client_id URL) answered with a redirect (HTTP ${status}), which is not followed: serve the document at its client_id URL itself`;

/** The fetch functions {@link refuseMetadataDocumentRedirects} installed (each wraps the one before). */
const guards = new WeakSet<object>();

/**
 * Make the provider's client metadata document fetches refuse redirects. The draft says the
 * authorization server "MUST NOT automatically follow HTTP redirects" when it fetches a document
 * and treats any answer but a 200 as an error (draft-ietf-oauth-client-id-metadata-document,
 * "Client Metadata Document" retrieval); the provider (1.2.3) fetches with the default
 * `redirect: "follow"` and checks only that the document's `client_id` equals the URL it asked for,
 * which a document served from any host the URL redirects to passes — an open redirect on a
 * reputable host would let anyone publish "Claude (reputable.example)".
 *
 * The provider takes no `fetch` option: it calls the global `fetch` by name. So the global is
 * wrapped, and the wrapper changes nothing but the provider's document fetches
 * ({@link isProviderDocumentFetch}: a document URL with the provider's `User-Agent`), which it makes
 * with `redirect: "manual"`; a 3xx then reaches the provider as it is, not ok, and the provider
 * refuses the client (`CimdFetchError`: the error page at `/authorize`, `invalid_client` at the token
 * endpoint). Every other fetch (the database, function calls) passes through unchanged, with its own
 * `redirect`. Called before each use of the provider (`authorizationServer`, src/oauth/server.ts):
 * one identity check when installed, and a `fetch` put on the global later (a test's stub) is wrapped
 * in turn, so the guard always sits in front of what the provider reaches.
 */
export function refuseMetadataDocumentRedirects(): void {
  const inner = globalThis.fetch;
  if (guards.has(inner)) return;
  const guarded = async function fetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
    if (!isProviderDocumentFetch(input, init)) return inner.call(globalThis, input, init);
    const url = input as string;
    const res = await inner.call(globalThis, url, { ...init, redirect: "manual" });
    refusedRedirects.delete(url);
    if (res.status < 300 || res.status > 399) return res;
    await res.body?.cancel().catch(() => undefined);
    if (refusedRedirects.size >= REFUSED_REDIRECTS_MAX)
      refusedRedirects.delete(refusedRedirects.keys().next().value as string);
    refusedRedirects.set(url, res.status);
    return new Response(null, { status: res.status });
  } as typeof globalThis.fetch;
  guards.add(guarded);
  globalThis.fetch = guarded;
}
