/**
 * The platform MCP: POST /mcp with amba_* tools mirroring the admin API.
 */
import { Hono } from "hono";
import type { AppEnv } from "../hono.ts";

export const platformMcpRoutes = new Hono<AppEnv>();
