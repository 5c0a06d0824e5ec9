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
 *   client registrations per client IP (a key of their own); OAuth requests that would fetch a
 *   client metadata document, per client IP (`oauth-client-metadata:<ip>`, src/oauth/cimd.ts).
 * - `ADMIN_RATE_LIMITER` (1,200/min): the control plane per developer — admin REST requests,
 *   platform MCP tool calls, console requests ({@link enforceDeveloperRateLimit}).
 * - `PROJECT_RATE_LIMITER` (60,000/min): everything an app's callers send to the data plane
 *   together, whatever tier the app chose ({@link withProjectLimit}).
 * - `CREDENTIAL_RATE_LIMITER` (600/min): credentials that failed their database check, per client
 *   address ({@link failedCredentialGuard}).
 *
 * A binding that fails or answers late lets the request go on (fail open), except the two AUTH
 * limiters ({@link FAIL_CLOSED}): they are what slows password guessing, so without an answer the
 * attempt is refused with 503 `rate_limiter_unavailable`.
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
  | "AUTH_IP_RATE_LIMITER"
  | "ADMIN_RATE_LIMITER"
  | "PROJECT_RATE_LIMITER"
  | "CREDENTIAL_RATE_LIMITER";

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
 * without asking the binding again. A refused caller waits at most this much longer than the
 * binding alone would make it wait; a read counted in the background (`countInBackground`) learns
 * of a refusal only here.
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

/**
 * How long a request waits for the binding. In production the binding answers from a counter on
 * the Worker's own machine (microseconds); locally miniflare serves it from a Durable Object that
 * answers a burst one call at a time. Past this the request goes on as allowed (the
 * {@link FAIL_CLOSED} limiters excepted), and the answer, when it comes, still refuses the key's
 * next calls: a slow or broken limiter must not take the platform down (fail open, as Envoy's
 * rate-limit filter does by default).
 */
export const RATE_LIMIT_DEADLINE_MS = 1_000;

/**
 * The limiters that refuse when they cannot answer: sign-in, sign-up and OAuth attempts. Their
 * budgets are what makes guessing passwords (and filling the OAuth client store) slow; letting
 * attempts through unlimited while the binding is down would hand an attacker exactly that window.
 * Refusing them costs little: existing sessions and tokens keep working, and a person retries.
 */
export const FAIL_CLOSED: ReadonlySet<RateLimiterName> = new Set([
  "AUTH_RATE_LIMITER",
  "AUTH_IP_RATE_LIMITER",
]);

/** How long a client should wait after a limiter that could not answer (it is usually brief). */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

/** 503 `rate_limiter_unavailable`: a {@link FAIL_CLOSED} limiter did not answer. */
export class RateLimiterUnavailableError extends AppError {
  override readonly headers = { "retry-after": String(UNAVAILABLE_RETRY_AFTER_SECONDS) };

  constructor(what: string) {
    super(
      503,
      "rate_limiter_unavailable",
      `the rate limit for ${what} cannot be checked right now; retry in ${UNAVAILABLE_RETRY_AFTER_SECONDS} s`,
    );
    this.name = "RateLimiterUnavailableError";
  }
}

/** A binding's answer: allowed, refused, or none (it failed or did not answer in time). */
type Answer = "allowed" | "refused" | "none";

/**
 * The binding's answer for `key`. A refusal is remembered (REFUSAL_MEMORY_MS) whenever it arrives;
 * a binding that fails answers "none" (logged), so the next call asks again.
 */
function answer(binding: RateLimit, key: string, id: string, limiter: RateLimiterName): Promise<Answer> {
  return binding.limit({ key }).then(
    ({ success }): Answer => {
      if (success) return "allowed";
      rememberRefusal(id);
      return "refused";
    },
    (err): Answer => {
      console.error(`rate limiter ${limiter} failed`, err);
      return "none";
    },
  );
}

