import { describe, expect, it } from "vitest";
import { hashPassword } from "../../../src/accounts/crypto.ts";
import { checkSigninPassword, type SigninCandidate } from "../../../src/accounts/signin.ts";
import { AppError } from "../../../src/errors.ts";
import type { Limiter } from "../../../src/rate-limit.ts";

/** A limiter that records the keys it counted and refuses those in `refuse`. */
function recordingLimiter(refuse: string[] = []) {
  const counted: string[] = [];
  const limit: Limiter = async (key, what) => {
    counted.push(key);
    if (refuse.includes(key)) throw new AppError(429, "rate_limited", `too many ${what}`);
  };
  return { limit, counted };
}

const PROJECT = "0190c5a2-0000-7000-8000-000000000001";

async function candidate(password: string): Promise<SigninCandidate> {
  return { id: "u1", email: "ada@example.com", password: await hashPassword(password, 1_000) };
}

const statusOf = (promise: Promise<unknown>) =>
  promise.then(
    () => "ok",
    (err: unknown) => (err instanceof AppError ? `${err.status} ${err.message}` : String(err)),
  );

describe("checkSigninPassword", () => {
  it("accepts the user's password, counting one attempt per project and email", async () => {
    const { limit, counted } = recordingLimiter();
    const input = { email: "ada@example.com", password: "correct horse" };
    expect(await statusOf(checkSigninPassword(limit, PROJECT, input, await candidate("correct horse")))).toBe(
      "ok",
    );
    expect(counted).toEqual([`signin:${PROJECT}:ada@example.com`]);
  });

  it("refuses a wrong password and an unknown user with the same 401", async () => {
    const { limit } = recordingLimiter();
    const input = { email: "ada@example.com", password: "wrong" };
    const wrong = await statusOf(checkSigninPassword(limit, PROJECT, input, await candidate("right")));
    const unknown = await statusOf(checkSigninPassword(limit, PROJECT, input, null));
    expect([wrong, unknown]).toEqual(["401 invalid email or password", "401 invalid email or password"]);
  });

  it("answers the limiter's refusal before checking the password", async () => {
    const { limit } = recordingLimiter([`signin:${PROJECT}:ada@example.com`]);
    const input = { email: "ada@example.com", password: "right" };
    expect(await statusOf(checkSigninPassword(limit, PROJECT, input, await candidate("right")))).toBe(
      "429 too many sign-ins with this email",
    );
  });
});
