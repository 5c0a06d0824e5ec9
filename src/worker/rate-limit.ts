/**
 * The Workers Rate Limiting binding (`RATE_LIMITER`, wrangler.toml) behind one call: a key per
 * caller and surface, 429 `rate_limited` when it is exhausted. Without the binding (other hosts),
 * nothing is limited.
 */
import { AppError } from "../errors.ts";
import type { Env } from "./env.ts";

/** Count one request against `key`; throw 429 naming `what` when the limit is reached. */
export async function enforceRateLimit(
  env: Pick<Env, "RATE_LIMITER">,
  key: string,
  what: string,
): Promise<void> {
  if (!env.RATE_LIMITER) return;
  const { success } = await env.RATE_LIMITER.limit({ key });
  if (!success) throw new AppError(429, "rate_limited", `rate limit exceeded for ${what}; retry in a minute`);
}
