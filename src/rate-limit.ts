/**
 * The rate-limit port services take: count one call against `key` and throw (429 `rate_limited`,
 * naming `what`) when the caller is over its limit. The Worker passes one backed by its Rate
 * Limiting bindings (`rateLimiter` in src/worker/rate-limit.ts); tests pass fakes.
 */
export interface Limiter {
  (key: string, what: string): Promise<void>;
  /**
   * Whether `key` was refused moments ago, answered from memory (synchronous, no round trip). A
   * caller that starts work while the limiter answers (a read whose result is dropped on a refusal)
   * asks this first, so a refused caller does not get that work started again and again.
   */
  refusing?(key: string): boolean;
}

/** A limiter that never refuses (hosts without limits, tests that do not exercise them). */
export const unlimited: Limiter = async () => {};
