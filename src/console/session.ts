/**
 * The console's session: the developer token lives in an HttpOnly, Secure, SameSite=Strict cookie
 * scoped to `/console` (never in a URL, never readable by page script), set by the sign-in form's
 * POST. Every state-changing form carries a CSRF token derived from the cookie (SHA-256 of a label
 * and the token): a page of another site can neither read the cookie nor compute the token, and
 * SameSite=Strict keeps the cookie off cross-site requests anyway. POSTs with a foreign `Origin` are
 * refused outright.
 */

import { base64url, constantTimeEqual } from "../accounts/crypto.ts";

/** Name of the session cookie. */
export const SESSION_COOKIE = "amba_console";
/** Session cookie lifetime: 8 hours. */
export const SESSION_MAX_AGE_SECONDS = 8 * 60 * 60;

/** The CSRF token of a session (deterministic per developer token). */
export async function csrfToken(sessionToken: string): Promise<string> {
  const digest = await crypto.subtle.digest(
    "SHA-256",
    new TextEncoder().encode(`amba-console-csrf:${sessionToken}`),
  );
  return base64url(new Uint8Array(digest));
}

/** True when `given` is the CSRF token of `sessionToken` (compared without early exit). */
export async function csrfMatches(sessionToken: string, given: unknown): Promise<boolean> {
  if (typeof given !== "string") return false;
  return constantTimeEqual(given, await csrfToken(sessionToken));
}

/** True when a POST's `Origin` (if any) is the console's own origin. */
export function sameOrigin(originHeader: string | undefined, requestUrl: string): boolean {
  return originHeader === undefined || originHeader === new URL(requestUrl).origin;
}

/** Secure cookies everywhere but plain-HTTP loopback development (`npm run dev`). */
export function secureCookie(requestUrl: string): boolean {
  const url = new URL(requestUrl);
  return url.protocol === "https:" || !["127.0.0.1", "localhost", "[::1]"].includes(url.hostname);
}

/** A per-response nonce for the inline script (Content-Security-Policy). */
export function scriptNonce(): string {
  return base64url(crypto.getRandomValues(new Uint8Array(16)));
}

/**
 * What every console response carries, pages and errors alike: no caching, no framing, no
 * sniffing, and HTTPS only for a year (HSTS: the sign-in form takes a developer token, and a
 * network attacker must not serve a later visit over plain HTTP; browsers ignore the header on
 * plain-HTTP responses, so `npm run dev` on 127.0.0.1 is unaffected).
 */
const BASE_HEADERS = {
  "cache-control": "no-store",
  "strict-transport-security": "max-age=31536000",
  "x-frame-options": "DENY",
  "referrer-policy": "same-origin",
  "x-content-type-options": "nosniff",
} as const;

/**
 * Headers of every console page (and of `/docs`, which takes a developer token too):
 * {@link BASE_HEADERS}, scripts only with the nonce, and Trusted Types required with no policy
 * allowed — the pages' scripts only set `textContent`, so no string can ever reach an HTML or
 * script sink (`innerHTML`, `eval`) even if a later change added one.
 */
export function pageHeaders(nonce: string): Record<string, string> {
  return {
    ...BASE_HEADERS,
    "content-security-policy": `default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-${nonce}'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; connect-src 'self'; require-trusted-types-for 'script'; trusted-types 'none'`,
  };
}

/**
 * Headers of a console response that is not a page — an error rendered as JSON (unknown path,
 * another developer's project, a refused form), a redirect: the same no-store, no-framing and
 * no-sniffing as a page, and a CSP that allows nothing. Errors echo input (`no route for GET
 * /console/<path>`) and are shown in the developer's browser: they get no weaker headers than pages.
 */
export const NON_PAGE_HEADERS: Readonly<Record<string, string>> = {
  ...BASE_HEADERS,
  "content-security-policy":
    "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
};
