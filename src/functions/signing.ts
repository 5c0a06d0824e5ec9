/**
 * Signed function calls: every upstream request carries `x-amba-signature: t=<unix seconds>,v1=<hex>`,
 * an HMAC-SHA256 keyed with the project's function signing secret (the UTF-8 bytes of the whole
 * `amba_fsig_…` string) over {@link canonicalRequest}. Without it, anyone who knows a function's URL
 * could send `x-amba-user-id: <victim>` straight to it; with it, the developer's endpoint checks that
 * the platform sent the request, for this user, recently (README "Verifying calls to your function").
 * Pure apart from WebCrypto.
 */

import { constantTimeEqual, hexOf, sha256Hex } from "../accounts/crypto.ts";
import type { UpstreamRequest } from "./invoke.ts";

/** The header the signature travels in. */
export const SIGNATURE_HEADER = "x-amba-signature";

/**
 * The identity headers the signature covers, in the canonical string's order: every one the
 * endpoint is told to trust, so none can be swapped or dropped without breaking it.
 */
export const SIGNED_HEADERS = [
  "x-amba-project-id",
  "x-amba-user-id",
  "x-amba-user-email",
  "x-amba-function",
  "x-amba-function-version",
  "x-amba-request-id",
] as const;

/** A request as it is about to be sent: what the signature covers. */
export interface SignableRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string;
}

/**
 * The signed text, one field per line: `v1`, the timestamp, the method, the URL exactly as sent,
 * the hex SHA-256 of the body's UTF-8 bytes (of the empty string when there is none), then each of
 * {@link SIGNED_HEADERS}' values ("" when absent). No field can hold a newline — URLs are serialised
 * and header values are printable ASCII (src/functions/invoke.ts) — so the split is unambiguous.
 */
export async function canonicalRequest(request: SignableRequest, timestamp: number): Promise<string> {
  const bodyHash = await sha256Hex(request.body ?? "");
  const identity = SIGNED_HEADERS.map((name) => request.headers[name] ?? "");
  return ["v1", String(timestamp), request.method.toUpperCase(), request.url, bodyHash, ...identity].join(
    "\n",
  );
}

const encoder = new TextEncoder();

/** Hex HMAC-SHA256 of `text` keyed with `secret`'s UTF-8 bytes. */
async function hmacHex(secret: string, text: string): Promise<string> {
  const key = await crypto.subtle.importKey(
    "raw",
    encoder.encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  return hexOf(new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(text))));
}

/** The `x-amba-signature` value of `request` at `nowMs` (whole seconds since the epoch). */
export async function signatureHeader(
  request: SignableRequest,
  secret: string,
  nowMs = Date.now(),
): Promise<string> {
  const timestamp = Math.floor(nowMs / 1000);
  return `t=${timestamp},v1=${await hmacHex(secret, await canonicalRequest(request, timestamp))}`;
}

/** `request` with its `x-amba-signature` header, signed with the project's `secret` at `nowMs`. */
export async function signUpstreamRequest(
  request: UpstreamRequest,
  secret: string,
  nowMs = Date.now(),
): Promise<UpstreamRequest> {
  const { method, headers, body } = request.init;
  const signature = await signatureHeader({ method, url: request.url, headers, body }, secret, nowMs);
  return {
    url: request.url,
    init: { ...request.init, headers: { ...headers, [SIGNATURE_HEADER]: signature } },
  };
}

/** How far a signature's timestamp may be from the verifier's clock (README's recommendation). */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

const SIGNATURE_VALUE = /^t=(\d{1,12}),v1=([0-9a-f]{64})$/;

/**
 * Check `request`'s `x-amba-signature` against `secret` at `nowMs`: null when the platform signed
 * this very request within {@link SIGNATURE_TOLERANCE_SECONDS}, else why not (no header, malformed,
 * too old or from the future, wrong). What a function's host runs (`amber serve`); replays within
 * the window are the caller's to refuse (remember the `v1` it accepted).
 */
export async function signatureProblem(
  request: SignableRequest,
  secret: string,
  nowMs = Date.now(),
): Promise<string | null> {
  const value = request.headers[SIGNATURE_HEADER];
  if (value === undefined) return `no ${SIGNATURE_HEADER} header`;
  const match = SIGNATURE_VALUE.exec(value);
  if (!match) return `${SIGNATURE_HEADER} is not t=<unix seconds>,v1=<64 hex digits>`;
  const timestamp = Number(match[1]);
  if (Math.abs(nowMs / 1000 - timestamp) > SIGNATURE_TOLERANCE_SECONDS) {
    return `the signature's timestamp is more than ${SIGNATURE_TOLERANCE_SECONDS} s from this clock`;
  }
  const expected = await hmacHex(secret, await canonicalRequest(request, timestamp));
  return constantTimeEqual(expected, match[2] as string) ? null : "the signature does not match";
}

/** What `GET …/functions/signing-secret` and its rotation answer: the secret and how it is used. */
export interface SigningSecretView {
  signing_secret: string;
  header: typeof SIGNATURE_HEADER;
  algorithm: "HMAC-SHA256";
}

export const signingSecretView = (secret: string): SigningSecretView => ({
  signing_secret: secret,
  header: SIGNATURE_HEADER,
  algorithm: "HMAC-SHA256",
});
