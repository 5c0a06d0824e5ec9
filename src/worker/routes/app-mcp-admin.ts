/**
 * App-MCP admin under /v1/admin/projects/:id/…: the exposure allowlist, the surface config
 * (kill switch, auth mode, hostname slug, connection URLs) and billing usage.
 *
 * Connection URL: `${PUBLIC_BASE_URL}/app/<id>/mcp`; when `PUBLIC_BASE_URL` is empty (local
 * development can set it so) the origin of the admin request is used instead. The hostname URL is
 * `https://<slug>.<APP_MCP_HOST_SUFFIX>/mcp` once a slug is set, else null.
 */
import { and, eq, inArray, sql } from "drizzle-orm";
import { type Context, Hono } from "hono";
import * as v from "valibot";
import {
  appMcpConfigs,
  collections as collectionsTable,
  functions as functionsTable,
} from "../../../schema/index.ts";
import { AppError, invalidInput } from "../../errors.ts";
import { type AppMcpSettings, authenticateProjectAdmin } from "../auth.ts";
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

function connectionOf(c: Context<AppEnv>, projectId: string, slug: string | null) {
  const base = (c.env.PUBLIC_BASE_URL || new URL(c.req.url).origin).replace(/\/+$/, "");
  const suffix = c.env.APP_MCP_HOST_SUFFIX;
  return {
    url: `${base}/app/${projectId}/mcp`,
    hostname_url: slug && suffix ? `https://${slug}.${suffix}/mcp` : null,
  };
}

function configView(
  c: Context<AppEnv>,
  projectId: string,
  config: Omit<AppMcpSettings, "exposedCollections" | "exposedFunctions">,
) {
  return {
    enabled: config.enabled,
    auth_mode: config.authMode,
    slug: config.slug,
    connection: connectionOf(c, projectId, config.slug),
  };
}

function isUniqueViolation(err: unknown): boolean {
  for (let e: unknown = err; e && typeof e === "object"; e = (e as { cause?: unknown }).cause) {
    if ((e as { code?: unknown }).code === "23505") return true;
  }
  return false;
}

export const appMcpAdminRoutes = new Hono<AppEnv>();

appMcpAdminRoutes.get("/v1/admin/projects/:id/app-mcp/exposure", async (c) => {
  const { config } = await authenticateProjectAdmin(c, c.req.param("id"));
  return c.json({ collections: config.exposedCollections, functions: config.exposedFunctions });
});

appMcpAdminRoutes.put("/v1/admin/projects/:id/app-mcp/exposure", async (c) => {
  const { project, config } = await authenticateProjectAdmin(c, c.req.param("id"));
  const body = await jsonBody(c, ExposureSchema);
  const collections = body.collections && dedupe(body.collections);
  const functions = body.functions && dedupe(body.functions);
  if (!collections && !functions) {
    return c.json({ collections: config.exposedCollections, functions: config.exposedFunctions });
  }

  const db = c.var.db;
  const [knownCollections, knownFunctions] = await db.batch([
    db
      .select({ name: collectionsTable.name })
      .from(collectionsTable)
      .where(
        and(eq(collectionsTable.projectId, project.id), inArray(collectionsTable.name, collections ?? [])),
      ),
    db
      .select({ name: functionsTable.name })
      .from(functionsTable)
      .where(and(eq(functionsTable.projectId, project.id), inArray(functionsTable.name, functions ?? []))),
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

  const set = {
    ...(collections ? { exposedCollections: collections } : {}),
    ...(functions ? { exposedFunctions: functions } : {}),
    updatedAt: sql`now()`,
  };
  const [rows] = await c.var.db.batch([
    c.var.db
      .insert(appMcpConfigs)
      .values({ projectId: project.id, ...set })
      .onConflictDoUpdate({ target: appMcpConfigs.projectId, set })
      .returning({
        collections: appMcpConfigs.exposedCollections,
        functions: appMcpConfigs.exposedFunctions,
      }),
    bumpMetaRev(c.var.db, project.id),
  ]);
  return c.json(rows[0]);
});

appMcpAdminRoutes.get("/v1/admin/projects/:id/app-mcp/config", async (c) => {
  const { project, config } = await authenticateProjectAdmin(c, c.req.param("id"));
  return c.json(configView(c, project.id, config));
});

appMcpAdminRoutes.patch("/v1/admin/projects/:id/app-mcp/config", async (c) => {
  const { project } = await authenticateProjectAdmin(c, c.req.param("id"));
  const patch = await jsonBody(c, ConfigPatchSchema);
  const set = {
    ...(patch.enabled !== undefined ? { enabled: patch.enabled } : {}),
    ...(patch.auth_mode !== undefined ? { authMode: patch.auth_mode } : {}),
    ...(patch.slug !== undefined ? { slug: patch.slug } : {}),
    updatedAt: sql`now()`,
  };
  let rows: Array<{ enabled: boolean; authMode: string; slug: string | null }>;
  try {
    [rows] = await c.var.db.batch([
      c.var.db
        .insert(appMcpConfigs)
        .values({ projectId: project.id, ...set })
        .onConflictDoUpdate({ target: appMcpConfigs.projectId, set })
        .returning({
          enabled: appMcpConfigs.enabled,
          authMode: appMcpConfigs.authMode,
          slug: appMcpConfigs.slug,
        }),
      bumpMetaRev(c.var.db, project.id),
    ]);
  } catch (err) {
    if (isUniqueViolation(err)) throw new AppError(409, "conflict", `slug "${patch.slug}" is already taken`);
    throw err;
  }
  const row = rows[0] as { enabled: boolean; authMode: string; slug: string | null };
  return c.json(
    configView(c, project.id, {
      enabled: row.enabled,
      authMode: row.authMode as AppMcpSettings["authMode"],
      slug: row.slug,
    }),
  );
});

appMcpAdminRoutes.get("/v1/admin/projects/:id/billing", async (c) => {
  const { project } = await authenticateProjectAdmin(c, c.req.param("id"));
  const requested = c.req.query("period");
  const period = requested === undefined ? undefined : v.safeParse(PeriodSchema, requested);
  if (period && !period.success) throw invalidInput("period: must be YYYY-MM");
  return c.json(await usageFor(c.var.db, project.id, period?.output));
});
