/**
 * Who a request acts as, once its credentials are resolved (src/credentials/resolve.ts): the
 * principal and its project, the app-MCP config that came with them, and how a request names its
 * project. Types and pure mappings only; the Worker's context carries these (src/worker/hono.ts).
 */
import type { AppMcpRuntime, AppMcpSettings } from "../app-mcp/admin.ts";
import { UUID } from "../data/columns.ts";
import type { Actor } from "../data/service.ts";

/** The project a request addresses, as resolved with its credentials. */
export interface ProjectRef {
  id: string;
  name: string;
  developerId: string;
  metaRev: number;
}

/** Who is calling, for which project. */
export type Principal =
  | { scope: "developer"; developerId: string; project: ProjectRef }
  | { scope: "end_user"; project: ProjectRef; user: { id: string; email: string }; clientKeyId: string };

/** The data service's view of a principal: developer scope, or the signed-in end user. */
export const actorOf = (principal: Principal): Actor =>
  principal.scope === "developer"
    ? { scope: "developer", tenant: principal.project.developerId }
    : { scope: "end_user", userId: principal.user.id, tenant: principal.project.developerId };

/** How a request names its project: by id (`/…/:id/…`) or by app-MCP hostname slug. */
export type ProjectSelector = { projectId: string } | { slug: string };

/** A principal with a project, plus the app-MCP config, from one round trip. */
export interface ProjectAccess {
  principal: Principal;
  config: AppMcpSettings;
}

/**
 * `ProjectAccess` as the hot routes use it and the credential cache keeps it: the config without
 * the exposure lists (`AppMcpRuntime`).
 */
export interface HotAccess {
  principal: Principal;
  config: AppMcpRuntime;
}

export const hotAccess = ({ principal, config }: ProjectAccess): HotAccess => {
  const { exposedCollections: _collections, exposedFunctions: _functions, ...runtime } = config;
  return { principal, config: runtime };
};

/**
 * An app's client code (`POST /v1/events`): the client key's project, and the end user when a
 * session came with the key. `user` is absent for a caller not signed in.
 */
export interface AppClient {
  project: ProjectRef;
  clientKeyId: string;
  user?: { id: string; email: string };
}

/**
 * The principal an OAuth grant acts as (its props, src/oauth), re-checked on every request, the
 * grant (its provider id), checked against `revoked_oauth_grants` in the same statement, and — for
 * an MCP request, not a refresh — the access token presented (`accessTokenId`, its SHA-256), checked
 * against `revoked_oauth_tokens` there too.
 */
export type OAuthGrantPrincipal =
  | { kind: "end_user"; userId: string; grantId: string; accessTokenId?: string }
  | { kind: "developer"; developerId: string; tokenId: string; grantId: string; accessTokenId?: string };

/** True for a canonical uuid string (ids from URLs are checked before they reach SQL). */
export const isUuid = (value: string): boolean => UUID.test(value);
