/**
 * The Workers Rate Limiting bindings (wrangler.toml) behind one call: a key per caller and
 * surface, 429 `rate_limited` with `Retry-After` when it is exhausted. Without the binding (other
 * hosts), nothing is limited.
 *
 * - `RATE_LIMITER` (6,000/min): function invocations, app callers (app MCP and SDK data routes; the
 *   default tier), end-user sign-ups per email.
 * - `RATE_LIMITER_LOW` (600/min), `RATE_LIMITER_HIGH` (60,000/min): app callers of apps that chose
 *   that tier (`rate_limit_per_minute` in the app-MCP config). A binding's limit is fixed at deploy
 *   time, so an app picks one of these bindings rather than a number of its own.
 * - `AUTH_RATE_LIMITER` (10/min, strict): sign-in attempts per project and email, developer
 *   sign-ups per client IP (REST and the platform MCP's `amba_developer_signup` share the key).
 * - `AUTH_IP_RATE_LIMITER` (60/min): end-user sign-in and sign-up attempts per client IP; OAuth
 *   client registrations per client IP (a key of their own).
 */
import { AppError } from "../errors.ts";
import type { Limiter, RateLimitTier } from "../rate-limit.ts";
import type { Env } from "./env.ts";

/** The rate-limit bindings. */
export type RateLimiterName =
  | "RATE_LIMITER"
  | "RATE_LIMITER_LOW"
  | "RATE_LIMITER_HIGH"
  | "AUTH_RATE_LIMITER"
  | "AUTH_IP_RATE_LIMITER";

/** The binding behind each app-MCP caller tier (wrangler.toml `[[ratelimits]]` with that limit). */
export const TIER_LIMITERS: Record<RateLimitTier, RateLimiterName> = {
  600: "RATE_LIMITER_LOW",
  6000: "RATE_LIMITER",
  60000: "RATE_LIMITER_HIGH",
};

/** Seconds to wait before retrying: the bindings' period (the binding does not tell the rest). */
export const RETRY_AFTER_SECONDS = 60;

/** 429 `rate_limited`, rendered with a `Retry-After` header. */
export class RateLimitedError extends AppError {
  override readonly headers = { "retry-after": String(RETRY_AFTER_SECONDS) };

  constructor(what: string) {
    super(429, "rate_limited", `rate limit exceeded for ${what}; retry in ${RETRY_AFTER_SECONDS} s`);
    this.name = "RateLimitedError";
  }
}

/**
 * How long this isolate remembers that a binding refused a key: within it the key is refused
 * without asking the binding again (and `Limiter.refusing` says so). A refused caller waits at most
 * this much longer than the binding alone would make it wait.
 */
export const REFUSAL_MEMORY_MS = 1_000;
const REFUSALS_MAX = 10_000;
const refusals = new Map<string, number>();

function refusedRecently(id: string, now = Date.now()): boolean {
  const until = refusals.get(id);
  if (until === undefined) return false;
  if (until > now) return true;
  refusals.delete(id);
  return false;
}

function rememberRefusal(id: string): void {
  if (refusals.size >= REFUSALS_MAX) refusals.delete(refusals.keys().next().value as string);
  refusals.set(id, Date.now() + REFUSAL_MEMORY_MS);
}

/** Count one request against `key` on `limiter`; throw 429 naming `what` when the limit is reached. */
export async function enforceRateLimit(
  env: Partial<Pick<Env, RateLimiterName>>,
  key: string,
  what: string,
  limiter: RateLimiterName = "RATE_LIMITER",
): Promise<void> {
  const binding = env[limiter];
  if (!binding) return;
  const id = `${limiter}|${key}`;
  if (refusedRecently(id)) throw new RateLimitedError(what);
  const { success } = await binding.limit({ key });
  if (success) return;
  rememberRefusal(id);
  throw new RateLimitedError(what);
}

/** The services' rate-limit port over one binding (`RATE_LIMITER` by default). */
export const rateLimiter = (
  env: Partial<Pick<Env, RateLimiterName>>,
  limiter: RateLimiterName = "RATE_LIMITER",
): Limiter =>
  Object.assign((key: string, what: string) => enforceRateLimit(env, key, what, limiter), {
    refusing: (key: string) => env[limiter] !== undefined && refusedRecently(`${limiter}|${key}`),
  });

/**
 * The caller's IP as Cloudflare reports it (`cf-connecting-ip`, set on every request at the edge),
 * or null where there is none (in-process tests, other hosts): per-IP limits then do not apply.
 */
export function clientIp(headers: Headers): string | null {
  return headers.get("cf-connecting-ip")?.trim() || null;
}
