/**
 * The SDK data routes: /v1/projects/:id/collections/:name/… (rows, find, aggregate, nearest).
 */
import { Hono } from "hono";
import type { AppEnv } from "../hono.ts";

export const dataRoutes = new Hono<AppEnv>();