/** `answer` within {@link RATE_LIMIT_DEADLINE_MS}; "none" (logged) when it comes later. */
async function answerInTime(pending: Promise<Answer>, limiter: RateLimiterName): Promise<Answer> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<Answer>((resolve) => {
    timer = setTimeout(() => {
      console.error(`rate limiter ${limiter} did not answer within ${RATE_LIMIT_DEADLINE_MS} ms`);
      resolve("none");
    }, RATE_LIMIT_DEADLINE_MS);
  });
  try {
    return await Promise.race([pending, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Count one request against `key` on `limiter`; throw 429 naming `what` when the limit is reached.
 * Without an answer the request goes on, unless `limiter` is {@link FAIL_CLOSED} (503).
 */
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
  const result = await answerInTime(answer(binding, key, id, limiter), limiter);
  if (result === "refused") throw new RateLimitedError(what);
  if (result === "none" && FAIL_CLOSED.has(limiter)) throw new RateLimiterUnavailableError(what);
}

/**
 * Count one request against `key` without waiting for the binding's answer (`Limiter.inBackground`):
 * throws at once when the key was refused moments ago; otherwise the answer is awaited through
 * `waitUntil`, after the response, and a refusal is remembered for REFUSAL_MEMORY_MS.
 */
export function countInBackground(
  env: Partial<Pick<Env, RateLimiterName>>,
  key: string,
  what: string,
  limiter: RateLimiterName,
  waitUntil: (promise: Promise<unknown>) => void,
): void {
  const binding = env[limiter];
  if (!binding) return;
  const id = `${limiter}|${key}`;
  if (refusedRecently(id)) throw new RateLimitedError(what);
  waitUntil(answer(binding, key, id, limiter));
}

/**
 * The services' rate-limit port over one binding (`RATE_LIMITER` by default). With `waitUntil`
 * (a request that can finish work after its response) it also counts reads in the background.
 */
export function rateLimiter(
  env: Partial<Pick<Env, RateLimiterName>>,
  limiter: RateLimiterName = "RATE_LIMITER",
  waitUntil?: (promise: Promise<unknown>) => void,
): Limiter {
  const limit: Limiter = (key, what) => enforceRateLimit(env, key, what, limiter);
  if (waitUntil) {
    limit.inBackground = (key, what) => countInBackground(env, key, what, limiter, waitUntil);
  }
  return limit;
}

/** The key of a project's aggregate budget on `PROJECT_RATE_LIMITER`. */
export const projectRateLimitKey = (projectId: string): string => `project:${projectId}`;

/**
 * `limit` (an app caller's tier), with every call also counted against the app's aggregate budget,
 * `PROJECT_RATE_LIMITER` under {@link projectRateLimitKey}. The caller tier is per project and
 * caller, and an app has as many callers as it signs up end users, so the tier alone never bounded
 * what one app sends to the database every tenant shares; the aggregate budget does, whichever tier
 * the app chose (a tier is the developer's own choice, so the budget cannot follow it). Counted the
 * way the caller is: a read in the background (both keys refused at once only when refused moments
 * ago), anything else awaiting both answers, asked together — no round trip is added to either.
 */
export function withProjectLimit(
  env: Partial<Pick<Env, RateLimiterName>>,
  limit: Limiter,
  projectId: string,
  waitUntil?: (promise: Promise<unknown>) => void,
): Limiter {
  const project = projectRateLimitKey(projectId);
  const what = "this app (all its callers together)";
  const both: Limiter = async (key, callerWhat) => {
    await Promise.all([limit(key, callerWhat), enforceRateLimit(env, project, what, "PROJECT_RATE_LIMITER")]);
  };
  const { inBackground } = limit;
  if (inBackground && waitUntil) {
    both.inBackground = (key, callerWhat) => {
      inBackground(key, callerWhat);
      countInBackground(env, project, what, "PROJECT_RATE_LIMITER", waitUntil);
    };
  }
  return both;
}

/**
 * The rate-limit port of one data-plane request of an app (app MCP, SDK data routes, function
 * invoke): the caller's tier on `tier`, and for an end user the app's aggregate budget as well
 * ({@link withProjectLimit}). What multiplies an app's callers is signing up end users (each with
 * their OAuth grants), so that is what the aggregate budget counts; the developer is one caller per
 * app, whose own tier already bounds it, so an app sends at most its end users' aggregate budget
 * plus its developer's tier, and the developer's calls pay one limiter call, not two.
 */
export function appLimiter(
  env: Partial<Pick<Env, RateLimiterName>>,
  principal: { scope: "developer" | "end_user"; project: { id: string } },
  tier: RateLimiterName,
  waitUntil?: (promise: Promise<unknown>) => void,
): Limiter {
  const caller = rateLimiter(env, tier, waitUntil);
  return principal.scope === "end_user"
    ? withProjectLimit(env, caller, principal.project.id, waitUntil)
    : caller;
}

/**
 * The caller's address as the per-IP limits count it — from `cf-connecting-ip`, set on every
 * request at the edge — or null where there is none (in-process tests, other hosts) or it is a
 * loopback address: per-IP limits then do not apply. Cloudflare never reports a loopback client;
 * `wrangler dev` (`npm run dev`) reports every local client as one, so without this one machine's
 * test suite shared the per-IP budgets (its 11th developer sign-up in a minute was a 429). See
 * {@link rateLimitAddress}.
 */
export function clientIp(headers: Headers): string | null {
  const ip = headers.get("cf-connecting-ip")?.trim();
  if (!ip) return null;
  const key = rateLimitAddress(ip);
  const loopback = /^127(\.\d{1,3}){3}$/.test(key) || ipv6Hextets(ip)?.join(":") === "0:0:0:0:0:0:0:1";
  return loopback ? null : key;
}

/** Hextets of an IPv6 address (`::` expanded, an embedded IPv4 tail as two), or null when it is none. */
function ipv6Hextets(ip: string): number[] | null {
  const halves = ip.split("::");
  if (halves.length > 2) return null;
  const groups = halves.map((half) => (half === "" ? [] : half.split(":")));
  const out: number[][] = [];
  for (const half of groups) {
    const hextets: number[] = [];
    for (const [i, group] of half.entries()) {
      const v4 = i === half.length - 1 ? /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(group) : null;
      if (v4) {
        const [a, b, c, d] = v4.slice(1).map(Number) as [number, number, number, number];
        if ([a, b, c, d].some((n) => n > 255)) return null;
        hextets.push((a << 8) | b, (c << 8) | d);
      } else if (/^[0-9a-f]{1,4}$/i.test(group)) hextets.push(Number.parseInt(group, 16));
      else return null;
    }
    out.push(hextets);
  }
  const [head = [], tail = []] = out;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  return [...head, ...Array<number>(halves.length === 1 ? 0 : missing).fill(0), ...tail];
}

/**
 * The key an address is counted under: an IPv4 address as it is; an IPv6 address by its /64
 * (`2001:db8:1:2::/64`), the smallest block a host or a customer is given — counted per address,
 * one caller could rotate through 2^64 budgets (one per address) and register clients, open sign-in
 * pages or try passwords without end; an IPv4-mapped IPv6 address as its IPv4 address. Anything else
 * as it is. Pure.
 */
export function rateLimitAddress(ip: string): string {
  const hextets = ip.includes(":") ? ipv6Hextets(ip) : null;
  if (!hextets) return ip;
  if (hextets.slice(0, 5).every((h) => h === 0) && hextets[5] === 0xffff) {
    const [hi = 0, lo = 0] = hextets.slice(6);
    return [hi >> 8, hi & 255, lo >> 8, lo & 255].join(".");
  }
  return `${hextets
    .slice(0, 4)
    .map((h) => h.toString(16))
    .join(":")}::/64`;
}

/**
 * The budget of credential checks that fail, per client address. Failed checks are never cached
 * (src/worker/credential-cache.ts), and requests refused before a tool runs (`initialize`, `ping`,
 * anything with a wrong credential) count against no caller: without this, one address could send
 * well-formed made-up credentials without end, each a statement on the database every tenant
 * shares. `before` runs where a check is about to reach the database and refuses, from this
 * isolate's memory alone, an address whose failures the binding refused within the last
 * {@link REFUSAL_MEMORY_MS}; `failed` counts one failure in the background ({@link countInBackground}:
 * a refusal that arrived meanwhile makes this answer the 429 the next check would get). Only failures count —
 * a missing credential reaches no database and is not one: hosted assistants share their egress
 * addresses, and every MCP connection they open starts with a request without one. Credentials
 * this isolate has already resolved never reach `before` (the cache answers), so a refused address
 * slows only new credentials, for a second at a time; at most about one failing check a second per
 * isolate reaches the database from it.
 */
export function failedCredentialGuard(
  env: Partial<Pick<Env, RateLimiterName>>,
  headers: Headers,
  waitUntil: (promise: Promise<unknown>) => void,
): { before(): void; failed(): void } {
  const ip = clientIp(headers);
  const key = `failed-credentials:${ip}`;
  const what = "failed credential checks from this address";
  return {
    before() {
      if (ip !== null && refusedRecently(`CREDENTIAL_RATE_LIMITER|${key}`)) throw new RateLimitedError(what);
    },
    failed() {
      if (ip !== null) countInBackground(env, key, what, "CREDENTIAL_RATE_LIMITER", waitUntil);
    },
  };
}

/** The control-plane rate-limit key of a developer (`ADMIN_RATE_LIMITER`). */
export const developerRateLimitKey = (developerId: string): string => `developer:${developerId}`;

/**
 * Count one control-plane request of a developer (an admin REST request, a platform MCP tool call, a
 * console request) against `ADMIN_RATE_LIMITER`, whichever credential it came with (developer token,
 * OAuth grant, console cookie): one budget per developer, so one developer's loop cannot keep the
 * shared database busy for everyone else.
 */
export function enforceDeveloperRateLimit(
  env: Partial<Pick<Env, RateLimiterName>>,
  developerId: string,
): Promise<void> {
  return enforceRateLimit(
    env,
    developerRateLimitKey(developerId),
    "this developer's admin API, platform MCP and console requests",
    "ADMIN_RATE_LIMITER",
  );
}
