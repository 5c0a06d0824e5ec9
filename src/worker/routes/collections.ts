/**
 * Collections admin: /v1/admin/projects/:id/collections (create, list, alter, drop).
 */
import { Hono } from "hono";
import type { AppEnv } from "../hono.ts";

export const collectionRoutes = new Hono<AppEnv>();
