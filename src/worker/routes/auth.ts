/**
 * End-user auth (with `X-Api-Key`): /v1/auth/signup, /v1/auth/signin → `{session_token, user}`;
 * /v1/auth/signout revokes the session; /v1/auth/me returns the signed-in user. Passwords are stored
 * as PBKDF2-SHA256 with a per-user salt; sessions as SHA-256 digests, expiring after 30 days.
 */

import { eq, sql } from "drizzle-orm";
import { Hono } from "hono";
import * as v from "valibot";
import { appUsers, sessions } from "../../../schema/index.ts";
import { burnPasswordCheck, hashPassword, issueCredential, verifyPassword } from "../../accounts/crypto.ts";
import { EndUserCredentialsSchema, type Signin, SigninSchema } from "../../accounts/schemas.ts";
import { isUniqueViolation } from "../../db-errors.ts";
import { conflict, unauthorized } from "../../errors.ts";
import { parseInput } from "../../validate.ts";
import { authenticateClientKey, SESSION_TTL_MS, type SigninCandidate } from "../auth.ts";
import type { Db } from "../db.ts";
import type { AppEnv } from "../hono.ts";
import { noteActiveUser } from "../metering.ts";
import { clientIp, enforceRateLimit } from "../rate-limit.ts";
import { jsonBody } from "../request.ts";
import { requireClientKey, requireEndUser } from "../require.ts";

const BAD_CREDENTIALS = "invalid email or password";

/** The insert of a new session row and the token to hand out (once). */
async function newSession(db: Db, projectId: string, userId: string) {
  const session = await issueCredential("session");
  const expiresAt = new Date(Date.now() + SESSION_TTL_MS);
  const insert = db
    .insert(sessions)
    .values({ id: session.id, projectId, userId, secretHash: session.secretHash, expiresAt });
  return { insert, token: session.token, expiresAt };
}

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
  const db = c.var.db;
  const userId = crypto.randomUUID();
  const password = await hashPassword(input.password);
  const session = await newSession(db, project.id, userId);
  try {
    await db.batch([
      db.insert(appUsers).values({
        id: userId,
        projectId: project.id,
        email: input.email,
        passwordHash: password.hash,
        passwordSalt: password.salt,
        passwordIterations: password.iterations,
      }),
      session.insert,
    ]);
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict("a user with this email already exists");
    throw err;
  }
  noteActiveUser(c, project.id, userId);
  return c.json(
    { session_token: session.token, expires_at: session.expiresAt, user: { id: userId, email: input.email } },
    201,
  );
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
  const session = await newSession(c.var.db, project.id, user.id);
  await session.insert;
  noteActiveUser(c, project.id, user.id);
  return c.json({
    session_token: session.token,
    expires_at: session.expiresAt,
    user: { id: user.id, email: user.email },
  });
});

authRoutes.post("/v1/auth/signout", requireEndUser(), async (c) => {
  await c.var.db
    .update(sessions)
    .set({ revokedAt: sql`coalesce(${sessions.revokedAt}, now())` })
    .where(eq(sessions.id, c.var.sessionId));
  return c.json({ signed_out: true });
});

authRoutes.get("/v1/auth/me", requireEndUser(), async (c) => {
  return c.json({ user: c.var.endUser, project: { id: c.var.project.id } });
});
