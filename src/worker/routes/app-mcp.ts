/**
 * The app's own MCP endpoint: /app/:projectId/mcp and <slug>.<APP_MCP_HOST_SUFFIX>/mcp.
 */
import { Hono } from "hono";
import type { AppEnv } from "../hono.ts";

export const appMcpRoutes = new Hono<AppEnv>();
