/**
 * The caller rate limits an app may choose, per minute and caller (project × developer or end
 * user). Tiers, not any number: each is its own Workers Rate Limiting binding, and a binding's limit
 * is fixed at deploy time (src/worker/rate-limit.ts maps them). Declared here, not with the app-MCP
 * config (src/app-mcp/admin.ts), because credential resolution on the Worker's hot path needs the
 * default while the config module (its tables, its schemas) loads only with the control plane.
 */
export const RATE_LIMIT_TIERS = [600, 6_000, 60_000] as const;
export type RateLimitTier = (typeof RATE_LIMIT_TIERS)[number];

/** The tier of an app that never chose one (the column's default). */
export const DEFAULT_RATE_LIMIT: RateLimitTier = 6_000;

/**
 * The rate-limit port services take: count one call against `key` and throw (429 `rate_limited`,
 * naming `what`) when the caller is over its limit. The Worker passes one backed by its Rate
 * Limiting bindings (`rateLimiter` in src/worker/rate-limit.ts); tests pass fakes.
 */
export interface Limiter {
  (key: string, what: string): Promise<void>;
  /**
   * Count one call against `key` without waiting for the answer (reads only). Throws at once (429)
   * when `key` was refused moments ago, answered from memory; otherwise the caller goes on and the
   * answer arrives after it: a refusal refuses the key's next calls from memory. A caller over its
   * limit therefore gets at most the reads it has in flight while the limiter answers, and a read
   * costs no limiter round trip on its way. Absent where the host cannot finish work after the
   * response; callers then await the call above.
   */
  inBackground?(key: string, what: string): void;
}

/**
 * The rate-limit key of an app's caller: one per project and developer or end user, shared by the
 * app MCP's tool calls and the SDK data routes, so the app's tier is one budget per caller. Here,
 * not with the app MCP's handlers, because the data routes key on it before any service loads.
 */
export function appCallerKey(
  principal: { project: { id: string } } & (
    | { scope: "developer"; developerId: string }
    | { scope: "end_user"; user: { id: string } }
  ),
): string {
  const caller =
    principal.scope === "developer" ? `dev:${principal.developerId}` : `user:${principal.user.id}`;
  return `mcp:${principal.project.id}:${caller}`;
}

/**
 * The rate-limit key of an app's client code sending events: a signed-in end user is the caller
 * {@link appCallerKey} names (one budget with their data-route and app-MCP calls); a caller without
 * a session is counted by its address (`clientIp`), or — where there is none — by the client key,
 * which all of an app's anonymous callers then share.
 */
export function appClientKey(
  client: { project: { id: string }; clientKeyId: string; user?: { id: string } },
  ip: string | null,
): string {
  if (client.user) return appCallerKey({ scope: "end_user", project: client.project, user: client.user });
  return `mcp:${client.project.id}:${ip === null ? `key:${client.clientKeyId}` : `ip:${ip}`}`;
}

/** A limiter that never refuses (hosts without limits, tests that do not exercise them). */
export const unlimited: Limiter = async () => {};
