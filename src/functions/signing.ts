/**
 * Signed function calls: every upstream request carries `x-amba-signature: t=<unix seconds>,v1=<hex>`,
 * an HMAC-SHA256 keyed with the project's function signing secret (the UTF-8 bytes of the whole
 * `amba_fsig_…` string) over {@link canonicalRequest}. Without it, anyone who knows a function's URL
 * could send `x-amba-user-id: <victim>` straight to it; with it, the developer's endpoint checks that
 * the platform sent the request, for this user, recently (README "Verifying calls to your function").
 * During a rotation's overlap the header carries one `v1=` per secret, the new one's first, and a
 * verifier accepts any that matches. Pure apart from WebCrypto.
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

/**
 * The keys a project's calls are signed with: the current secret and, during a rotation's overlap
 * (`previous_valid_for_seconds`), the one it replaced, until `expiresAtMs`. Only one previous
 * secret at a time: rotating again within an overlap makes the secret being replaced the previous
 * one and drops the older (README "Verifying calls to your function").
 */
export interface SigningKeys {
  secret: string;
  previous: { secret: string; expiresAtMs: number } | null;
}

/** The keys as stored (`projects`): the previous secret counts only with its expiry (ms since the epoch). */
export function signingKeysFrom(
  secret: string,
  previous: string | null,
  expiresAtMs: number | string | null,
): SigningKeys {
  return {
    secret,
    previous:
      previous === null || expiresAtMs === null
        ? null
        : { secret: previous, expiresAtMs: Number(expiresAtMs) },
  };
}

/** The previous secret while its overlap lasts at `nowMs`, else null (the stored pair may have expired). */
const livePrevious = ({ previous }: SigningKeys, nowMs: number): SigningKeys["previous"] =>
  previous !== null && nowMs < previous.expiresAtMs ? previous : null;

/** The secrets a call at `nowMs` is signed with: the current one first, the previous one while it lasts. */
export function signingSecrets(keys: SigningKeys, nowMs: number): string[] {
  const previous = livePrevious(keys, nowMs);
  return previous === null ? [keys.secret] : [keys.secret, previous.secret];
}

/**
 * The `x-amba-signature` value of `request` at `nowMs` (whole seconds since the epoch): one
 * `v1=` per secret, in the order given (the current secret's first), over the same signed text.
 */
export async function signatureHeader(
  request: SignableRequest,
  secrets: readonly string[],
  nowMs = Date.now(),
): Promise<string> {
  const timestamp = Math.floor(nowMs / 1000);
  const text = await canonicalRequest(request, timestamp);
  const macs = await Promise.all(secrets.map((secret) => hmacHex(secret, text)));
  return [`t=${timestamp}`, ...macs.map((mac) => `v1=${mac}`)].join(",");
}

/** `request` with its `x-amba-signature` header, signed with the project's `keys` at `nowMs`. */
export async function signUpstreamRequest(
  request: UpstreamRequest,
  keys: SigningKeys,
  nowMs = Date.now(),
): Promise<UpstreamRequest> {
  const { method, headers, body } = request.init;
  const signature = await signatureHeader(
    { method, url: request.url, headers, body },
    signingSecrets(keys, nowMs),
    nowMs,
  );
  return {
    url: request.url,
    init: { ...request.init, headers: { ...headers, [SIGNATURE_HEADER]: signature } },
  };
}

/** How far a signature's timestamp may be from the verifier's clock (README's recommendation). */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

/**
 * Most `v1=` signatures one header may carry, and most secrets a verifier holds: the platform sends
 * two at most (an overlap), and a verifier computes one HMAC per secret, so both bound its work.
 */
export const MAX_SIGNATURES = 8;

const TIMESTAMP_PART = /^t=(\d{1,12})$/;
const SIGNATURE_PART = /^v1=([0-9a-f]{64})$/;

/** The timestamp and `v1` values of an `x-amba-signature` value, or why it is malformed. */
export function parseSignatureHeader(value: string): { timestamp: number; signatures: string[] } | string {
  // At most one part past the cap is split off: a header of a million commas costs no more.
  const parts = value.split(",", MAX_SIGNATURES + 2);
  if (parts.length > MAX_SIGNATURES + 1) {
    return `${SIGNATURE_HEADER} carries more than ${MAX_SIGNATURES} v1 signatures`;
  }
  const timestamp = TIMESTAMP_PART.exec(parts[0] as string)?.[1];
  const signatures = parts.slice(1).map((part) => SIGNATURE_PART.exec(part)?.[1]);
  if (timestamp === undefined || signatures.length === 0 || signatures.includes(undefined)) {
    return `${SIGNATURE_HEADER} is not t=<unix seconds>,v1=<64 hex digits>[,v1=…]`;
  }
  return { timestamp: Number(timestamp), signatures: signatures as string[] };
}

/**
 * Check `request`'s `x-amba-signature` against `secrets` at `nowMs`: the `v1` values that match one
 * of them when the platform signed this very request within {@link SIGNATURE_TOLERANCE_SECONDS},
 * else why not (no header, malformed, too old or from the future, none matches). One matching `v1`
 * is enough: during a rotation's overlap the header carries the new and the old secret's. What a
 * function's host runs (`amber serve`); replays within the window are the caller's to refuse
 * (remember the matching `v1` values it accepted — every one: a replay may drop the others).
 */
export async function verifySignature(
  request: SignableRequest,
  secrets: readonly string[],
  nowMs = Date.now(),
): Promise<{ matched: string[] } | { problem: string }> {
  const value = request.headers[SIGNATURE_HEADER];
  if (value === undefined) return { problem: `no ${SIGNATURE_HEADER} header` };
  const parsed = parseSignatureHeader(value);
  if (typeof parsed === "string") return { problem: parsed };
  if (Math.abs(nowMs / 1000 - parsed.timestamp) > SIGNATURE_TOLERANCE_SECONDS) {
    return {
      problem: `the signature's timestamp is more than ${SIGNATURE_TOLERANCE_SECONDS} s from this clock`,
    };
  }
  const text = await canonicalRequest(request, parsed.timestamp);
  const expected = await Promise.all(secrets.map((secret) => hmacHex(secret, text)));
  // Every pair is compared (no early exit), so timing says nothing about which one matched.
  const matched = parsed.signatures.filter((v1) =>
    expected.map((mac) => constantTimeEqual(mac, v1)).includes(true),
  );
  return matched.length > 0 ? { matched } : { problem: "the signature does not match" };
}

/**
 * What `GET …/functions/signing-secret` and its rotation answer: the current secret, how it is used
 * and, during a rotation's overlap, when the previous secret stops being signed with (ISO 8601; null
 * otherwise). Never the previous secret itself: the functions that still need it already hold it.
 */
export interface SigningSecretView {
  signing_secret: string;
  header: typeof SIGNATURE_HEADER;
  algorithm: "HMAC-SHA256";
  previous_expires_at: string | null;
}

export function signingSecretView(keys: SigningKeys, nowMs = Date.now()): SigningSecretView {
  const previous = livePrevious(keys, nowMs);
  return {
    signing_secret: keys.secret,
    header: SIGNATURE_HEADER,
    algorithm: "HMAC-SHA256",
    previous_expires_at: previous === null ? null : new Date(previous.expiresAtMs).toISOString(),
  };
}
