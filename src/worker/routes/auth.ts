/**
 * End-user auth (with `X-Api-Key`): /v1/auth/signup, /v1/auth/signin → `{session_token, user}`;
 * /v1/auth/signout revokes the session; /v1/auth/me returns the signed-in user. The database side
 * is src/accounts/end-users.ts and the password check src/accounts/signin.ts; here: the client key and
 * the rate limits.
 */

import { Hono } from "hono";
import * as v from "valibot";
import { revokeSession, signupEndUser, startSession } from "../../accounts/end-users.ts";
import { EndUserCredentialsSchema, SigninSchema } from "../../accounts/schemas.ts";
import { BAD_CREDENTIALS, checkSigninPassword } from "../../accounts/signin.ts";
import { unauthorized } from "../../errors.ts";
import { parseInput } from "../../validate.ts";
import { authenticateClientKey } from "../auth.ts";
import type { AppEnv } from "../hono.ts";
import { noteActiveUser } from "../metering.ts";
import { clientIp, enforceRateLimit, rateLimiter } from "../rate-limit.ts";
import { jsonBody } from "../request.ts";
import { requireClientKey, requireEndUser } from "../require.ts";

export const authRoutes = new Hono<AppEnv>();

// Every attempt counts against the caller's IP before anything else runs (database, PBKDF2).
authRoutes.on("POST", ["/v1/auth/signup", "/v1/auth/signin"], async function authIpLimit(c, next) {
  const ip = clientIp(c.req.raw.headers);
  if (ip)
    await enforceRateLimit(c.env, `auth:${ip}`, "auth attempts from this address", "AUTH_IP_RATE_LIMITER");
  await next();
});

authRoutes.post("/v1/auth/signup", requireClientKey(), async (c) => {
  const { project } = c.var;
  const input = await jsonBody(c, EndUserCredentialsSchema);
  await enforceRateLimit(c.env, `signup:${project.id}:${input.email}`, "sign-ups with this email");
  const session = await signupEndUser(c.var.db, project.id, input);
  noteActiveUser(c, project.id, session.user.id);
  return c.json(session, 201);
});

authRoutes.post("/v1/auth/signin", async (c) => {
  // The key check and the user lookup share one round trip, so the email is read before the key
  // is checked; a bad key still answers 401 before any field error.
  const body = await jsonBody(c, v.unknown());
  const parsed = v.safeParse(SigninSchema, body);
  const { project, signinUser: user } = await authenticateClientKey(c, {
    signinEmail: parsed.success ? parsed.output.email : undefined,
  });
  const input = parseInput(SigninSchema, body);
  await checkSigninPassword(rateLimiter(c.env, "AUTH_RATE_LIMITER"), project.id, input, user);
  if (!user) throw unauthorized(BAD_CREDENTIALS);
  const session = await startSession(c.var.db, project.id, { id: user.id, email: user.email });
  noteActiveUser(c, project.id, user.id);
  return c.json(session);
});

authRoutes.post("/v1/auth/signout", requireEndUser(), async (c) => {
  await revokeSession(c.var.db, c.var.sessionId);
  return c.json({ signed_out: true });
});

authRoutes.get("/v1/auth/me", requireEndUser(), async (c) => {
  return c.json({ user: c.var.endUser, project: { id: c.var.project.id } });
});
