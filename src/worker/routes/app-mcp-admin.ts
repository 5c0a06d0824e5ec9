/**
 * App-MCP admin under /v1/admin/projects/:id/…: the exposure allowlist, the surface config
 * (kill switch, auth mode, hostname slug, connection URLs) and billing usage.
 *
 * Connection URL: `${PUBLIC_BASE_URL}/app/<id>/mcp`; when `PUBLIC_BASE_URL` is empty (local
 * development can set it so) the origin of the admin request is used instead. The hostname URL is
 * `https://<slug>.<APP_MCP_HOST_SUFFIX>/mcp` once a slug is set, else null.
 *
 * The operations are exported as plain functions (input `unknown`, validated inside) returning the
 * wire shapes, so the platform MCP's `amba_app_mcp_*` / `amba_billing_status` tools answer exactly
 * what these routes answer — same validation, same errors, same `meta_rev` bumps.
 */

import { and, eq, inArray, sql } from "drizzle-orm";
import { Hono } from "hono";
import * as v from "valibot";
import {
  appMcpConfigs,
  collections as collectionsTable,
  functions as functionsTable,
} from "../../../schema/index.ts";
import { arrayLiteral } from "../../data/values.ts";
import { isUniqueViolation } from "../../db-errors.ts";
import { AppError, invalidInput } from "../../errors.ts";
import { parseInput } from "../../validate.ts";
import { type AppMcpSettings, authenticateProjectAdmin } from "../auth.ts";
import type { Db } from "../db.ts";
import type { Env } from "../env.ts";
import type { AppEnv } from "../hono.ts";
import { bumpMetaRev } from "../meta.ts";
import { jsonBody } from "../request.ts";
import { usageFor } from "../usage.ts";

/** Most names one exposure list may hold. */
const MAX_EXPOSED = 1000;

const NameListSchema = v.pipe(
  v.array(v.pipe(v.string(), v.minLength(1, "names must not be empty"))),
  v.maxLength(MAX_EXPOSED, `at most ${MAX_EXPOSED} names`),
);

/** `PUT …/app-mcp/exposure`: full-set replacement per kind; an omitted kind stays as it is. */
export const ExposureSchema = v.strictObject({
  collections: v.optional(NameListSchema),
  functions: v.optional(NameListSchema),
});

/** A hostname label: lowercase DNS label, 1-63 characters. */
export const SlugSchema = v.pipe(
  v.string(),
  v.maxLength(63, "must be at most 63 characters"),
  v.regex(
    /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/,
    "must be a lowercase DNS label (a-z, 0-9 and inner hyphens, 1-63 characters)",
  ),
);

export const AUTH_MODES = ["all", "client_only", "developer_only"] as const;

/** `PATCH …/app-mcp/config`: any subset; `slug: null` releases the hostname. */
export const ConfigPatchSchema = v.strictObject({
  enabled: v.optional(v.boolean()),
  auth_mode: v.optional(v.picklist(AUTH_MODES, `must be one of ${AUTH_MODES.join(", ")}`)),
  slug: v.optional(v.nullable(SlugSchema)),
});

/** `GET …/billing?period=YYYY-MM` (default: the current UTC month). */
const PeriodSchema = v.pipe(v.string(), v.regex(/^\d{4}-(0[1-9]|1[0-2])$/, "period must be YYYY-MM"));

const dedupe = (names: string[]) => [...new Set(names)];

/** What connection URLs are built from: the public base URL (or the request's origin) and the host suffix. */
export interface ConnectionBase {
  baseUrl: string;
  hostSuffix: string;
}

/** The connection base of a request: `PUBLIC_BASE_URL`, or the request's origin when that is empty. */
export function connectionBase(
  env: Pick<Env, "PUBLIC_BASE_URL" | "APP_MCP_HOST_SUFFIX">,
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
  connection: { url: string; hostname_url: string | null };
}

/** The config view of a project's settings (pure). */
export function appMcpConfigView(
  base: ConnectionBase,
  projectId: string,
  config: Pick<AppMcpSettings, "enabled" | "authMode" | "slug">,
): AppMcpConfigView {
  return {
    enabled: config.enabled,
    auth_mode: config.authMode,
    slug: config.slug,
    connection: {
      url: `${base.baseUrl}/app/${projectId}/mcp`,
      hostname_url: config.slug && base.hostSuffix ? `https://${config.slug}.${base.hostSuffix}/mcp` : null,
    },
  };
}

/** The exposure allowlist as `GET …/app-mcp/exposure` answers it. */
export interface ExposureView {
  collections: string[];
  functions: string[];
}

/** The exposure view of a project's settings (pure). */
export const exposureView = (config: AppMcpSettings): ExposureView => ({
  collections: config.exposedCollections,
  functions: config.exposedFunctions,
});

/**
 * Replace the exposure allowlist per kind (`PUT …/app-mcp/exposure`): every name must exist (400
 * listing the unknown ones, nothing changed); one batch with the `meta_rev` bump. `current` is the
 * project's config as resolved with the credentials (answered as-is when no kind is given).
 */
