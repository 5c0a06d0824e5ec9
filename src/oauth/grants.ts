/**
 * OAuth grants as the product shows them: a developer lists and revokes the grants of a project
 * (its app MCP's end users and developers), an end user their own. The provider keeps grants per
 * subject; a small index in the same KV (`amba-oauth:project:<project id>:<subject>`) remembers
 * which subjects ever authorized a project, and each listing re-reads the provider, so a grant
 * revoked or expired elsewhere is never shown.
 */
import type { GrantSummary, OAuthHelpers } from "@cloudflare/workers-oauth-provider";
import { type GrantMetadata, type OAuthEnv, REFRESH_TOKEN_TTL_S } from "./server.ts";

/** A grant as listed by the admin and end-user routes and the `amba_oauth_grants_list` tool. */
export interface GrantView {
  id: string;
  client_id: string;
  client_name: string;
  scope: "end_user" | "developer";
  principal_id: string;
  email: string;
  resource: string;
  created_at: string;
  expires_at: string | null;
}

const indexPrefix = (projectId: string) => `amba-oauth:project:${projectId}:`;

/** Remember that `subject` authorized an app MCP of `projectId` (kept as long as a grant can live). */
export function recordProjectSubject(env: OAuthEnv, projectId: string, subject: string): Promise<void> {
  return env.OAUTH_KV.put(`${indexPrefix(projectId)}${subject}`, "1", {
    expirationTtl: REFRESH_TOKEN_TTL_S + 24 * 60 * 60,
  });
}

function view(grant: GrantSummary): GrantView | null {
  const meta = grant.metadata as Partial<GrantMetadata> | null;
  if (!meta || (meta.scope !== "end_user" && meta.scope !== "developer")) return null;
  return {
    id: grant.id,
    client_id: grant.clientId,
    client_name: meta.clientName ?? grant.clientId,
    scope: meta.scope,
    principal_id: meta.principalId ?? "",
    email: meta.email ?? "",
    resource: meta.resource ?? "",
    created_at: new Date(grant.createdAt * 1000).toISOString(),
    expires_at: grant.expiresAt ? new Date(grant.expiresAt * 1000).toISOString() : null,
  };
}

async function subjectGrants(
  oauth: OAuthHelpers,
  subject: string,
): Promise<{ subject: string; grant: GrantSummary }[]> {
  const out: { subject: string; grant: GrantSummary }[] = [];
  let cursor: string | undefined;
  do {
    const page = await oauth.listUserGrants(subject, { cursor });
    for (const grant of page.items) out.push({ subject, grant });
    cursor = page.cursor;
  } while (cursor);
  return out;
}

async function projectSubjects(env: OAuthEnv, projectId: string): Promise<string[]> {
  const prefix = indexPrefix(projectId);
  const subjects: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await env.OAUTH_KV.list({ prefix, cursor });
    for (const key of page.keys) subjects.push(key.name.slice(prefix.length));
    cursor = page.list_complete ? undefined : page.cursor;
  } while (cursor);
  return subjects;
}

async function projectGrants(env: OAuthEnv, oauth: OAuthHelpers, projectId: string) {
  const all = await Promise.all((await projectSubjects(env, projectId)).map((s) => subjectGrants(oauth, s)));
  return all
    .flat()
    .filter(({ grant }) => (grant.metadata as Partial<GrantMetadata> | null)?.projectId === projectId);
}

const newestFirst = (a: GrantView, b: GrantView) => b.created_at.localeCompare(a.created_at);

/** The live grants of a project's app MCP, newest first. */
export async function listProjectGrants(
  env: OAuthEnv,
  oauth: OAuthHelpers,
  projectId: string,
): Promise<GrantView[]> {
  return (await projectGrants(env, oauth, projectId))
    .map(({ grant }) => view(grant))
    .filter((g): g is GrantView => g !== null)
    .sort(newestFirst);
}

/** Revoke one grant of a project (its tokens stop working at once); false when there is no such grant. */
export async function revokeProjectGrant(
  env: OAuthEnv,
  oauth: OAuthHelpers,
  projectId: string,
  grantId: string,
): Promise<boolean> {
  const found = (await projectGrants(env, oauth, projectId)).find(({ grant }) => grant.id === grantId);
  if (!found) return false;
  await oauth.revokeGrant(grantId, found.subject);
  return true;
}

/** The live grants of one subject (an end user's own), newest first. */
export async function listSubjectGrants(oauth: OAuthHelpers, subject: string): Promise<GrantView[]> {
  return (await subjectGrants(oauth, subject))
    .map(({ grant }) => view(grant))
    .filter((g): g is GrantView => g !== null)
    .sort(newestFirst);
}

/** Revoke one of a subject's grants; false when the subject has no such grant. */
export async function revokeSubjectGrant(
  oauth: OAuthHelpers,
  subject: string,
  grantId: string,
): Promise<boolean> {
  const found = (await subjectGrants(oauth, subject)).find(({ grant }) => grant.id === grantId);
  if (!found) return false;
  await oauth.revokeGrant(grantId, subject);
  return true;
}
