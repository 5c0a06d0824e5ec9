/**
 * The functions service: deploy / list / versions / promote / delete against Postgres (each change
 * one `db.batch` with the `meta_rev` bump), `loadFunctions` for the app-MCP tool generator, and
 * `invokeFunction` — the ONE execution path the REST invoke route and the `<app>_fn_<name>` tool
 * both call (scope check, argument validation, rate limit, upstream call, metering). A function may
 * exist without a URL (seed 004's metadata deployed as written): it is listed and a tool, and its
 * invocation is a 409 `function_not_deployed` until a deploy gives it one.
 */

import { and, asc, eq, type SQL, sql } from "drizzle-orm";
import { functions, functionVersions, projects } from "../../schema/index.ts";
import type { Db } from "../db.ts";
import { isUniqueViolation } from "../db-errors.ts";
import { AppError, forbidden, notFound, quotaExceeded } from "../errors.ts";
import { bumpMetaRev } from "../meta/rev.ts";
import type { Limiter } from "../rate-limit.ts";
import type { Meter } from "../usage/metering.ts";
import { parseInput } from "../validate.ts";
import {
  checkAnnotation,
  DeployFunctionSchema,
  type FunctionMeta,
  type McpAnnotation,
  PromoteFunctionSchema,
  RotateSigningSecretSchema,
} from "./definition.ts";
import { buildUpstreamRequest, type CallOptions, callUpstream, type UpstreamResult } from "./invoke.ts";
import { checkFunctionUrl, type FunctionUrlPolicy } from "./outbound-policy.ts";
import {
  type SigningKeys,
  type SigningSecretView,
  signingKeysFrom,
  signingSecretView,
  signUpstreamRequest,
} from "./signing.ts";

/** A function version as the admin API returns it. */
export interface FunctionVersionView {
  name: string;
  version: number;
  /** Null for a version deployed without a URL (while the function had none). */
  url: string | null;
  active: boolean;
  mcp: McpAnnotation | null;
  created_at: string;
}

/** A function with its active version, as `GET …/functions` lists it. */
export interface FunctionView extends FunctionVersionView {
  active_version: number;
  versions: number;
}

const iso = (value: unknown) =>
  value instanceof Date ? value.toISOString() : new Date(String(value)).toISOString();

const DEPLOY_ATTEMPTS = 3;

/**
 * Most functions one project may hold: a deploy of a new name past it is a 403 `quota_exceeded`
 * (redeploying an existing one is not). Checked before the deploy's batch, like the collections
 * quota: concurrent deploys of new names may end a few over, never unboundedly.
 */
export const MAX_FUNCTIONS_PER_PROJECT = 100;

/**
 * Versions kept per function: a deploy removes the ones older than its newest `FUNCTION_VERSIONS_KEPT`
 * (the new one, active, among them), in the deploy's transaction. A cap that refused the deploy
 * instead would lock out a pipeline that deploys on every commit, with no way out but deleting the
 * function (there is no per-version delete); rolling back needs the recent versions, not the 500th.
 */
export const FUNCTION_VERSIONS_KEPT = 20;

/** 403 when deploying `name` would add a function to a project that holds the most it may. */
async function checkFunctionQuota(db: Db, projectId: string, name: string): Promise<void> {
  const { rows } = await db.execute(sql`
    select count(*)::int as n, bool_or(name = ${name}) as redeploy
    from functions where project_id = ${projectId}`);
  const { n, redeploy } = rows[0] as { n: number | string; redeploy: boolean | null };
  if (!redeploy && Number(n) >= MAX_FUNCTIONS_PER_PROJECT) {
    throw quotaExceeded(
      `a project holds at most ${MAX_FUNCTIONS_PER_PROJECT} functions; delete one before deploying another`,
    );
  }
}

interface VersionRow {
  version: number | string;
  url: string | null;
  mcp: McpAnnotation | null;
  created_at: string | Date;
}

/**
 * Deploy a new version (1, 2, …) of a function and make it active, in one transaction with the
 * `meta_rev` bump; versions past the newest {@link FUNCTION_VERSIONS_KEPT} are removed in it, and a
 * new name past {@link MAX_FUNCTIONS_PER_PROJECT} is a 403 `quota_exceeded`. The body is checked
 * here: `DeployFunctionSchema`, the MCP annotation's input schema (`checkAnnotation`), the URL
 * against the outbound `policy` (400 `invalid_url`). Without a `url` the version keeps the active
 * version's, or has none on a first deploy (the function cannot run until one is deployed). Concurrent
 * deploys of the same name queue on the function's row and number their versions after it; a
 * collision on the version number is still retried, as a guard.
 */
