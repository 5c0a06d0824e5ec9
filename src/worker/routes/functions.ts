/**
 * Functions: deploy, versions, promote (admin) and the invoke execution path.
 */
import { Hono } from "hono";
import type { AppEnv } from "../hono.ts";

export const functionRoutes = new Hono<AppEnv>();
