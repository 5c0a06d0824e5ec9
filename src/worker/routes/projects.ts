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
import type { AppEnv } from "../hono.ts";
import { jsonBody } from "../request.ts";
import { requireDeveloper, requireProjectAdmin } from "../require.ts";

export const projectRoutes = new Hono<AppEnv>();

projectRoutes.post("/v1/admin/projects", requireDeveloper(), async (c) => {
  const { developerId } = c.var;
  return c.json(await createProject(c.var.db, developerId, await jsonBody(c, v.unknown())), 201);
});

projectRoutes.get("/v1/admin/projects", requireDeveloper(), async (c) => {
  const { developerId } = c.var;
  return c.json({ projects: await listProjects(c.var.db, developerId) });
});

projectRoutes.get("/v1/admin/projects/:id", requireDeveloper(), async (c) => {
  const { developerId } = c.var;
  return c.json(await getProject(c.var.db, developerId, c.req.param("id")));
});

projectRoutes.patch("/v1/admin/projects/:id", requireDeveloper(), async (c) => {
  const { developerId } = c.var;
  return c.json(
    await renameProject(c.var.db, developerId, c.req.param("id"), await jsonBody(c, v.unknown())),
  );
});

projectRoutes.delete("/v1/admin/projects/:id", requireDeveloper(), async (c) => {
  const { developerId } = c.var;
  return c.json(await deleteProject(c.var.db, developerId, c.req.param("id")));
});

projectRoutes.post("/v1/admin/projects/:id/client-keys", requireProjectAdmin(), async (c) => {
  const { project } = c.var;
  return c.json(await createClientKey(c.var.db, project.id, await jsonBody(c, v.unknown())), 201);
});

projectRoutes.get("/v1/admin/projects/:id/client-keys", requireProjectAdmin(), async (c) => {
  const { project } = c.var;
  return c.json({ client_keys: await listClientKeys(c.var.db, project.id) });
});

projectRoutes.delete("/v1/admin/projects/:id/client-keys/:keyId", requireProjectAdmin(), async (c) => {
  const { project } = c.var;
  return c.json(await revokeClientKey(c.var.db, project.id, c.req.param("keyId")));
});