export async function deployFunction(
  db: Db,
  projectId: string,
  body: unknown,
  policy: FunctionUrlPolicy,
): Promise<FunctionVersionView> {
  const input = parseInput(DeployFunctionSchema, body);
  const mcp = checkAnnotation(input.mcp);
  const url = input.url ?? (await activeUrl(db, projectId, input.name));
  if (url !== null) checkFunctionUrl(url, policy);
  await checkFunctionQuota(db, projectId, input.name);
  for (let attempt = 1; ; attempt++) {
    try {
      const [, , inserted] = await db.batch([
        db
          .insert(functions)
          .values({ projectId, name: input.name, activeVersion: 1 })
          // An existing function: a no-op update, only to take its row lock.
          .onConflictDoUpdate({
            target: [functions.projectId, functions.name],
            set: { activeVersion: sql`${functions.activeVersion}` },
          }),
        // The version is numbered here, with the row lock held: this statement (a fresh snapshot)
        // sees every version committed by the deploys that held the lock before. Numbered inside the
        // upsert, it would use the snapshot from before the wait, and concurrent deploys collided.
        db.execute(sql`
          update functions f set active_version = (
            select coalesce(max(v.version), 0) + 1 from function_versions v where v.function_id = f.id)
          where f.project_id = ${projectId} and f.name = ${input.name}`),
        db.execute<VersionRow & Record<string, unknown>>(sql`
          insert into function_versions (function_id, version, url, mcp)
          select f.id, f.active_version, ${url}, ${mcp === null ? null : JSON.stringify(mcp)}::jsonb
          from functions f where f.project_id = ${projectId} and f.name = ${input.name}
          returning version, url, mcp, created_at`),
        // The new version is the newest (the function's row lock is held): keep it and the ones before
        // it up to FUNCTION_VERSIONS_KEPT.
        db.execute(sql`
          delete from function_versions v using functions f
          where v.function_id = f.id and f.project_id = ${projectId} and f.name = ${input.name}
            and v.version <= f.active_version - ${FUNCTION_VERSIONS_KEPT}`),
        bumpMetaRev(db, projectId),
      ]);
      const row = inserted.rows[0] as unknown as VersionRow;
      return versionView(input.name, row, true);
    } catch (err) {
      if (attempt < DEPLOY_ATTEMPTS && isUniqueViolation(err)) continue;
      if (isUniqueViolation(err))
        throw new AppError(409, "conflict", "concurrent deploys of this function; retry");
      throw err;
    }
  }
}

/**
 * The URL of `name`'s active version, for a deploy without one (a new annotation for the same
 * endpoint); null when the function does not exist yet or its active version has no URL.
 */
async function activeUrl(db: Db, projectId: string, name: string): Promise<string | null> {
  const { rows } = await db.execute(sql`
    select v.url from functions f
    join function_versions v on v.function_id = f.id and v.version = f.active_version
    where f.project_id = ${projectId} and f.name = ${name}`);
  return (rows[0] as { url: string | null } | undefined)?.url ?? null;
}

function versionView(name: string, row: VersionRow, active: boolean): FunctionVersionView {
  return {
    name,
    version: Number(row.version),
    url: row.url,
    active,
    mcp: row.mcp ?? null,
    created_at: iso(row.created_at),
  };
}

/** Every function of a project with its active version, by name. */
export async function listFunctions(db: Db, projectId: string): Promise<FunctionView[]> {
  const result = await db.execute(sql`
    select f.name, f.active_version as version, v.url, v.mcp, v.created_at,
      (select count(*) from function_versions c where c.function_id = f.id) as versions
    from functions f
    join function_versions v on v.function_id = f.id and v.version = f.active_version
    where f.project_id = ${projectId}
    order by f.name`);
  return (result.rows as unknown as Array<VersionRow & { name: string; versions: string | number }>).map(
    (row) => ({
      ...versionView(row.name, row, true),
      active_version: Number(row.version),
      versions: Number(row.versions),
    }),
  );
}

/** All versions of one function, oldest first (404 when the function does not exist). */
export async function listVersions(db: Db, projectId: string, name: string): Promise<FunctionVersionView[]> {
  const rows = await db
    .select({
      version: functionVersions.version,
      url: functionVersions.url,
      mcp: functionVersions.mcp,
      created_at: functionVersions.createdAt,
      activeVersion: functions.activeVersion,
    })
    .from(functionVersions)
    .innerJoin(functions, eq(functions.id, functionVersions.functionId))
    .where(and(eq(functions.projectId, projectId), eq(functions.name, name)))
    .orderBy(asc(functionVersions.version));
  if (rows.length === 0) throw notFound(`function "${name}" not found`);
  return rows.map((row) =>
    versionView(name, { ...row, mcp: row.mcp as McpAnnotation | null }, row.version === row.activeVersion),
  );
}

