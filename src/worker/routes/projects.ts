/**
 * Projects and client keys of the signed-in developer: /v1/admin/projects…
 */
import { Hono } from "hono";
import type { AppEnv } from "../hono.ts";

export const projectRoutes = new Hono<AppEnv>();
