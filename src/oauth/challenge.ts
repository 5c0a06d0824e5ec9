/**
 * The `WWW-Authenticate` challenge of a 401 from an MCP endpoint (RFC 6750 §3, RFC 9728 §5.1): it
 * names the endpoint's protected resource metadata, so an MCP client that follows the authorization
 * spec can find the authorization server from the 401 alone.
 */

/** What a challenge says: where the resource metadata is, and (with bad credentials) why. */
export interface ChallengeOptions {
  /** `https://…/.well-known/oauth-protected-resource/…` of the endpoint that refused. */
  resourceMetadataUrl: string;
  /** RFC 6750 error code; omitted when the request carried no credentials at all. */
  error?: "invalid_request" | "invalid_token" | "insufficient_scope";
  description?: string;
}

/** An RFC 7230 quoted-string: backslash and quote escaped, control characters dropped. */
const quoted = (value: string): string =>
  `"${value
    .replace(/[\u0000-\u001f\u007f]/g, "")
    .replace(/[^\u0020-\u007e]/g, "?")
    .replace(/[\\"]/g, (ch) => `\\${ch}`)}"`;

/** `Bearer realm="amba", resource_metadata="…"[, error="…", error_description="…"]`. */
export function wwwAuthenticate({ resourceMetadataUrl, error, description }: ChallengeOptions): string {
  const params = [`realm=${quoted("amba")}`, `resource_metadata=${quoted(resourceMetadataUrl)}`];
  if (error) params.push(`error=${quoted(error)}`);
  if (error && description) params.push(`error_description=${quoted(description)}`);
  return `Bearer ${params.join(", ")}`;
}
