/**
 * Collections admin: /v1/admin/projects/:id/collections (create, list, alter, drop). Developer
 * Bearer, and the developer must own the project; the work happens in src/data/collections.ts.
 */

import type { Context } from "hono";
import { Hono } from "hono";
import * as v from "valibot";
import {
  alterCollection,
  createCollection,
  dropCollection,
  listCollectionViews,
} from "../../data/collections.ts";
import type { AppEnv } from "../hono.ts";
import { jsonBody } from "../request.ts";
import { requireProjectAdmin } from "../require.ts";

export const collectionRoutes = new Hono<AppEnv>();

const body = <E extends AppEnv>(c: Context<E>): Promise<unknown> => jsonBody(c, v.unknown());

collectionRoutes.post("/v1/admin/projects/:id/collections", requireProjectAdmin(), async (c) => {
  const { project } = c.var;
  return c.json(await createCollection(c.var.db, project.id, await body(c)), 201);
});

collectionRoutes.get("/v1/admin/projects/:id/collections", requireProjectAdmin(), async (c) => {
  const { project } = c.var;
  return c.json(await listCollectionViews(c.var.db, project.id));
});

collectionRoutes.patch("/v1/admin/projects/:id/collections/:name", requireProjectAdmin(), async (c) => {
  const { project } = c.var;
  return c.json(await alterCollection(c.var.db, project.id, c.req.param("name"), await body(c)));
});

collectionRoutes.delete("/v1/admin/projects/:id/collections/:name", requireProjectAdmin(), async (c) => {
  const { project } = c.var;
  return c.json(await dropCollection(c.var.db, project.id, c.req.param("name")));
});
