/**
 * App-MCP admin: the exposure allowlist and the surface config (kill switch, auth mode, hostname
 * slug, allowed browser origins, caller rate-limit tier, connection URLs) — the operations behind
 * /v1/admin/projects/:id/app-mcp/… and the platform MCP's `amba_app_mcp_*` tools, with their schemas.
 *
 * Connection URL: `${PUBLIC_BASE_URL}/app/<id>/mcp`; when `PUBLIC_BASE_URL` is empty (local
 * development can set it so) the origin of the admin request is used instead. The hostname URL is
 * `<scheme>://<slug>.<APP_MCP_HOST_SUFFIX>[:port]/mcp` (scheme and port of the base URL) once a slug
 * is set, else null.
 */

import { and, eq, inArray, type SQLWrapper, sql } from "drizzle-orm";
import * as v from "valibot";
import {
  appMcpConfigs,
  collections as collectionsTable,
  functions as functionsTable,
} from "../../schema/index.ts";
import { MAX_COLLECTIONS_PER_PROJECT } from "../data/collections.ts";
import { nameProblem } from "../data/columns.ts";
import { arrayLiteral } from "../data/values.ts";
import type { Db } from "../db.ts";
import { isConcurrentChange, isUniqueViolation, pgError, SLUG_RESERVED } from "../db-errors.ts";
import { AppError, invalidInput } from "../errors.ts";
import { FunctionNameSchema } from "../functions/definition.ts";
import { MAX_FUNCTIONS_PER_PROJECT } from "../functions/service.ts";
import type { SigningKeys } from "../functions/signing.ts";
import { bumpMetaRev } from "../meta/rev.ts";
import { slugResource } from "../oauth/resources.ts";
import { RATE_LIMIT_TIERS, type RateLimitTier } from "../rate-limit.ts";
import { parseInput } from "../validate.ts";

/**
 * An exposed name's shape, whatever its kind: a lowercase identifier of at most 63 characters (what
 * Postgres keeps of an identifier). The finer rules of each kind (length, reserved words) are checked
 * by {@link setExposure} on the names that do not exist yet: an existing name is valid by definition.
 */
const ExposedNameSchema = v.pipe(
  v.string(),
  v.minLength(1, "names must not be empty"),
  v.maxLength(63, "must be at most 63 characters"),
  v.regex(/^[a-z][a-z0-9_]*$/, "must be a lowercase identifier (a-z, 0-9, _; starting with a letter)"),
);

/** A list of at most `max` names: as many as a project may hold of that kind. */
const nameList = (max: number, kind: string) =>
  v.pipe(v.array(ExposedNameSchema), v.maxLength(max, `at most ${max} ${kind} names`));

/**
 * `PUT …/app-mcp/exposure`: full-set replacement per kind; an omitted kind stays as it is. Names
 * are an allowlist: one that exists nowhere yet is kept, and becomes a tool once a collection /
 * function of that name exists (decision 6 in docs/contract-audit.md).
 */
export const ExposureSchema = v.strictObject({
  collections: v.optional(nameList(MAX_COLLECTIONS_PER_PROJECT, "collection")),
  functions: v.optional(nameList(MAX_FUNCTIONS_PER_PROJECT, "function")),
});

/**
 * A hostname label: lowercase DNS label, 1-63 characters, and not an internationalised one. A label
 * with "--" in its third and fourth characters is reserved for those (RFC 5891 §4.2.3.1): `xn--…` is
 * shown by browsers and clients as Unicode, so `xn--80ak6aa92e` reads "аррӏе" (Cyrillic) — another
 * app's name in lookalike letters, on the same parent domain as that app's own hostname.
 */
export const SlugSchema = v.pipe(
  v.string(),
  v.maxLength(63, "must be at most 63 characters"),
  v.regex(
    /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/,
    "must be a lowercase DNS label (a-z, 0-9 and inner hyphens, 1-63 characters)",
  ),
  v.check(
    (slug) => slug.slice(2, 4) !== "--",
    'must not have "--" as its third and fourth characters (reserved for internationalised names such as xn--…)',
  ),
);

