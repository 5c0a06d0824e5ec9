/**
 * An app's end users: sign-up, sessions, sign-out — what `/v1/auth/*` and the OAuth sign-in page
 * do with the database. Passwords are stored as PBKDF2-SHA256 with a per-user salt; sessions as
 * SHA-256 digests of their secret, expiring {@link SESSION_TTL_MS} after they start. Rate limits
 * and the client key stay with the surfaces (they are the Worker's bindings); the password check
 * itself is in src/worker/routes/auth.ts `checkSigninPassword`, behind its limiter.
 */
import { eq, sql } from "drizzle-orm";
import { appUsers, sessions } from "../../schema/index.ts";
import type { Db } from "../db.ts";
import { isUniqueViolation } from "../db-errors.ts";
import { conflict } from "../errors.ts";
import { hashPassword, issueCredential } from "./crypto.ts";
import type { EndUserCredentials } from "./schemas.ts";

/** End-user session lifetime: 30 days from sign-up / sign-in (no sliding renewal). */
export const SESSION_TTL_MS = 30 * 24 * 60 * 60 * 1000;

/** A started session as `/v1/auth/signup` and `/v1/auth/signin` answer it (the token is shown once). */
export interface SessionView {
  session_token: string;
  expires_at: Date;
  user: { id: string; email: string };
}

/** The insert of a new session row and its view (sent with the insert, or in a batch with the user). */
async function newSession(db: Db, projectId: string, user: { id: string; email: string }) {
  const session = await issueCredential("session");
  const expiresAt = new Date(Date.now() + SESSION_TTL_MS);
  const insert = db
    .insert(sessions)
    .values({ id: session.id, projectId, userId: user.id, secretHash: session.secretHash, expiresAt });
  const view: SessionView = { session_token: session.token, expires_at: expiresAt, user };
  return { insert, view };
}

/** A new end user of `projectId` and their first session, in one transaction; 409 for a taken email. */
export async function signupEndUser(
  db: Db,
  projectId: string,
  input: EndUserCredentials,
): Promise<SessionView> {
  const user = { id: crypto.randomUUID(), email: input.email };
  const password = await hashPassword(input.password);
  const session = await newSession(db, projectId, user);
  try {
    await db.batch([
      db.insert(appUsers).values({
        id: user.id,
        projectId,
        email: user.email,
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
  return session.view;
}

/**
 * Sessions a user keeps: each sign-in starts one, so without a bound one account's sign-ins (10 a
 * minute) would grow the table by 400,000 rows a month. A sign-in past it signs out the oldest.
 */
export const MAX_SESSIONS_PER_USER = 100;

/** How long an expired session is kept, so that using it still answers "expired" rather than "invalid". */
const EXPIRED_SESSION_KEPT = "7 days";

/**
 * A new session for a user whose password was just checked. In the same round trip (one
 * transaction), the user's sessions past the newest {@link MAX_SESSIONS_PER_USER} and those expired
 * over {@link EXPIRED_SESSION_KEPT} ago are deleted.
 */
export async function startSession(
  db: Db,
  projectId: string,
  user: { id: string; email: string },
): Promise<SessionView> {
  const session = await newSession(db, projectId, user);
  await db.batch([
    session.insert,
    db.execute(sql`
      with kept as (
        select id from sessions
        where user_id = ${user.id}::uuid and expires_at >= now() - ${EXPIRED_SESSION_KEPT}::interval
        order by created_at desc, id desc
        limit ${MAX_SESSIONS_PER_USER}
      )
      delete from sessions
      where user_id = ${user.id}::uuid and id not in (select id from kept)`),
  ]);
  return session.view;
}

/** Revoke a session (sign-out); revoking it again keeps the first revocation time. */
export async function revokeSession(db: Db, sessionId: string): Promise<void> {
  await db
    .update(sessions)
    .set({ revokedAt: sql`coalesce(${sessions.revokedAt}, now())` })
    .where(eq(sessions.id, sessionId));
}
