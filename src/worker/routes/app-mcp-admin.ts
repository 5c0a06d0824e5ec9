/**
 * App-MCP admin under /v1/admin/projects/:id/…: the exposure allowlist, the surface config and billing
 * usage (per period and per day) (src/app-mcp/admin.ts and src/usage/billing.ts do the work).
 */

import { Hono } from "hono";
import * as v from "valibot";
import {
  connectionBase,
  readAppMcpConfig,
  readExposure,
  setExposure,
  updateAppMcpConfig,
} from "../../app-mcp/admin.ts";
import { billingStatus, dailyUsage } from "../../usage/billing.ts";
import type { AppEnv } from "../hono.ts";
import { settleUsage } from "../metering.ts";
import { jsonBody } from "../request.ts";
import { requireProjectAdmin } from "../require.ts";

export const appMcpAdminRoutes = new Hono<AppEnv>();

appMcpAdminRoutes.get("/v1/admin/projects/:id/app-mcp/exposure", requireProjectAdmin(), async (c) => {
  return c.json(await readExposure(c.var.db, c.var.project.id, c.var.appConfig));
});

appMcpAdminRoutes.put("/v1/admin/projects/:id/app-mcp/exposure", requireProjectAdmin(), async (c) => {
  const { project, appConfig } = c.var;
  const body = await jsonBody(c, v.unknown());
  return c.json(await setExposure(c.var.db, project.id, appConfig, body));
});

appMcpAdminRoutes.get("/v1/admin/projects/:id/app-mcp/config", requireProjectAdmin(), async (c) => {
  const { project, appConfig } = c.var;
  return c.json(await readAppMcpConfig(c.var.db, connectionBase(c.env, c.req.url), project.id, appConfig));
});

appMcpAdminRoutes.patch("/v1/admin/projects/:id/app-mcp/config", requireProjectAdmin(), async (c) => {
  const { project } = c.var;
  const body = await jsonBody(c, v.unknown());
  return c.json(await updateAppMcpConfig(c.var.db, connectionBase(c.env, c.req.url), project.id, body));
});

appMcpAdminRoutes.get("/v1/admin/projects/:id/billing", requireProjectAdmin(), async (c) => {
  const { project } = c.var;
  await settleUsage(c.var.db);
  return c.json(await billingStatus(c.var.db, project.id, c.req.query("period")));
});

appMcpAdminRoutes.get("/v1/admin/projects/:id/billing/daily", requireProjectAdmin(), async (c) => {
  const { project } = c.var;
  await settleUsage(c.var.db);
  return c.json(await dailyUsage(c.var.db, project.id, { from: c.req.query("from"), to: c.req.query("to") }));
});
