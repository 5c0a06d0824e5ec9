/**
 * Events (src/events/service.ts): `POST /v1/events` for an app's client code — client key, with or
 * without an end-user session — on the hot path (src/worker/app.ts), and
 * `GET` and `DELETE /v1/admin/projects/:id/events` for its developer, in the cold app. Ingestion is
 * refused while the app is over its storage quota (src/data/storage-quota.ts), as a collection
 * insert is; the delete is the way back under it. Ingestion counts against
 * the app's caller tier and its aggregate budget before the body is read, as an SDK data write does
 * (src/worker/routes/data.ts): one request, whatever it carries (at most 100 events).
 */
import { Hono } from "hono";
import * as v from "valibot";
import { lazyModule } from "../../lazy-module.ts";
import { appClientKey } from "../../rate-limit.ts";
import type { AppEnv } from "../hono.ts";
import { hotServices } from "../lazy.ts";
import { requestMeter } from "../metering.ts";
import { appLimiter, clientIp, TIER_LIMITERS } from "../rate-limit.ts";
import { jsonBody } from "../request.ts";
import { requireAppClient, requireProjectAdmin } from "../require.ts";

/** The events service, loaded with the developer's first listing or delete. */
const eventService = lazyModule(() => import("../../events/service.ts"));

/** The hot half: ingestion. */
export const eventRoutes = new Hono<AppEnv>();

eventRoutes.post("/v1/events", requireAppClient(), async (c) => {
  const { appClient, appRuntime } = c.var;
  // Callers without a session multiply like end users do: the app's aggregate budget counts both.
  const limit = appLimiter(
    c.env,
    { scope: "end_user", project: appClient.project },
    TIER_LIMITERS[appRuntime.rateLimitPerMinute] ?? "RATE_LIMITER",
  );
  await limit(appClientKey(appClient, clientIp(c.req.raw.headers)), "this app's caller");
  const body = await jsonBody(c, v.unknown());
  const { ingestEvents, storageGuard, storageQuotaBytes } = await hotServices();
  const waitUntil = (promise: Promise<unknown>) => c.executionCtx.waitUntil(promise);
  const storage = storageGuard(c.var.db, storageQuotaBytes(c.env.STORAGE_QUOTA_MIB), waitUntil);
  const sender = {
    projectId: appClient.project.id,
    developerId: appClient.project.developerId,
    userId: appClient.user?.id ?? null,
  };
  return c.json(await ingestEvents(c.var.db, requestMeter(c), storage, sender, body), 201);
});

/** The cold half: the developer's listing and deletion. */
export const eventAdminRoutes = new Hono<AppEnv>();

eventAdminRoutes.get("/v1/admin/projects/:id/events", requireProjectAdmin(), async (c) => {
  const { listEvents } = await eventService();
  const query = { limit: c.req.query("limit"), cursor: c.req.query("cursor"), name: c.req.query("name") };
  return c.json(await listEvents(c.var.db, c.var.project.id, query));
});

eventAdminRoutes.delete("/v1/admin/projects/:id/events", requireProjectAdmin(), async (c) => {
  const { deleteEvents } = await eventService();
  const query = { before: c.req.query("before"), name: c.req.query("name") };
  return c.json(await deleteEvents(c.var.db, c.var.project, query));
});