export const AUTH_MODES = ["all", "client_only", "developer_only"] as const;

/** Which credentials may connect to the app MCP surface. */
export type AuthMode = (typeof AUTH_MODES)[number];

/** A project's app-MCP config as resolved with the credentials (defaults when the row is absent). */
export interface AppMcpSettings {
  enabled: boolean;
  authMode: AuthMode;
  slug: string | null;
  exposedCollections: string[];
  exposedFunctions: string[];
  rateLimitPerMinute: RateLimitTier;
  /**
   * Not app-MCP config: the project's function signing secret and, during a rotation's overlap, the
   * previous one with its expiry (`projects` row), carried here because the credential cache keeps
   * configs per (project, `meta_rev`) and rotating bumps `meta_rev` — so signing a function call
   * costs no round trip. The expiry passes without a new `meta_rev`: users of these keys compare it
   * with their clock (src/functions/signing.ts). No view of this config includes them.
   */
  functionSigning: SigningKeys;
}

/**
 * The part of an app's config the hot routes read on every request, and all the credential cache
 * keeps (src/worker/credential-cache.ts): not the exposure lists (up to 1,000 collection and 100
 * function names, ≈ 70 KB), which only loading the app's surface needs and reads itself
 * (`loadExposure`, src/app-mcp/surface.ts). Weighed with them, a few such apps of one developer,
 * called in turn, pushed every other app's config out of the cache.
 */
export type AppMcpRuntime = Omit<AppMcpSettings, "exposedCollections" | "exposedFunctions">;

/** What an app exposes on its MCP surface. */
export type AppExposure = Pick<AppMcpSettings, "exposedCollections" | "exposedFunctions">;

/** Most browser origins one app may allow. */
export const MAX_ALLOWED_ORIGINS = 20;

/** True when `value` is exactly an origin: http(s) scheme, host, optional port, nothing else. */
export function isExactOrigin(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === "https:" || url.protocol === "http:") && url.origin === value;
  } catch {
    return false;
  }
}

/** One browser origin allowed to call the app MCP (`https://app.example.com`, `http://localhost:5173`). */
export const OriginSchema = v.pipe(
  v.string(),
  v.maxLength(255, "must be at most 255 characters"),
  v.check(
    isExactOrigin,
    "must be an exact origin: http(s)://host[:port] in lowercase, without path, query or trailing slash",
  ),
);

/** The origins list: full replacement, at most {@link MAX_ALLOWED_ORIGINS}. */
export const AllowedOriginsSchema = v.pipe(
  v.array(OriginSchema),
  v.maxLength(MAX_ALLOWED_ORIGINS, `at most ${MAX_ALLOWED_ORIGINS} origins`),
);

/**
 * `PATCH …/app-mcp/config`: any subset; `slug: null` releases the hostname (kept for this project
 * for 30 days: see `releasedSlugs` in schema/index.ts).
 */
export const ConfigPatchSchema = v.strictObject({
  enabled: v.optional(v.boolean()),
  auth_mode: v.optional(v.picklist(AUTH_MODES, `must be one of ${AUTH_MODES.join(", ")}`)),
  slug: v.optional(v.nullable(SlugSchema)),
  allowed_origins: v.optional(AllowedOriginsSchema),
  rate_limit_per_minute: v.optional(
    v.picklist(
      RATE_LIMIT_TIERS,
      `must be one of ${RATE_LIMIT_TIERS.join(", ")} (calls per minute and caller)`,
    ),
  ),
});

const dedupe = (names: string[]) => [...new Set(names)];

/** What connection URLs are built from: the public base URL (or the request's origin) and the host suffix. */
export interface ConnectionBase {
  baseUrl: string;
  hostSuffix: string;
}

