/**
 * App-MCP admin: exposure, config, billing under /v1/admin/projects/:id/…
 */
import { Hono } from "hono";
import type { AppEnv } from "../hono.ts";

export const appMcpAdminRoutes = new Hono<AppEnv>();
