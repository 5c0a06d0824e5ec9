/**
 * End-user auth (with `X-Api-Key`): /v1/auth/signup, /v1/auth/signin → `{session_token, user}`;
 * /v1/auth/signout revokes the session; /v1/auth/me returns the signed-in user. The database side
 * is src/accounts/end-users.ts; here: the client key, the rate limits and the password check.
 */

import { Hono } from "hono";
import * as v from "valibot";
import { burnPasswordCheck, verifyPassword } from "../../accounts/crypto.ts";
import { revokeSession, signupEndUser, startSession } from "../../accounts/end-users.ts";
import { EndUserCredentialsSchema, type Signin, SigninSchema } from "../../accounts/schemas.ts";
import { unauthorized } from "../../errors.ts";
import { parseInput } from "../../validate.ts";
import { authenticateClientKey, type SigninCandidate } from "../auth.ts";
import type { AppEnv } from "../hono.ts";
import { noteActiveUser } from "../metering.ts";
import { clientIp, enforceRateLimit } from "../rate-limit.ts";
import { jsonBody } from "../request.ts";
import { requireClientKey, requireEndUser } from "../require.ts";

const BAD_CREDENTIALS = "invalid email or password";

/**
 * The sign-in password check, shared by `/v1/auth/signin` and the OAuth sign-in page: rate-limited
 * per project and email, one PBKDF2 run whether or not the user exists. Throws 401 on a mismatch.
 */
export async function checkSigninPassword(
  env: AppEnv["Bindings"],
  projectId: string,
  input: Signin,
  user: SigninCandidate | null,
): Promise<void> {
  // Each attempt costs a PBKDF2 run: limit attempts per project and email (credential stuffing).
  await enforceRateLimit(
    env,
    `signin:${projectId}:${input.email}`,
    "sign-ins with this email",
    "AUTH_RATE_LIMITER",
  );
  const ok = user
    ? await verifyPassword(input.password, user.password)
    : await burnPasswordCheck(input.password);
  if (!user || !ok) throw unauthorized(BAD_CREDENTIALS);
}

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
  await checkSigninPassword(c.env, project.id, input, user);
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
