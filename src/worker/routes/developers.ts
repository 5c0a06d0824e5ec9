/**
 * Developer sign-up: POST /v1/developers/signup (src/accounts/developers.ts does the work).
 */

import { Hono } from "hono";
import * as v from "valibot";
import { signupDeveloper } from "../../accounts/developers.ts";
import type { AppEnv } from "../hono.ts";
import { clientIp, enforceRateLimit } from "../rate-limit.ts";
import { jsonBody } from "../request.ts";

export const developerRoutes = new Hono<AppEnv>();

developerRoutes.post("/v1/developers/signup", async (c) => {
  const ip = clientIp(c.req.raw.headers);
  if (ip)
    await enforceRateLimit(
      c.env,
      `developer-signup:${ip}`,
      "developer sign-ups from this address",
      "AUTH_RATE_LIMITER",
    );
  return c.json(await signupDeveloper(c.var.db, await jsonBody(c, v.unknown())), 201);
});