/** The connection base of a request: `PUBLIC_BASE_URL`, or the request's origin when that is empty. */
export function connectionBase(
  env: { PUBLIC_BASE_URL: string; APP_MCP_HOST_SUFFIX: string },
  requestUrl: string,
): ConnectionBase {
  return {
    baseUrl: (env.PUBLIC_BASE_URL || new URL(requestUrl).origin).replace(/\/+$/, ""),
    hostSuffix: env.APP_MCP_HOST_SUFFIX,
  };
}

/** The app-MCP config as `GET …/app-mcp/config` answers it, with the connection URLs. */
export interface AppMcpConfigView {
  enabled: boolean;
  auth_mode: AppMcpSettings["authMode"];
  slug: string | null;
  allowed_origins: string[];
  rate_limit_per_minute: RateLimitTier;
  connection: { url: string; hostname_url: string | null };
}

/** The config view of a project's settings (pure). */
export function appMcpConfigView(
  base: ConnectionBase,
  projectId: string,
  config: Pick<AppMcpSettings, "enabled" | "authMode" | "slug" | "rateLimitPerMinute">,
  allowedOrigins: string[] = [],
): AppMcpConfigView {
  return {
    enabled: config.enabled,
    auth_mode: config.authMode,
    slug: config.slug,
    allowed_origins: allowedOrigins,
    rate_limit_per_minute: config.rateLimitPerMinute,
    connection: {
      url: `${base.baseUrl}/app/${projectId}/mcp`,
      // `https://<slug>.mcp.amba.host/mcp` in production, `http://<slug>.mcp.localhost:8787/mcp` under
      // `npm run dev`: the OAuth resource of that endpoint, spelled the same way.
      hostname_url:
        config.slug && base.hostSuffix ? slugResource(config.slug, base.hostSuffix, base.baseUrl) : null,
    },
  };
}

/** The browser origins a project allows (empty when it has no config row). */
export async function allowedOriginsOf(db: Db, projectId: string): Promise<string[]> {
  const [row] = await db
    .select({ origins: appMcpConfigs.allowedOrigins })
    .from(appMcpConfigs)
    .where(eq(appMcpConfigs.projectId, projectId));
  return row?.origins ?? [];
}

/** `GET …/app-mcp/config`: the view of `config` plus the stored origins. */
export async function readAppMcpConfig(
  db: Db,
  base: ConnectionBase,
  projectId: string,
  config: AppMcpSettings,
): Promise<AppMcpConfigView> {
  return appMcpConfigView(base, projectId, config, await allowedOriginsOf(db, projectId));
}

/** The exposure allowlist as `GET …/app-mcp/exposure` answers it. */
export interface ExposureView {
  collections: string[];
  functions: string[];
  /**
   * The exposed names no collection / function has yet (in list order), only when there are any:
   * they are no tools until one of that name is created or deployed. Shown so a typo stays visible.
   */
  pending?: { collections: string[]; functions: string[] };
}

/** The view of an allowlist and its missing names (pure). */
export function exposureView(
  collections: string[],
  functions: string[],
  pending: { collections: string[]; functions: string[] },
): ExposureView {
  const somePending = pending.collections.length > 0 || pending.functions.length > 0;
  return { collections, functions, ...(somePending ? { pending } : {}) };
}

/**
 * The names of `names` (a `text[]` expression) no row of `table` in the project has, in list order,
 * as a JSON array.
 */
const missingNames = (
  names: SQLWrapper,
  table: typeof collectionsTable | typeof functionsTable,
  projectId: string,
) =>
  sql<string[]>`to_jsonb(ARRAY(SELECT u.name FROM unnest(${names}) WITH ORDINALITY AS u(name, i)
    WHERE NOT EXISTS (SELECT 1 FROM ${table} t WHERE t.project_id = ${projectId}::uuid AND t.name = u.name)
    ORDER BY u.i))`;

const textArray = (names: string[]) => sql`${arrayLiteral(names)}::text[]`;

/**
 * `GET …/app-mcp/exposure`: the project's allowlist (`config`, as resolved with the credentials) with
 * its pending names; no query when nothing is exposed.
 */
