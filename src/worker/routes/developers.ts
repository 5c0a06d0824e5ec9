/**
 * Developer sign-up: POST /v1/developers/signup (src/accounts/developers.ts does the work, and
 * counts the attempt against the caller's IP).
 */

import { Hono } from "hono";
import * as v from "valibot";
import { type SignupOrigin, signupDeveloper } from "../../accounts/developers.ts";
import type { Env } from "../env.ts";
import type { AppEnv } from "../hono.ts";
import { clientIp, rateLimiter } from "../rate-limit.ts";
import { jsonBody } from "../request.ts";

export const developerRoutes = new Hono<AppEnv>();

/**
 * A sign-up's origin on this host: the client IP against `AUTH_RATE_LIMITER` (10/min). The REST
 * route and the platform MCP's `amba_developer_signup` both use it, so they share one budget per IP.
 */
export const developerSignupOrigin = (env: Env, headers: Headers): SignupOrigin => ({
  clientIp: clientIp(headers),
  limit: rateLimiter(env, "AUTH_RATE_LIMITER"),
});

developerRoutes.post("/v1/developers/signup", async (c) => {
  const body = await jsonBody(c, v.unknown());
  return c.json(await signupDeveloper(c.var.db, body, developerSignupOrigin(c.env, c.req.raw.headers)), 201);
});
