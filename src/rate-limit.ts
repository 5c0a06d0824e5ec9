/**
 * The rate-limit port services take: count one call against `key` and throw (429 `rate_limited`,
 * naming `what`) when the caller is over its limit. The Worker passes one backed by its Rate
 * Limiting bindings (`rateLimiter` in src/worker/rate-limit.ts); tests pass fakes.
 */
export type Limiter = (key: string, what: string) => Promise<void>;

/** A limiter that never refuses (hosts without limits, tests that do not exercise them). */
export const unlimited: Limiter = async () => {};
