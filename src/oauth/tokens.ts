/**
 * The shape of the tokens the authorization server issues (src/oauth/server.ts):
 * `<subject>:<grant id>:<secret>`, with a subject of ours — `u_<user id hex>` for an app's end user,
 * `d_<developer id hex>` for a developer. Header credentials (`amba_dev_…`, `amba_sess_…`) never
 * contain `:`, so the shape alone decides which resolver a Bearer goes to. Pure.
 */
import { constantTimeEqual } from "../accounts/crypto.ts";

const UUID_HEX = /^[0-9a-f]{32}$/;
const TOKEN_SHAPE = /^[ud]_[0-9a-f]{32}:[^:\s]+:[^:\s]+$/;

/** The provider's subject for a principal: `u_<hex>` (end user) or `d_<hex>` (developer). */
export const subjectOf = (kind: "end_user" | "developer", id: string): string =>
  `${kind === "end_user" ? "u" : "d"}_${id.replaceAll("-", "").toLowerCase()}`;

/**
 * The longest client id, code or token handed to the provider (or sign-in transaction looked up by
 * the `/authorize` form), in UTF-8 bytes. KV keys are built from them (`client:<client id>`,
 * `grant:<subject>:<grant id>`, `token:…`, `amba-oauth:tx:<tx>`), and KV throws on a key over 512
 * bytes instead of finding nothing: a longer value would be a 500. What is issued is far shorter
 * (client and grant ids of 16 characters, secrets of 32, transactions of 43), and so is a Client ID
 * Metadata Document URL.
 */
export const MAX_OAUTH_ID_BYTES = 256;

/** True when a client id, code or token is longer than any the provider issues or looks up. */
export const oauthIdTooLong = (value: string): boolean =>
  new TextEncoder().encode(value).length > MAX_OAUTH_ID_BYTES;

/** True when a Bearer has the shape (and at most the length) of a token this authorization server issues. */
export const isOAuthToken = (token: string): boolean => TOKEN_SHAPE.test(token) && !oauthIdTooLong(token);

/** Whether `hash` (hex SHA-256 of a presented code or token) is the stored one, in constant time. */
export const hashMatches = (hash: string, stored: unknown): boolean =>
  typeof stored === "string" && constantTimeEqual(hash, stored);

/** The `<subject>` and `<grant id>` a code, refresh or access token names, if it has the shape. */
export function tokenGrantRef(token: string): { subject: string; grantId: string } | null {
  if (oauthIdTooLong(token)) return null;
  const [subject, grantId, secret] = token.split(":");
  if (!subject || !grantId || !secret || !UUID_HEX.test(subject.slice(2))) return null;
  return { subject, grantId };
}

/**
 * The id a grant is listed under: `<subject>.<provider grant id>` (`u_<hex>.<id>` for an end user,
 * `d_<hex>.<id>` for a developer). The provider stores a grant under its subject
 * (`grant:<subject>:<id>`) and finds it only with both, so an id that carries the subject lets a
 * revocation read exactly one record instead of searching every subject of the project (or keeping
 * an index grant → subject, which grants made before it existed would lack). The subject is no
 * secret to the caller: the listing shows the same principal. `.` is in neither part's alphabet.
 */
export const grantViewId = (subject: string, grantId: string): string => `${subject}.${grantId}`;

/** A listed id's subject and provider grant id, or null when it is not one (strict: shape and length). Pure. */
export function parseGrantViewId(id: string): { subject: string; grantId: string } | null {
  const match = /^([ud]_[0-9a-f]{32})\.([A-Za-z0-9_-]{1,64})$/.exec(id);
  return match ? { subject: match[1] as string, grantId: match[2] as string } : null;
}
