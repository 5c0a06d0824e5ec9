/**
 * OAuth grants as the product shows them: a developer lists and revokes the grants of a project
 * (its app MCP's end users and developers), an end user their own. The provider keeps grants per
 * subject; a small index in the same KV (`amba-oauth:project:<project id>:<subject>`) remembers
 * which subjects ever authorized a project, and each listing re-reads the provider, so a grant
 * revoked or expired elsewhere is never shown.
 *
 * Bounded by design: a Worker request may make at most 1,000 KV operations, and an app can have
 * any number of users. So a project's listing is paged over the index (one KV list page of at
 * most 100 subjects, and a bounded share of provider pages per subject, see
 * {@link subjectPages}), and revoking never lists subjects at all: the id a listing hands out
 * names its owner (see {@link grantViewId}), so a revocation reads that one grant record.
 */
import type { GrantSummary, OAuthHelpers } from "@cloudflare/workers-oauth-provider";
import { AppError } from "../errors.ts";
import { badCursor } from "./grant-page.ts";
import { type GrantMetadata, type OAuthEnv, REFRESH_TOKEN_TTL_S, readGrantRecord } from "./server.ts";
import { grantViewId, parseGrantViewId } from "./tokens.ts";

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

/** One page of a project's grants; `next_cursor` is null on the last page. */
export interface GrantPage {
  grants: GrantView[];
  next_cursor: string | null;
}

/** Grants per provider page: one KV list and one KV get each. */
const SUBJECT_PAGE_SIZE = 8;
/** Provider pages read per subject at most (an end user's own listing reads this many). */
const MAX_SUBJECT_PAGES = 10;
/**
 * KV operations the subjects of one listing page may spend together, under the Worker's 1,000 per
 * request with room for the index list and the request's other reads. A full page of
 * `limit` (100) subjects still gets one provider page each (100 × (1 + 8) = 900).
 */
const LISTING_KV_BUDGET = 900;

/**
 * Provider pages each of `subjects` subjects may read within {@link LISTING_KV_BUDGET}: between 1
 * and {@link MAX_SUBJECT_PAGES}. A subject with more grants than its share shows its first ones on
 * that page; asking with a smaller `limit` gives each subject a larger share. Pure.
 */
const subjectPages = (subjects: number): number =>
  Math.max(
    1,
    Math.min(
      MAX_SUBJECT_PAGES,
      Math.floor(LISTING_KV_BUDGET / (Math.max(1, subjects) * (1 + SUBJECT_PAGE_SIZE))),
    ),
  );

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
    id: grantViewId(grant.userId, grant.id),
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

/** A subject's grants, at most `pages` provider pages of them. */
async function subjectGrants(oauth: OAuthHelpers, subject: string, pages: number): Promise<GrantSummary[]> {
  const out: GrantSummary[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < pages; page++) {
    const result = await oauth.listUserGrants(subject, { limit: SUBJECT_PAGE_SIZE, cursor });
    out.push(...result.items);
    cursor = result.cursor;
    if (!cursor) break;
  }
  return out;
}

const newestFirst = (a: GrantView, b: GrantView) => b.created_at.localeCompare(a.created_at);

const views = (grants: GrantSummary[]): GrantView[] =>
  grants
    .map(view)
    .filter((g): g is GrantView => g !== null)
    .sort(newestFirst);

/** One KV list page of the subjects that authorized a project; 400 when the store refuses the cursor. */
async function subjectPage(env: OAuthEnv, projectId: string, limit: number, cursor?: string) {
  const prefix = indexPrefix(projectId);
  let page: KVNamespaceListResult<unknown, string>;
  try {
    page = await env.OAUTH_KV.list({ prefix, limit, cursor });
  } catch (err) {
    if (cursor === undefined || err instanceof AppError) throw err;
    throw badCursor();
  }
  return {
    subjects: page.keys.map((key) => key.name.slice(prefix.length)),
    next: page.list_complete ? null : page.cursor,
  };
}

/**
 * One page of the live grants of a project's app MCP: those of at most `limit` subjects (newest
 * first within the page), and the cursor of the next page.
 */
export async function listProjectGrants(
  env: OAuthEnv,
  oauth: OAuthHelpers,
  projectId: string,
  { limit, cursor }: { limit: number; cursor?: string },
): Promise<GrantPage> {
  const { subjects, next } = await subjectPage(env, projectId, limit, cursor);
  const pages = subjectPages(subjects.length);
  const grants = (await Promise.all(subjects.map((s) => subjectGrants(oauth, s, pages)))).flat();
  return {
    grants: views(
      grants.filter((g) => (g.metadata as Partial<GrantMetadata> | null)?.projectId === projectId),
    ),
    next_cursor: next,
  };
}

/** The live grants of one subject (an end user's own), newest first. */
export async function listSubjectGrants(oauth: OAuthHelpers, subject: string): Promise<GrantView[]> {
  return views(await subjectGrants(oauth, subject, subjectPages(1)));
}

/**
 * Ends a grant everywhere: records it as revoked where every location reads it at once, then has
 * the provider delete it from `OAUTH_KV` (`recordingRevoker`, src/oauth/revocation-records.ts).
 */
export type GrantRevoker = (ref: { subject: string; grantId: string }) => Promise<void>;

/**
 * Revoke the grant a listed id names when `owns` accepts its subject and metadata (its tokens stop
 * working at once); false otherwise, alike for a malformed id, no such grant, or someone else's.
 * One KV read plus the revocation: nothing here grows with the number of subjects.
 */
async function revokeListedGrant(
  env: OAuthEnv,
  revoke: GrantRevoker,
  id: string,
  owns: (subject: string, meta: Partial<GrantMetadata>) => boolean,
): Promise<boolean> {
  const ref = parseGrantViewId(id);
  if (!ref) return false;
  const record = await readGrantRecord(env, ref.subject, ref.grantId);
  const meta = record?.metadata as Partial<GrantMetadata> | null | undefined;
  if (!meta || !owns(ref.subject, meta)) return false;
  await revoke(ref);
  return true;
}

/** Revoke one grant of a project by its listed id; false when the project has no such grant. */
export const revokeProjectGrant = (env: OAuthEnv, revoke: GrantRevoker, projectId: string, id: string) =>
  revokeListedGrant(env, revoke, id, (_subject, meta) => meta.projectId === projectId);

/** Revoke one of a subject's grants by its listed id; false when the subject has no such grant. */
export const revokeSubjectGrant = (env: OAuthEnv, revoke: GrantRevoker, subject: string, id: string) =>
  revokeListedGrant(env, revoke, id, (owner) => owner === subject);
