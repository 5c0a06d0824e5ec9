/**
 * Functions: deploy, list, versions, promote, delete (developer admin API) and the invoke execution
 * path `POST /v1/projects/:id/functions/:name/invoke` (end-user scope). Two sub-apps: the admin
 * routes load with the rest of the control plane, the invoke route is on the hot path (src/worker/app.ts).
 */
import { Hono } from "hono";
import * as v from "valibot";
import { functionUrlPolicy } from "../../functions/outbound-policy.ts";
import {
  deleteFunction,
  deployFunction,
  invokeFunction,
  listFunctions,
  listVersions,
  loadFunction,
  promoteFunction,
} from "../../functions/service.ts";
import type { AppEnv } from "../hono.ts";
import { requestMeter } from "../metering.ts";
import { rateLimiter } from "../rate-limit.ts";
import { jsonBody } from "../request.ts";
import { requireProjectAdmin, requireProjectCaller } from "../require.ts";

export const functionRoutes = new Hono<AppEnv>();

functionRoutes.post("/v1/admin/projects/:id/functions/deploy", requireProjectAdmin(), async (c) => {
  const { project } = c.var;
  const policy = functionUrlPolicy(c.env.FUNCTION_URL_POLICY);
  return c.json(await deployFunction(c.var.db, project.id, await jsonBody(c, v.unknown()), policy), 201);
});

functionRoutes.get("/v1/admin/projects/:id/functions", requireProjectAdmin(), async (c) => {
  const { project } = c.var;
  return c.json({ functions: await listFunctions(c.var.db, project.id) });
});

functionRoutes.get("/v1/admin/projects/:id/functions/:name/versions", requireProjectAdmin(), async (c) => {
  const { project } = c.var;
  const name = c.req.param("name");
  return c.json({ name, versions: await listVersions(c.var.db, project.id, name) });
});

functionRoutes.post("/v1/admin/projects/:id/functions/:name/promote", requireProjectAdmin(), async (c) => {
  const { project } = c.var;
  const body = await jsonBody(c, v.unknown());
  return c.json(await promoteFunction(c.var.db, project.id, c.req.param("name"), body));
});

functionRoutes.delete("/v1/admin/projects/:id/functions/:name", requireProjectAdmin(), async (c) => {
  const { project } = c.var;
  return c.json(await deleteFunction(c.var.db, project.id, c.req.param("name")));
});

export const functionInvokeRoutes = new Hono<AppEnv>();

functionInvokeRoutes.post("/v1/projects/:id/functions/:name/invoke", requireProjectCaller(), async (c) => {
  const { principal } = c.var;
  const fn = await loadFunction(c.var.db, principal.project.id, c.req.param("name"));
  const input = await jsonBody(c, v.unknown());
  const ports = {
    policy: functionUrlPolicy(c.env.FUNCTION_URL_POLICY),
    limit: rateLimiter(c.env),
    meter: requestMeter(c),
  };
  const result = await invokeFunction(ports, principal, fn, input);
  c.header("x-amba-request-id", result.requestId);
  if (result.status === 204 || result.status === 205 || result.status === 304) {
    return c.body(null, result.status);
  }
  return c.json(result.body, result.status as 200);
});
