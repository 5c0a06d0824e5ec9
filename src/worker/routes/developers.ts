/**
 * Developer sign-up: POST /v1/developers/signup (src/accounts/developers.ts does the work, and
 * counts the attempt against the caller's IP); the signed-in developer's tokens:
 * /v1/admin/tokens… (src/accounts/developer-tokens.ts).
 */

import { Hono } from "hono";
import * as v from "valibot";
import {
  createDeveloperToken,
  listDeveloperTokens,
  revokeDeveloperToken,
} from "../../accounts/developer-tokens.ts";
import { type SignupOrigin, signupDeveloper } from "../../accounts/developers.ts";
import type { Env } from "../env.ts";
import type { AppEnv } from "../hono.ts";
import { clientIp, rateLimiter } from "../rate-limit.ts";
import { jsonBody } from "../request.ts";
import { requireDeveloper } from "../require.ts";

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

developerRoutes.get("/v1/admin/tokens", requireDeveloper(), async (c) => {
  const { developerId, developerTokenId } = c.var;
  return c.json({ tokens: await listDeveloperTokens(c.var.db, developerId, developerTokenId) });
});

developerRoutes.post("/v1/admin/tokens", requireDeveloper(), async (c) => {
  const { developerId } = c.var;
  return c.json(await createDeveloperToken(c.var.db, developerId, await jsonBody(c, v.unknown())), 201);
});

developerRoutes.delete("/v1/admin/tokens/:tokenId", requireDeveloper(), async (c) => {
  const { developerId, developerTokenId } = c.var;
  return c.json(await revokeDeveloperToken(c.var.db, developerId, c.req.param("tokenId"), developerTokenId));
});
