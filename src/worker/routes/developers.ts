/**
 * Developer sign-up: POST /v1/developers/signup.
 */
import { Hono } from "hono";
import type { AppEnv } from "../hono.ts";

export const developerRoutes = new Hono<AppEnv>();
