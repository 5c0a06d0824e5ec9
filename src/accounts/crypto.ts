/**
 * Credential and password primitives on WebCrypto (workerd's `crypto`): random secrets, the
 * `amba_<kind>_<id hex>_<secret>` credential format, SHA-256 digests, constant-time comparison and
 * PBKDF2-SHA256 password hashing with a per-user salt. Only digests are ever stored.
 */

/** Credential kinds and their wire prefixes: developer token, client key, end-user session. */
export const CREDENTIAL_PREFIX = {
  developer: "amba_dev_",
  clientKey: "amba_ck_",
  session: "amba_sess_",
} as const;

export type CredentialKind = keyof typeof CREDENTIAL_PREFIX;

/** A credential split into the row id it names and the secret whose digest that row stores. */
export interface ParsedCredential {
  /** Row uuid in canonical (dashed) form. */
  id: string;
  secret: string;
}

/** Bytes of randomness in a credential secret (32 bytes = 43 base64url characters). */
export const SECRET_BYTES = 32;

/**
 * PBKDF2 iterations for new passwords. workerd refuses counts above 100,000, and at this count a
 * sign-in costs tens of milliseconds of CPU; the count is stored per user so it can be raised later.
 */
export const PASSWORD_ITERATIONS = 100_000;

const SALT_BYTES = 16;
const HASH_BITS = 256;
const encoder = new TextEncoder();

/** Base64url without padding. */
export function base64url(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** Bytes of a base64url string (padding optional); throws when it is not base64. */
export function fromBase64url(text: string): Uint8Array {
  const binary = atob(text.replaceAll("-", "+").replaceAll("_", "/"));
  return Uint8Array.from(binary, (ch) => ch.charCodeAt(0));
}

/** `n` cryptographically random bytes, base64url-encoded. */
export function randomSecret(n = SECRET_BYTES): string {
  return base64url(crypto.getRandomValues(new Uint8Array(n)));
}

/** The two hex digits of every byte (per-byte `toString(16).padStart` showed in the CPU profile). */
const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, "0"));

/** Lowercase hex of `bytes`. */
export function hexOf(bytes: Uint8Array): string {
  let hex = "";
  for (let i = 0; i < bytes.length; i++) hex += HEX[bytes[i] as number];
  return hex;
}

/**
 * Lowercase hex SHA-256 of a UTF-8 string: the stored form of every credential secret, the
 * credential cache's key (so it runs on every authenticated request) and the body digest of a signed
 * function call.
 */
export async function sha256Hex(text: string): Promise<string> {
  return hexOf(new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(text))));
}

/**
 * Constant-time string equality (`crypto.subtle.timingSafeEqual` in workerd, a full-length XOR
 * fold elsewhere). Only the lengths may leak; callers compare fixed-length digests.
 */
export function constantTimeEqual(a: string, b: string): boolean {
  const x = encoder.encode(a);
  const y = encoder.encode(b);
  if (x.byteLength !== y.byteLength) return false;
  const subtle = crypto.subtle as SubtleCrypto & {
    timingSafeEqual?: (a: Uint8Array, b: Uint8Array) => boolean;
  };
  if (typeof subtle.timingSafeEqual === "function") return subtle.timingSafeEqual(x, y);
  let diff = 0;
  for (let i = 0; i < x.byteLength; i++) diff |= (x[i] ?? 0) ^ (y[i] ?? 0);
  return diff === 0;
}

/** Format a credential: `<prefix><uuid without dashes>_<secret>`. */
export function formatCredential(kind: CredentialKind, id: string, secret: string): string {
  return `${CREDENTIAL_PREFIX[kind]}${id.replaceAll("-", "")}_${secret}`;
}

const ID_AND_SECRET = /^([0-9a-f]{32})_([A-Za-z0-9_-]{43})$/;

/** Parse a credential of the given kind; `null` for anything malformed (never throws). */
export function parseCredential(
  kind: CredentialKind,
  token: string | undefined | null,
): ParsedCredential | null {
  if (typeof token !== "string") return null;
  const prefix = CREDENTIAL_PREFIX[kind];
  if (!token.startsWith(prefix)) return null;
  const match = ID_AND_SECRET.exec(token.slice(prefix.length));
  if (!match?.[1] || !match[2]) return null;
  const hex = match[1];
  const id = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  return { id, secret: match[2] };
}

/** A new credential: its row id, the token to hand out once, and the digest to store. */
export interface IssuedCredential {
  id: string;
  token: string;
  secretHash: string;
}

/** Mint a credential of the given kind with a fresh row id. */
export async function issueCredential(kind: CredentialKind): Promise<IssuedCredential> {
  const id = crypto.randomUUID();
  const secret = randomSecret();
  return { id, token: formatCredential(kind, id, secret), secretHash: await sha256Hex(secret) };
}

/** Stored form of a password: PBKDF2-SHA256 digest and salt (base64url) plus the iteration count. */
export interface PasswordHash {
  hash: string;
  salt: string;
  iterations: number;
}

async function pbkdf2(password: string, salt: Uint8Array, iterations: number): Promise<Uint8Array> {
  const key = await crypto.subtle.importKey("raw", encoder.encode(password), "PBKDF2", false, ["deriveBits"]);
  const bits = await crypto.subtle.deriveBits(
    { name: "PBKDF2", hash: "SHA-256", salt, iterations },
    key,
    HASH_BITS,
  );
  return new Uint8Array(bits);
}

/** Hash a new password with a random per-user salt. */
export async function hashPassword(
  password: string,
  iterations = PASSWORD_ITERATIONS,
): Promise<PasswordHash> {
  const salt = crypto.getRandomValues(new Uint8Array(SALT_BYTES));
  return { hash: base64url(await pbkdf2(password, salt, iterations)), salt: base64url(salt), iterations };
}

/** Check a password against its stored hash, in constant time. */
export async function verifyPassword(password: string, stored: PasswordHash): Promise<boolean> {
  const derived = await pbkdf2(password, fromBase64url(stored.salt), stored.iterations);
  return constantTimeEqual(base64url(derived), stored.hash);
}

/**
 * Spend the same work as `verifyPassword` when there is no user to check against, so an unknown
 * email cannot be told from a wrong password by timing.
 */
export async function burnPasswordCheck(password: string): Promise<false> {
  await pbkdf2(password, new Uint8Array(SALT_BYTES), PASSWORD_ITERATIONS);
  return false;
}
