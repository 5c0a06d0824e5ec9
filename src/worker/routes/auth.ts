/**
 * End-user auth: /v1/auth/signup, /v1/auth/signin, /v1/auth/signout (with X-Api-Key).
 */
import { Hono } from "hono";
import type { AppEnv } from "../hono.ts";

export const authRoutes = new Hono<AppEnv>();
