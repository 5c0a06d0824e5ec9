/**
 * Projects and client keys of the signed-in developer (developer Bearer): /v1/admin/projects…
 * A project of another developer answers 404, like one that does not exist. Client keys are shown
 * once at creation; listings carry only the non-secret prefix.
 */
import { and, asc, eq, sql } from "drizzle-orm";
import { Hono } from "hono";
import * as v from "valibot";
import { appMcpConfigs, type ClientKey, clientKeys, type Project, projects } from "../../../schema/index.ts";
import { notFound } from "../../errors.ts";
import { authenticateDeveloper, authenticateProjectAdmin, isUuid } from "../auth.ts";
import { CREDENTIAL_PREFIX, issueCredential } from "../crypto.ts";
import type { Db } from "../db.ts";
import type { AppEnv } from "../hono.ts";
import { jsonBody } from "../request.ts";
import { ProjectNameSchema } from "./developers.ts";

export const CreateProjectSchema = v.object({ name: ProjectNameSchema });
export type CreateProject = v.InferOutput<typeof CreateProjectSchema>;

export const UpdateProjectSchema = v.object({ name: ProjectNameSchema });
export type UpdateProject = v.InferOutput<typeof UpdateProjectSchema>;

export const CreateClientKeySchema = v.object({
  name: v.optional(
    v.pipe(
      v.string(),
      v.trim(),
      v.minLength(1, "must not be empty"),
      v.maxLength(100, "must be at most 100 characters"),
    ),
  ),
});
export type CreateClientKey = v.InferOutput<typeof CreateClientKeySchema>;

/** The Postgres schema holding a project's collection tables: `app_<project id hex>`. */
export const projectSchemaName = (projectId: string): string => `app_${projectId.replaceAll("-", "")}`;

const projectView = (p: Pick<Project, "id" | "name" | "metaRev" | "createdAt">) => ({
  id: p.id,
  name: p.name,
  meta_rev: p.metaRev,
  created_at: p.createdAt,
});

const clientKeyView = (k: Pick<ClientKey, "id" | "name" | "createdAt" | "revokedAt">) => ({
  id: k.id,
  name: k.name,
  prefix: `${CREDENTIAL_PREFIX.clientKey}${k.id.replaceAll("-", "")}`,
  created_at: k.createdAt,
  revoked: k.revokedAt !== null,
  revoked_at: k.revokedAt,
});

/** The developer's project row, or 404 (also for a malformed id or another developer's project). */
async function ownedProject(db: Db, developerId: string, projectId: string): Promise<Project> {
  if (!isUuid(projectId)) throw notFound("project not found");
  const [project] = await db
    .select()
    .from(projects)
    .where(and(eq(projects.id, projectId), eq(projects.developerId, developerId)));
  if (!project) throw notFound("project not found");
  return project;
}

export const projectRoutes = new Hono<AppEnv>();

projectRoutes.post("/v1/admin/projects", async (c) => {
  const { developerId } = await authenticateDeveloper(c);
  const input = await jsonBody(c, CreateProjectSchema);
  const db = c.var.db;
  const id = crypto.randomUUID();
  const [[project]] = await db.batch([
    db.insert(projects).values({ id, developerId, name: input.name }).returning(),
    db.insert(appMcpConfigs).values({ projectId: id }),
  ]);
  return c.json(projectView(project as Project), 201);
});

projectRoutes.get("/v1/admin/projects", async (c) => {
  const { developerId } = await authenticateDeveloper(c);
  const rows = await c.var.db
    .select()
    .from(projects)
    .where(eq(projects.developerId, developerId))
    .orderBy(asc(projects.createdAt), asc(projects.id));
  return c.json({ projects: rows.map(projectView) });
});

projectRoutes.get("/v1/admin/projects/:id", async (c) => {
  const { developerId } = await authenticateDeveloper(c);
  return c.json(projectView(await ownedProject(c.var.db, developerId, c.req.param("id"))));
});

projectRoutes.patch("/v1/admin/projects/:id", async (c) => {
  const { developerId } = await authenticateDeveloper(c);
  const input = await jsonBody(c, UpdateProjectSchema);
  const projectId = c.req.param("id");
  if (!isUuid(projectId)) throw notFound("project not found");
  // The project name is the app name in app-MCP tool names, so a rename bumps `meta_rev`.
  const [project] = await c.var.db
    .update(projects)
    .set({ name: input.name, metaRev: sql`${projects.metaRev} + 1` })
    .where(and(eq(projects.id, projectId), eq(projects.developerId, developerId)))
    .returning();
  if (!project) throw notFound("project not found");
  return c.json(projectView(project));
});

projectRoutes.delete("/v1/admin/projects/:id", async (c) => {
  const { developerId } = await authenticateDeveloper(c);
  const db = c.var.db;
  const project = await ownedProject(db, developerId, c.req.param("id"));
  // Platform rows cascade from the project; its collection tables go with its schema.
  await db.batch([
    db.delete(projects).where(and(eq(projects.id, project.id), eq(projects.developerId, developerId))),
    db.execute(sql`drop schema if exists ${sql.identifier(projectSchemaName(project.id))} cascade`),
  ]);
  return c.json({ id: project.id, deleted: true });
});

projectRoutes.post("/v1/admin/projects/:id/client-keys", async (c) => {
  const { project } = await authenticateProjectAdmin(c, c.req.param("id"));
  const input = await jsonBody(c, CreateClientKeySchema);
  const key = await issueCredential("clientKey");
  const [row] = await c.var.db
    .insert(clientKeys)
    .values({ id: key.id, projectId: project.id, secretHash: key.secretHash, name: input.name ?? "default" })
    .returning();
  return c.json({ ...clientKeyView(row as ClientKey), client_key: key.token }, 201);
});

projectRoutes.get("/v1/admin/projects/:id/client-keys", async (c) => {
  const { project } = await authenticateProjectAdmin(c, c.req.param("id"));
  const rows = await c.var.db
    .select()
    .from(clientKeys)
    .where(eq(clientKeys.projectId, project.id))
    .orderBy(asc(clientKeys.createdAt), asc(clientKeys.id));
  return c.json({ client_keys: rows.map(clientKeyView) });
});

projectRoutes.delete("/v1/admin/projects/:id/client-keys/:keyId", async (c) => {
  const { project } = await authenticateProjectAdmin(c, c.req.param("id"));
  const keyId = c.req.param("keyId");
  if (!isUuid(keyId)) throw notFound("client key not found");
  const db = c.var.db;
  // Revoking twice keeps the first revocation time.
  const [row] = await db
    .update(clientKeys)
    .set({ revokedAt: sql`coalesce(${clientKeys.revokedAt}, now())` })
    .where(and(eq(clientKeys.id, keyId), eq(clientKeys.projectId, project.id)))
    .returning();
  if (!row) throw notFound("client key not found");
  return c.json(clientKeyView(row));
});
