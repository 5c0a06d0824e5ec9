/**
 * Projects and client keys of a developer. A project of another developer answers 404, like one that
 * does not exist. Client keys are shown once at creation; listings carry only the non-secret prefix.
 * Functions of `(db, developerId | projectId, input)` returning the wire shapes, shared by the REST
 * routes and the platform MCP's `amba_*` tools; an `input` is validated here (400 `invalid_input`).
 */
import { and, asc, eq, sql } from "drizzle-orm";
import { appMcpConfigs, type ClientKey, clientKeys, type Project, projects } from "../../schema/index.ts";
import { UUID } from "../data/columns.ts";
import { projectSchemaName } from "../data/sql.ts";
import type { Db } from "../db.ts";
import { notFound } from "../errors.ts";
import { refuseAtQuota } from "../quota.ts";
import { parseInput } from "../validate.ts";
import { CREDENTIAL_PREFIX, issueCredential } from "./crypto.ts";
import { CreateClientKeySchema, CreateProjectSchema, UpdateProjectSchema } from "./schemas.ts";

/** A timestamp column as ISO 8601 (null stays null). */
export const iso = (d: Date | string | null): string | null =>
  d === null ? null : new Date(d).toISOString();

/** A project as the admin API shows it. */
export interface ProjectView {
  id: string;
  name: string;
  meta_rev: number;
  created_at: string | null;
}

/** A client key as listings show it: never the secret, only its non-secret prefix. */
export interface ClientKeyView {
  id: string;
  name: string;
  prefix: string;
  created_at: string | null;
  revoked: boolean;
  revoked_at: string | null;
}

const projectView = (p: Pick<Project, "id" | "name" | "metaRev" | "createdAt">): ProjectView => ({
  id: p.id,
  name: p.name,
  meta_rev: Number(p.metaRev),
  created_at: iso(p.createdAt),
});

const clientKeyView = (k: Pick<ClientKey, "id" | "name" | "createdAt" | "revokedAt">): ClientKeyView => ({
  id: k.id,
  name: k.name,
  prefix: `${CREDENTIAL_PREFIX.clientKey}${k.id.replaceAll("-", "")}`,
  created_at: iso(k.createdAt),
  revoked: k.revokedAt !== null,
  revoked_at: iso(k.revokedAt),
});

/** The developer's project row, or 404 (also for a malformed id or another developer's project). */
async function ownedProject(db: Db, developerId: string, projectId: string): Promise<Project> {
  if (!UUID.test(projectId)) throw notFound("project not found");
  const [project] = await db
    .select()
    .from(projects)
    .where(and(eq(projects.id, projectId), eq(projects.developerId, developerId)));
  if (!project) throw notFound("project not found");
  return project;
}

/** New project with its (default) app-MCP config row, in one batch. */
export async function createProject(db: Db, developerId: string, body: unknown): Promise<ProjectView> {
  const input = parseInput(CreateProjectSchema, body);
  await refuseAtQuota(
    db,
    sql`${projects} WHERE ${projects.developerId} = ${developerId}`,
    MAX_PROJECTS_PER_DEVELOPER,
    `a developer holds at most ${MAX_PROJECTS_PER_DEVELOPER} projects; delete one before creating another`,
  );
  const id = crypto.randomUUID();
  const [[project]] = await db.batch([
    db.insert(projects).values({ id, developerId, name: input.name }).returning(),
    db.insert(appMcpConfigs).values({ projectId: id }),
  ]);
  return projectView(project as Project);
}

/**
 * Most projects one developer may hold: with `MAX_COLLECTIONS_PER_PROJECT` (src/data) this bounds the
 * tables one developer adds to the shared database. Checked before the insert (concurrent creates
 * may end a few over).
 */
export const MAX_PROJECTS_PER_DEVELOPER = 100;

/** The developer's projects, oldest first. */
export async function listProjects(db: Db, developerId: string): Promise<ProjectView[]> {
  const rows = await db
    .select()
    .from(projects)
    .where(eq(projects.developerId, developerId))
    .orderBy(asc(projects.createdAt), asc(projects.id));
  return rows.map(projectView);
}

