/**
 * App-MCP admin under /v1/admin/projects/:id/…: the exposure allowlist, the surface config and billing
 * usage (per period and per day) (src/app-mcp/admin.ts and src/usage/billing.ts do the work).
 */

import { Hono } from "hono";
import * as v from "valibot";
import {
  connectionBase,
  exposureView,
  readAppMcpConfig,
  setExposure,
  updateAppMcpConfig,
} from "../../app-mcp/admin.ts";
import { billingStatus, dailyUsage } from "../../usage/billing.ts";
import { authenticateProjectAdmin } from "../auth.ts";
import type { AppEnv } from "../hono.ts";
import { jsonBody } from "../request.ts";

export const appMcpAdminRoutes = new Hono<AppEnv>();

appMcpAdminRoutes.get("/v1/admin/projects/:id/app-mcp/exposure", async (c) => {
  const { config } = await authenticateProjectAdmin(c, c.req.param("id"));
  return c.json(exposureView(config));
});

appMcpAdminRoutes.put("/v1/admin/projects/:id/app-mcp/exposure", async (c) => {
  const { project, config } = await authenticateProjectAdmin(c, c.req.param("id"));
  const body = await jsonBody(c, v.unknown());
  return c.json(await setExposure(c.var.db, project.id, config, body));
});

appMcpAdminRoutes.get("/v1/admin/projects/:id/app-mcp/config", async (c) => {
  const { project, config } = await authenticateProjectAdmin(c, c.req.param("id"));
  return c.json(await readAppMcpConfig(c.var.db, connectionBase(c.env, c.req.url), project.id, config));
});

appMcpAdminRoutes.patch("/v1/admin/projects/:id/app-mcp/config", async (c) => {
  const { project } = await authenticateProjectAdmin(c, c.req.param("id"));
  const body = await jsonBody(c, v.unknown());
  return c.json(await updateAppMcpConfig(c.var.db, connectionBase(c.env, c.req.url), project.id, body));
});

appMcpAdminRoutes.get("/v1/admin/projects/:id/billing", async (c) => {
  const { project } = await authenticateProjectAdmin(c, c.req.param("id"));
  return c.json(await billingStatus(c.var.db, project.id, c.req.query("period")));
});

appMcpAdminRoutes.get("/v1/admin/projects/:id/billing/daily", async (c) => {
  const { project } = await authenticateProjectAdmin(c, c.req.param("id"));
  return c.json(await dailyUsage(c.var.db, project.id, { from: c.req.query("from"), to: c.req.query("to") }));
});