export async function setExposure(
  db: Db,
  projectId: string,
  current: AppMcpSettings,
  input: unknown,
): Promise<ExposureView> {
  const body = parseInput(ExposureSchema, input);
  const collections = body.collections && dedupe(body.collections);
  const functions = body.functions && dedupe(body.functions);
  if (!collections && !functions) return exposureView(current);

  const [knownCollections, knownFunctions] = await db.batch([
    db
      .select({ name: collectionsTable.name })
      .from(collectionsTable)
      .where(
        and(eq(collectionsTable.projectId, projectId), inArray(collectionsTable.name, collections ?? [])),
      ),
    db
      .select({ name: functionsTable.name })
      .from(functionsTable)
      .where(and(eq(functionsTable.projectId, projectId), inArray(functionsTable.name, functions ?? []))),
  ]);
  const found = new Set([
    ...knownCollections.map((r) => `collection:${r.name}`),
    ...knownFunctions.map((r) => `function:${r.name}`),
  ]);
  const unknownCollections = (collections ?? []).filter((name) => !found.has(`collection:${name}`));
  const unknownFunctions = (functions ?? []).filter((name) => !found.has(`function:${name}`));
  const problems = [
    unknownCollections.length ? `unknown collections: ${unknownCollections.join(", ")}` : "",
    unknownFunctions.length ? `unknown functions: ${unknownFunctions.join(", ")}` : "",
  ].filter(Boolean);
  if (problems.length) throw invalidInput(problems.join("; "));

  // The names were checked above; the write re-checks them in the same statement, so a collection or
  // function dropped in between never stays on the allowlist (where a later namesake would inherit it).
  const existing = (names: string[], table: typeof collectionsTable | typeof functionsTable) =>
    sql`ARRAY(SELECT u.name FROM unnest(${arrayLiteral(names)}::text[]) WITH ORDINALITY AS u(name, i)
      WHERE EXISTS (SELECT 1 FROM ${table} t WHERE t.project_id = ${projectId}::uuid AND t.name = u.name)
      ORDER BY u.i)`;
  const set = {
    ...(collections ? { exposedCollections: existing(collections, collectionsTable) } : {}),
    ...(functions ? { exposedFunctions: existing(functions, functionsTable) } : {}),
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
      }),
    bumpMetaRev(db, projectId),
  ]);
  return rows[0] as ExposureView;
}

/**
 * Patch the config (`PATCH …/app-mcp/config`): any subset of enabled / auth_mode / slug; 409 when
 * the slug is taken. One batch with the `meta_rev` bump.
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
    updatedAt: sql`now()`,
  };
  let rows: Array<{ enabled: boolean; authMode: string; slug: string | null }>;
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
        }),
      bumpMetaRev(db, projectId),
    ]);
  } catch (err) {
    if (isUniqueViolation(err, "app_mcp_configs_slug_unique")) {
      throw new AppError(409, "conflict", `slug "${patch.slug}" is already taken`);
    }
    throw err;
  }
  const row = rows[0] as { enabled: boolean; authMode: string; slug: string | null };
  return appMcpConfigView(base, projectId, {
    enabled: row.enabled,
    authMode: row.authMode as AppMcpSettings["authMode"],
    slug: row.slug,
  });
}

/** Usage of a period (`GET …/billing?period=YYYY-MM`; `undefined` = the current UTC month). */
export async function billingStatus(
  db: Db,
  projectId: string,
  period: unknown,
): Promise<{ period: string; usage: Record<string, number> }> {
  if (period === undefined) return usageFor(db, projectId);
  const parsed = v.safeParse(PeriodSchema, period);
  if (!parsed.success) throw invalidInput("period: must be YYYY-MM");
  return usageFor(db, projectId, parsed.output);
}

export const appMcpAdminRoutes = new Hono<AppEnv>();

appMcpAdminRoutes.get("/v1/admin/projects/:id/app-mcp/exposure", async (c) => {
  const { config } = await authenticateProjectAdmin(c, c.req.param("id"));
  return c.json(exposureView(config));
});

appMcpAdminRoutes.put("/v1/admin/projects/:id/app-mcp/exposure", async (c) => {
  const { project, config } = await authenticateProjectAdmin(c, c.req.param("id"));
  const body = await jsonBody(c, v.unknown());
  return c.json(await setExposure(c.var.db, project.id, config, body));
});

appMcpAdminRoutes.get("/v1/admin/projects/:id/app-mcp/config", async (c) => {
  const { project, config } = await authenticateProjectAdmin(c, c.req.param("id"));
  return c.json(appMcpConfigView(connectionBase(c.env, c.req.url), project.id, config));
});

appMcpAdminRoutes.patch("/v1/admin/projects/:id/app-mcp/config", async (c) => {
  const { project } = await authenticateProjectAdmin(c, c.req.param("id"));
  const body = await jsonBody(c, v.unknown());
  return c.json(await updateAppMcpConfig(c.var.db, connectionBase(c.env, c.req.url), project.id, body));
});

appMcpAdminRoutes.get("/v1/admin/projects/:id/billing", async (c) => {
  const { project } = await authenticateProjectAdmin(c, c.req.param("id"));
  return c.json(await billingStatus(c.var.db, project.id, c.req.query("period")));
});
