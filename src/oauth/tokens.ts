/**
 * The shape of the tokens the authorization server issues (src/oauth/server.ts):
 * `<subject>:<grant id>:<secret>`, with a subject of ours — `u_<user id hex>` for an app's end user,
 * `d_<developer id hex>` for a developer. Header credentials (`amba_dev_…`, `amba_sess_…`) never
 * contain `:`, so the shape alone decides which resolver a Bearer goes to. Pure.
 */

const UUID_HEX = /^[0-9a-f]{32}$/;
const TOKEN_SHAPE = /^[ud]_[0-9a-f]{32}:[^:\s]+:[^:\s]+$/;

/** The provider's subject for a principal: `u_<hex>` (end user) or `d_<hex>` (developer). */
export const subjectOf = (kind: "end_user" | "developer", id: string): string =>
  `${kind === "end_user" ? "u" : "d"}_${id.replaceAll("-", "").toLowerCase()}`;

/** True when a Bearer has the shape of a token this authorization server issues. */
export const isOAuthToken = (token: string): boolean => TOKEN_SHAPE.test(token);

/** The `<subject>` and `<grant id>` a code, refresh or access token names, if it has the shape. */
export function tokenGrantRef(token: string): { subject: string; grantId: string } | null {
  const [subject, grantId, secret] = token.split(":");
  if (!subject || !grantId || !secret || !UUID_HEX.test(subject.slice(2))) return null;
  return { subject, grantId };
}
