/**
 * Functions: deploy, list, versions, promote, delete, and the signing secret's read and rotation
 * (developer admin API), loaded with the rest of the control plane. The invoke route is on the hot
 * path, in routes/function-invoke.ts.
 */
import { Hono } from "hono";
import * as v from "valibot";
import { functionUrlPolicy } from "../../functions/outbound-policy.ts";
import {
  deleteFunction,
  deployFunction,
  listFunctions,
  listVersions,
  promoteFunction,
  rotateSigningSecret,
} from "../../functions/service.ts";
import { signingSecretView } from "../../functions/signing.ts";
import type { AppEnv } from "../hono.ts";
import { jsonBody } from "../request.ts";
import { requireProjectAdmin } from "../require.ts";

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

// The secret comes with the project-admin resolution (one statement); only these two routes show it.
functionRoutes.get("/v1/admin/projects/:id/functions/signing-secret", requireProjectAdmin(), (c) =>
  c.json(signingSecretView(c.var.appConfig.functionSigning)),
);

// The body is optional (`{"previous_valid_for_seconds": n}`): no body rotates with no overlap.
functionRoutes.post(
  "/v1/admin/projects/:id/functions/signing-secret/rotate",
  requireProjectAdmin(),
  async (c) => {
    const body = await jsonBody(c, v.unknown());
    return c.json(await rotateSigningSecret(c.var.db, c.var.project.id, body));
  },
);

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