export async function readExposure(db: Db, projectId: string, config: AppExposure): Promise<ExposureView> {
  const { exposedCollections: collections, exposedFunctions: functions } = config;
  if (!collections.length && !functions.length)
    return exposureView([], [], { collections: [], functions: [] });
  const { rows } = await db.execute(sql`SELECT
    ${missingNames(textArray(collections), collectionsTable, projectId)} AS collections,
    ${missingNames(textArray(functions), functionsTable, projectId)} AS functions`);
  const pending = rows[0] as { collections: string[]; functions: string[] };
  return exposureView(collections, functions, pending);
}

/**
 * Why each name of `names` that no collection / function of the project has cannot be one, as
 * `<kind>.<index>: <problem>` (index in the request's list); empty when every name is fine. The
 * database is asked only when some name breaks a rule: an existing name is valid by definition (a
 * rule added later does not lock it out).
 */
async function invalidNames(
  db: Db,
  projectId: string,
  collections: string[] | undefined,
  functions: string[] | undefined,
): Promise<string[]> {
  const functionProblem = (name: string) => {
    const result = v.safeParse(FunctionNameSchema, name);
    return result.success ? null : `function name ${result.issues[0].message}`;
  };
  const problems = (kind: "collections" | "functions", names: string[] | undefined) =>
    (names ?? []).flatMap((name, index) => {
      const problem = kind === "collections" ? nameProblem(name, "collection") : functionProblem(name);
      return problem ? [{ kind, index, name, problem }] : [];
    });
  const suspects = [...problems("collections", collections), ...problems("functions", functions)];
  if (!suspects.length) return [];
  const names = (kind: string) => suspects.filter((s) => s.kind === kind).map((s) => s.name);
  const [knownCollections, knownFunctions] = await db.batch([
    db
      .select({ name: collectionsTable.name })
      .from(collectionsTable)
      .where(
        and(eq(collectionsTable.projectId, projectId), inArray(collectionsTable.name, names("collections"))),
      ),
    db
      .select({ name: functionsTable.name })
      .from(functionsTable)
      .where(and(eq(functionsTable.projectId, projectId), inArray(functionsTable.name, names("functions")))),
  ]);
  const known = new Set([
    ...knownCollections.map((r) => `collections:${r.name}`),
    ...knownFunctions.map((r) => `functions:${r.name}`),
  ]);
  return suspects
    .filter((s) => !known.has(`${s.kind}:${s.name}`))
    .map((s) => `${s.kind}.${s.index}: ${s.problem}`);
}

/**
 * Replace the exposure allowlist per kind (`PUT …/app-mcp/exposure`): the names as given (duplicates
 * once), whether or not a collection / function of that name exists yet — a missing one is reported
 * under `pending` and becomes a tool once it exists (creating or deploying it bumps `meta_rev`, so
 * the next `tools/list` has it). A name that could never be one (bad syntax, too long, reserved) is
 * a 400 listing them, nothing changed. One batch with the `meta_rev` bump; the pending names are
 * read in the same statement as the write. `current` is the project's config as resolved with the
 * credentials (answered as-is when no kind is given).
 */
export async function setExposure(
  db: Db,
  projectId: string,
  current: AppMcpSettings,
  input: unknown,
): Promise<ExposureView> {
  const body = parseInput(ExposureSchema, input);
  if (!body.collections && !body.functions) return readExposure(db, projectId, current);
  const problems = await invalidNames(db, projectId, body.collections, body.functions);
  if (problems.length) {
    const more = problems.length > 5 ? `; and ${problems.length - 5} more` : "";
    throw invalidInput(`${problems.slice(0, 5).join("; ")}${more}`);
  }
  const collections = body.collections && dedupe(body.collections);
  const functions = body.functions && dedupe(body.functions);

  const set = {
    ...(collections ? { exposedCollections: collections } : {}),
    ...(functions ? { exposedFunctions: functions } : {}),
    updatedAt: sql`now()`,
  };
  const [rows] = await db.batch([
    db
      .insert(appMcpConfigs)
      .values({ projectId, ...set })
      .onConflictDoUpdate({ target: appMcpConfigs.projectId, set })
      .returning({
        collections: appMcpConfigs.exposedCollections,
        functions: appMcpConfigs.exposedFunctions,
        pendingCollections: missingNames(appMcpConfigs.exposedCollections, collectionsTable, projectId),
        pendingFunctions: missingNames(appMcpConfigs.exposedFunctions, functionsTable, projectId),
      }),
    bumpMetaRev(db, projectId),
  ]);
  const row = rows[0] as {
    collections: string[];
    functions: string[];
    pendingCollections: string[];
    pendingFunctions: string[];
  };
  return exposureView(row.collections, row.functions, {
    collections: row.pendingCollections,
    functions: row.pendingFunctions,
  });
}

