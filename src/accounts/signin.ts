/**
 * The end-user sign-in password check, shared by `POST /v1/auth/signin` and the OAuth sign-in page
 * (src/worker/routes/auth.ts, src/worker/routes/oauth.ts). The user's stored password comes with
 * the credential resolution's one round trip (src/credentials/); this takes it and a rate-limit
 * port (src/rate-limit.ts), not the Worker's bindings.
 */
import { unauthorized } from "../errors.ts";
import type { Limiter } from "../rate-limit.ts";
import { burnPasswordCheck, type PasswordHash, verifyPassword } from "./crypto.ts";
import type { Signin } from "./schemas.ts";

/** A project user's stored password, as read for sign-in. */
export interface SigninCandidate {
  id: string;
  email: string;
  password: PasswordHash;
}

/** The one answer to a wrong password and to an unknown email alike. */
export const BAD_CREDENTIALS = "invalid email or password";

/**
 * Check a sign-in's password against `user` (the project's user with that email, or null):
 * rate-limited per project and email (`limit`: the Worker passes its `AUTH_RATE_LIMITER`), one
 * PBKDF2 run whether or not the user exists. Throws 401 on a mismatch.
 */
export async function checkSigninPassword(
  limit: Limiter,
  projectId: string,
  input: Signin,
  user: SigninCandidate | null,
): Promise<void> {
  // Each attempt costs a PBKDF2 run: limit attempts per project and email (credential stuffing).
  await limit(`signin:${projectId}:${input.email}`, "sign-ins with this email");
  const ok = user
    ? await verifyPassword(input.password, user.password)
    : await burnPasswordCheck(input.password);
  if (!user || !ok) throw unauthorized(BAD_CREDENTIALS);
}