/** One of the developer's projects (404 otherwise). */
export async function getProject(db: Db, developerId: string, projectId: string): Promise<ProjectView> {
  return projectView(await ownedProject(db, developerId, projectId));
}

/** Rename a project. The name is the app name in app-MCP tool names, so this bumps `meta_rev`. */
export async function renameProject(
  db: Db,
  developerId: string,
  projectId: string,
  body: unknown,
): Promise<ProjectView> {
  const input = parseInput(UpdateProjectSchema, body);
  if (!UUID.test(projectId)) throw notFound("project not found");
  const [project] = await db
    .update(projects)
    .set({ name: input.name, metaRev: sql`${projects.metaRev} + 1` })
    .where(and(eq(projects.id, projectId), eq(projects.developerId, developerId)))
    .returning();
  if (!project) throw notFound("project not found");
  return projectView(project);
}

/** Delete a project: its platform rows cascade, its collection tables go with its schema (one batch). */
export async function deleteProject(
  db: Db,
  developerId: string,
  projectId: string,
): Promise<{ id: string; deleted: true }> {
  const project = await ownedProject(db, developerId, projectId);
  await db.batch([
    // Release the hostname slug while the project can still be read: the cooldown trigger records
    // the developer it stays reserved for (README "Decisions"). The delete's cascade would release
    // it too, but by then the project row is gone.
    db.update(appMcpConfigs).set({ slug: null }).where(eq(appMcpConfigs.projectId, project.id)),
    db.delete(projects).where(and(eq(projects.id, project.id), eq(projects.developerId, developerId))),
    db.execute(sql`drop schema if exists ${sql.identifier(projectSchemaName(project.id))} cascade`),
  ]);
  return { id: project.id, deleted: true };
}

/**
 * Most client keys one project may hold, revoked ones included (their rows stay, to be listed): the
 * only rows of the shared platform tables a developer could otherwise add without bound, one admin
 * request each (1,200 a minute: 1.7 million a day). A key rotated every day lasts 2½ years. Checked
 * before the insert (concurrent creates may end a few over).
 */
export const MAX_CLIENT_KEYS_PER_PROJECT = 1000;

/** New client key for a project; `client_key` is the only time the secret is shown. */
export async function createClientKey(
  db: Db,
  projectId: string,
  body: unknown,
): Promise<ClientKeyView & { client_key: string }> {
  const input = parseInput(CreateClientKeySchema, body);
  await refuseAtQuota(
    db,
    sql`${clientKeys} WHERE ${clientKeys.projectId} = ${projectId}`,
    MAX_CLIENT_KEYS_PER_PROJECT,
    `a project holds at most ${MAX_CLIENT_KEYS_PER_PROJECT} client keys, revoked ones included; create another project for more`,
  );
  const key = await issueCredential("clientKey");
  const [row] = await db
    .insert(clientKeys)
    .values({ id: key.id, projectId, secretHash: key.secretHash, name: input.name ?? "default" })
    .returning();
  return { ...clientKeyView(row as ClientKey), client_key: key.token };
}

/** A project's client keys, oldest first, without secrets. */
export async function listClientKeys(db: Db, projectId: string): Promise<ClientKeyView[]> {
  const rows = await db
    .select()
    .from(clientKeys)
    .where(eq(clientKeys.projectId, projectId))
    .orderBy(asc(clientKeys.createdAt), asc(clientKeys.id));
  return rows.map(clientKeyView);
}

/** Revoke a project's client key (idempotent: the first revocation time is kept); 404 if unknown. */
export async function revokeClientKey(db: Db, projectId: string, keyId: string): Promise<ClientKeyView> {
  if (!UUID.test(keyId)) throw notFound("client key not found");
  const [row] = await db
    .update(clientKeys)
    .set({ revokedAt: sql`coalesce(${clientKeys.revokedAt}, now())` })
    .where(and(eq(clientKeys.id, keyId), eq(clientKeys.projectId, projectId)))
    .returning();
  if (!row) throw notFound("client key not found");
  return clientKeyView(row);
}