/**
 * Patch the config (`PATCH …/app-mcp/config`): any subset of enabled / auth_mode / slug /
 * allowed_origins (full replacement) / rate_limit_per_minute; 409 when the slug is taken, or was
 * released by another developer less than 30 days ago (the database's slug cooldown trigger, see
 * `releasedSlugs` in schema/index.ts, which also records the slug this change releases). One batch
 * with the `meta_rev` bump.
 */
export async function updateAppMcpConfig(
  db: Db,
  base: ConnectionBase,
  projectId: string,
  input: unknown,
): Promise<AppMcpConfigView> {
  const patch = parseInput(ConfigPatchSchema, input);
  const set = {
    ...(patch.enabled !== undefined ? { enabled: patch.enabled } : {}),
    ...(patch.auth_mode !== undefined ? { authMode: patch.auth_mode } : {}),
    ...(patch.slug !== undefined ? { slug: patch.slug } : {}),
    ...(patch.allowed_origins !== undefined ? { allowedOrigins: [...new Set(patch.allowed_origins)] } : {}),
    ...(patch.rate_limit_per_minute !== undefined ? { rateLimitPerMinute: patch.rate_limit_per_minute } : {}),
    updatedAt: sql`now()`,
  };
  type Stored = {
    enabled: boolean;
    authMode: string;
    slug: string | null;
    allowedOrigins: string[];
    rateLimitPerMinute: number;
  };
  let rows: Stored[];
  try {
    [rows] = await db.batch([
      db
        .insert(appMcpConfigs)
        .values({ projectId, ...set })
        .onConflictDoUpdate({ target: appMcpConfigs.projectId, set })
        .returning({
          enabled: appMcpConfigs.enabled,
          authMode: appMcpConfigs.authMode,
          slug: appMcpConfigs.slug,
          allowedOrigins: appMcpConfigs.allowedOrigins,
          rateLimitPerMinute: appMcpConfigs.rateLimitPerMinute,
        }),
      bumpMetaRev(db, projectId),
    ]);
  } catch (err) {
    if (isUniqueViolation(err, "app_mcp_configs_slug_unique")) {
      throw new AppError(409, "conflict", `slug "${patch.slug}" is already taken`);
    }
    const pg = pgError(err);
    if (pg?.code === SLUG_RESERVED) {
      throw new AppError(
        409,
        "conflict",
        `slug "${patch.slug}" was released recently by another developer and is reserved until ${pg.detail}`,
      );
    }
    // Two projects trading slugs at once wait on each other's slug (lock or unique index): Postgres
    // breaks the deadlock by failing one, whose change would have been refused as taken anyway.
    if (isConcurrentChange(err)) {
      throw new AppError(409, "conflict", `slug "${patch.slug}" changed concurrently; retry`);
    }
    throw err;
  }
  const row = rows[0] as Stored;
  const settings = {
    enabled: row.enabled,
    authMode: row.authMode as AppMcpSettings["authMode"],
    slug: row.slug,
    rateLimitPerMinute: row.rateLimitPerMinute as RateLimitTier,
  };
  return appMcpConfigView(base, projectId, settings, row.allowedOrigins);
}
