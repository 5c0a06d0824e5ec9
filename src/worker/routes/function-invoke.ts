/**
 * The function execution path over REST: `POST /v1/projects/:id/functions/:name/invoke` (end-user
 * scope), on the hot path (src/worker/app.ts). The functions service (its tables, the upstream call)
 * is imported by the first invoke an isolate serves (src/worker/hot-services.ts), not at start-up.
 */
import { Hono } from "hono";
import * as v from "valibot";
import { functionUrlPolicy } from "../../functions/outbound-policy.ts";
import type { AppEnv } from "../hono.ts";
import { hotServices } from "../lazy.ts";
import { requestMeter } from "../metering.ts";
import { appLimiter } from "../rate-limit.ts";
import { jsonBody } from "../request.ts";
import { requireProjectCaller } from "../require.ts";

export const functionInvokeRoutes = new Hono<AppEnv>();

functionInvokeRoutes.post("/v1/projects/:id/functions/:name/invoke", requireProjectCaller(), async (c) => {
  const { principal } = c.var;
  const { invokeFunction, loadFunction } = await hotServices();
  const fn = await loadFunction(c.var.db, principal.project.id, c.req.param("name"));
  const input = await jsonBody(c, v.unknown());
  const ports = {
    policy: functionUrlPolicy(c.env.FUNCTION_URL_POLICY),
    limit: appLimiter(c.env, principal, "RATE_LIMITER"),
    meter: requestMeter(c),
    signing: c.var.appRuntime.functionSigning,
  };
  const result = await invokeFunction(ports, principal, fn, input);
  c.header("x-amba-request-id", result.requestId);
  if (result.status === 204 || result.status === 205 || result.status === 304) {
    return c.body(null, result.status);
  }
  return c.json(result.body, result.status as 200);
});
