/**
 * The protected resources (RFC 8707 / RFC 9728) this platform serves, as canonical URLs, and the
 * way back from a `resource` parameter to the endpoint it names. Pure: strings in, strings out.
 *
 * - platform MCP: `<issuer>/mcp`
 * - app MCP by path: `<issuer>/app/<project id>/mcp`
 * - app MCP by hostname: `https://<slug>.<APP_MCP_HOST_SUFFIX>/mcp`, with the issuer's scheme and port
 *   (`http://<slug>.mcp.localhost:8787/mcp` under `npm run dev`: the URL the config's `hostname_url`
 *   gives, so a client's 401 leads to metadata that exists and names the URL it connected to)
 *
 * `<issuer>` is `PUBLIC_BASE_URL`, or the request's origin when it is empty. Path-addressed
 * resources live on the issuer's origin only, so a token's audience always names one of our
 * endpoints exactly.
 */

const UUID_PATH = /^\/app\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\/mcp$/;
const SLUG = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** Which endpoint a resource names. */
export type ResourceTarget =
  | { kind: "platform" }
  | { kind: "app"; projectId: string }
  | { kind: "app"; slug: string };

/** The issuer (authorization server identifier): `PUBLIC_BASE_URL` without a trailing slash, or the request's origin. */
export function issuerOf(publicBaseUrl: string | undefined, requestUrl: string): string {
  const base = publicBaseUrl?.trim().replace(/\/+$/, "");
  return base ? new URL(base).origin : new URL(requestUrl).origin;
}

/** The canonical resource of the platform MCP. */
export const platformResource = (issuer: string): string => `${issuer}/mcp`;

/** The canonical resource of a project's path-addressed app MCP. */
export const appResource = (issuer: string, projectId: string): string =>
  `${issuer}/app/${projectId.toLowerCase()}/mcp`;

/** The canonical resource of a project's hostname-addressed app MCP. */
export const slugResource = (slug: string, hostSuffix: string, issuer: string): string =>
  `${hostOrigin(`${slug}.${hostSuffix.toLowerCase()}`, issuer)}/mcp`;

/** `host` under the issuer's scheme and port (production: `https://<host>`). */
export function hostOrigin(host: string, issuer: string): string {
  const { protocol, port } = new URL(issuer);
  return `${protocol}//${host}${port ? `:${port}` : ""}`;
}

/** RFC 9728 §3.1: the metadata URL inserts `/.well-known/oauth-protected-resource` before the path. */
export function resourceMetadataUrl(resource: string): string {
  const url = new URL(resource);
  return `${url.origin}/.well-known/oauth-protected-resource${url.pathname === "/" ? "" : url.pathname}`;
}

/**
 * The endpoint a `resource` parameter names, or null when it names none of ours (another origin, an
 * unknown path, a query or fragment).
 */
export function parseResource(resource: string, issuer: string, hostSuffix: string): ResourceTarget | null {
  let url: URL;
  try {
    url = new URL(resource);
  } catch {
    return null;
  }
  if (url.search || url.hash || url.username || url.password) return null;
  const suffix = `.${hostSuffix.toLowerCase()}`;
  const { protocol, port } = new URL(issuer);
  if (hostSuffix && url.protocol === protocol && url.port === port && url.hostname.endsWith(suffix)) {
    const slug = url.hostname.slice(0, -suffix.length);
    return SLUG.test(slug) && url.pathname === "/mcp" ? { kind: "app", slug } : null;
  }
  if (url.origin !== issuer) return null;
  if (url.pathname === "/mcp") return { kind: "platform" };
  const match = UUID_PATH.exec(url.pathname.toLowerCase());
  return match?.[1] ? { kind: "app", projectId: match[1] } : null;
}

/** The canonical spelling of a target's resource. */
export function resourceOf(target: ResourceTarget, issuer: string, hostSuffix: string): string {
  if (target.kind === "platform") return platformResource(issuer);
  return "slug" in target
    ? slugResource(target.slug, hostSuffix, issuer)
    : appResource(issuer, target.projectId);
}

/** The `resource_name` of an app's MCP endpoint, and the platform's, in their resource metadata. */
export const APP_MCP_NAME = "Amba app MCP";
export const PLATFORM_MCP_NAME = "Amba platform MCP";

/**
 * The MCP endpoint `/mcp` is on a host: on `<slug>.<suffix>` the app's hostname endpoint; anywhere
 * else, the platform MCP. Its canonical resource and its name.
 */
export function mcpEndpointOnHost(
  hostname: string,
  issuer: string,
  hostSuffix: string,
): { resource: string; name: string } {
  const onHost = parseResource(`${hostOrigin(hostname, issuer)}/mcp`, issuer, hostSuffix);
  if (onHost?.kind === "app") return { resource: resourceOf(onHost, issuer, hostSuffix), name: APP_MCP_NAME };
  return { resource: platformResource(issuer), name: PLATFORM_MCP_NAME };
}

/** RFC 9728 §2: the protected resource metadata of `resource`, whose tokens `issuer` issues. */
export const protectedResourceMetadata = (resource: string, issuer: string, name: string) => ({
  resource,
  authorization_servers: [issuer],
  bearer_methods_supported: ["header"],
  resource_name: name,
});