/**
 * Make a version (`PromoteFunctionSchema`: `{version}`) the active one; its URL and MCP annotation
 * come back with it. One transaction with the `meta_rev` bump. 404 when the function or the version
 * does not exist.
 */
export async function promoteFunction(
  db: Db,
  projectId: string,
  name: string,
  body: unknown,
): Promise<FunctionVersionView> {
  const { version } = parseInput(PromoteFunctionSchema, body);
  const [updated, selected] = await db.batch([
    db.execute(sql`
      update functions f set active_version = ${version}
      where f.project_id = ${projectId} and f.name = ${name}
        and exists (select 1 from function_versions v where v.function_id = f.id and v.version = ${version})
      returning f.id`),
    db.execute(sql`
      select v.version, v.url, v.mcp, v.created_at
      from function_versions v join functions f on f.id = v.function_id
      where f.project_id = ${projectId} and f.name = ${name} and v.version = ${version}`),
    bumpMetaRev(db, projectId),
  ]);
  const row = selected.rows[0] as unknown as VersionRow | undefined;
  if (updated.rows.length === 0 || !row) {
    const exists = await db
      .select({ id: functions.id })
      .from(functions)
      .where(and(eq(functions.projectId, projectId), eq(functions.name, name)));
    throw notFound(
      exists.length === 0 ? `function "${name}" not found` : `function "${name}" has no version ${version}`,
    );
  }
  return versionView(name, row, true);
}

/**
 * Delete a function with all its versions, and take it off the app-MCP exposure list — one
 * transaction with the `meta_rev` bump. 404 when it does not exist.
 */
export async function deleteFunction(
  db: Db,
  projectId: string,
  name: string,
): Promise<{ name: string; deleted: true }> {
  const [deleted] = await db.batch([
    db
      .delete(functions)
      .where(and(eq(functions.projectId, projectId), eq(functions.name, name)))
      .returning({ id: functions.id }),
    db.execute(sql`
      update app_mcp_configs set exposed_functions = array_remove(exposed_functions, ${name}), updated_at = now()
      where project_id = ${projectId} and ${name} = any(exposed_functions)`),
    bumpMetaRev(db, projectId),
  ]);
  if (deleted.length === 0) throw notFound(`function "${name}" not found`);
  return { name, deleted: true };
}

const metaFrom = (row: {
  name: string;
  version: number | string;
  url: string | null;
  mcp: unknown;
}): FunctionMeta => ({
  name: row.name,
  version: Number(row.version),
  url: row.url,
  mcp: (row.mcp as McpAnnotation | null) ?? null,
});

/** Active versions (name, version, url, annotation) of the functions matching `where`. */
const activeVersions = (db: Db, where: SQL | undefined) =>
  db
    .select({
      name: functions.name,
      version: functions.activeVersion,
      url: functionVersions.url,
      mcp: functionVersions.mcp,
    })
    .from(functions)
    .innerJoin(
      functionVersions,
      and(
        eq(functionVersions.functionId, functions.id),
        eq(functionVersions.version, functions.activeVersion),
      ),
    )
    .where(where);

/** The active version of every function of a project, with its MCP annotation (for tool generation). */
export async function loadFunctions(db: Db, projectId: string): Promise<FunctionMeta[]> {
  const rows = await activeVersions(db, eq(functions.projectId, projectId)).orderBy(asc(functions.name));
  return rows.map(metaFrom);
}

/** The active version of one function (404 when it does not exist). */
export async function loadFunction(db: Db, projectId: string, name: string): Promise<FunctionMeta> {
  const rows = await activeVersions(db, and(eq(functions.projectId, projectId), eq(functions.name, name)));
  const row = rows[0];
  if (!row) throw notFound(`function "${name}" not found`);
  return metaFrom(row);
}

/**
 * Replace the project's function signing secret with a fresh random one (the column's default,
 * schema/index.ts) and return it. `body` (`RotateSigningSecretSchema`, optional) may keep the
 * replaced secret signed with for `previous_valid_for_seconds` more, so deployed functions verify
 * while their owner rolls the new one out; 0 (the default) stops it at once, for a leak. Only one
 * previous secret is kept: rotating again within an overlap replaces it with the secret being
 * replaced now (and 0 drops it). Bumps `meta_rev` in the same statement: the credential cache keeps
 * the keys with the config of one (project, `meta_rev`), so every isolate signs with the new keys
 * once its cached resolution is dropped or expires (README "Decisions"). The expiry is the
 * database's clock, compared with the Worker's when signing. Secrets are never logged; only this and
 * the read endpoint answer the current one, and none answers the previous one.
 */
