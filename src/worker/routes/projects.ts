/**
 * Projects and client keys of the signed-in developer (developer Bearer): /v1/admin/projects…
 * (src/accounts/projects.ts does the work).
 */
import { Hono } from "hono";
import * as v from "valibot";
import {
  createClientKey,
  createProject,
  deleteProject,
  getProject,
  listClientKeys,
  listProjects,
  renameProject,
  revokeClientKey,
} from "../../accounts/projects.ts";
import { authenticateDeveloper, authenticateProjectAdmin } from "../auth.ts";
import type { AppEnv } from "../hono.ts";
import { jsonBody } from "../request.ts";

export const projectRoutes = new Hono<AppEnv>();

projectRoutes.post("/v1/admin/projects", async (c) => {
  const { developerId } = await authenticateDeveloper(c);
  return c.json(await createProject(c.var.db, developerId, await jsonBody(c, v.unknown())), 201);
});

projectRoutes.get("/v1/admin/projects", async (c) => {
  const { developerId } = await authenticateDeveloper(c);
  return c.json({ projects: await listProjects(c.var.db, developerId) });
});

projectRoutes.get("/v1/admin/projects/:id", async (c) => {
  const { developerId } = await authenticateDeveloper(c);
  return c.json(await getProject(c.var.db, developerId, c.req.param("id")));
});

projectRoutes.patch("/v1/admin/projects/:id", async (c) => {
  const { developerId } = await authenticateDeveloper(c);
  return c.json(
    await renameProject(c.var.db, developerId, c.req.param("id"), await jsonBody(c, v.unknown())),
  );
});

projectRoutes.delete("/v1/admin/projects/:id", async (c) => {
  const { developerId } = await authenticateDeveloper(c);
  return c.json(await deleteProject(c.var.db, developerId, c.req.param("id")));
});

projectRoutes.post("/v1/admin/projects/:id/client-keys", async (c) => {
  const { project } = await authenticateProjectAdmin(c, c.req.param("id"));
  return c.json(await createClientKey(c.var.db, project.id, await jsonBody(c, v.unknown())), 201);
});

projectRoutes.get("/v1/admin/projects/:id/client-keys", async (c) => {
  const { project } = await authenticateProjectAdmin(c, c.req.param("id"));
  return c.json({ client_keys: await listClientKeys(c.var.db, project.id) });
});

projectRoutes.delete("/v1/admin/projects/:id/client-keys/:keyId", async (c) => {
  const { project } = await authenticateProjectAdmin(c, c.req.param("id"));
  return c.json(await revokeClientKey(c.var.db, project.id, c.req.param("keyId")));
});