export async function rotateSigningSecret(
  db: Db,
  projectId: string,
  body: unknown,
): Promise<SigningSecretView> {
  const { previous_valid_for_seconds: seconds } = parseInput(RotateSigningSecretSchema, body);
  const keep = seconds > 0;
  const rows = await db
    .update(projects)
    .set({
      // The right-hand sides read the row as it was: the previous secret is the one being replaced.
      previousSigningSecret: keep ? sql`${projects.functionSigningSecret}` : null,
      previousSigningSecretExpiresAt: keep ? sql`now() + make_interval(secs => ${seconds})` : null,
      functionSigningSecret: sql`default`,
      metaRev: sql`${projects.metaRev} + 1`,
    })
    .where(eq(projects.id, projectId))
    .returning({
      secret: projects.functionSigningSecret,
      previous: projects.previousSigningSecret,
      expiresAt: projects.previousSigningSecretExpiresAt,
    });
  const row = rows[0];
  if (!row) throw notFound("project not found");
  return signingSecretView(signingKeysFrom(row.secret, row.previous, row.expiresAt?.getTime() ?? null));
}

/** Who invokes a function: only an end user (through a client key) may; any other scope is refused. */
export type FunctionCaller =
  | { scope: "developer" }
  | { scope: "end_user"; project: { id: string }; user: { id: string; email: string }; clientKeyId: string };

/**
 * What an invocation needs from its host: the outbound URL policy, the rate limiter, the meter and
 * the project's function signing keys (from its cached credential resolution: no round trip).
 */
export interface InvokePorts {
  policy: FunctionUrlPolicy;
  limit: Limiter;
  meter: Meter;
  signing: SigningKeys;
}

/** Options of one invocation (tests and callers with an execution context). */
export interface InvokeOptions extends CallOptions {
  /** Correlates the call across logs and the upstream; a fresh uuid by default. */
  requestId?: string;
}

/** What an invocation returns: the upstream status and body, and the request id it carried. */
export interface InvokeResult extends UpstreamResult {
  requestId: string;
}

/**
 * 409 `function_not_deployed`: the function's active version has no URL (deployed from its metadata
 * alone), so there is nothing to call until a deploy gives it one.
 */
export const functionNotDeployed = (name: string) =>
  new AppError(
    409,
    "function_not_deployed",
    `function "${name}" has no URL yet: deploy it with a url (amba functions deploy ${name} --url <https://…>, or POST /v1/admin/projects/:id/functions/deploy {"name", "url"}) before calling it`,
  );

/**
 * Invoke a function's active version for an end user — the one execution path. In order:
 * end-user scope only (403 otherwise); a function with no URL yet is a 409 `function_not_deployed`
 * (nothing is called, limited or metered); the stored URL checked against the outbound `policy`
 * (400 `invalid_url`); arguments validated against the declared input schema, or
 * the generic `{body?, query?}` (400 naming the field); `limit` keyed by client key + user (429);
 * the upstream POST with identity headers, signed (`x-amba-signature`, ./signing.ts), and never the
 * caller's credentials (504 on timeout, 502 when unreachable). A 2xx answer is metered as one
 * `function_invocations`. Non-2xx upstream answers are returned, not thrown.
 */
export async function invokeFunction(
  { policy, limit, meter, signing }: InvokePorts,
  caller: FunctionCaller,
  fn: FunctionMeta,
  input: unknown,
  options: InvokeOptions = {},
): Promise<InvokeResult> {
  if (caller.scope !== "end_user") {
    throw forbidden("functions run on the end-user scope: send X-Api-Key and an end-user session Bearer");
  }
  const { url } = fn;
  if (url === null) throw functionNotDeployed(fn.name);
  checkFunctionUrl(url, policy);
  const requestId = options.requestId ?? crypto.randomUUID();
  const request = buildUpstreamRequest(
    { ...fn, url },
    {
      projectId: caller.project.id,
      userId: caller.user.id,
      userEmail: caller.user.email,
      requestId,
    },
    input,
  );
  await limit(`fn:${caller.clientKeyId}:${caller.user.id}`, "this client key and user");
  // Signed last, so the timestamp is the moment of sending.
  const result = await callUpstream(await signUpstreamRequest(request, signing), options);
  if (result.status >= 200 && result.status < 300) meter(caller.project.id, "function_invocations");
  return { ...result, requestId };
}
