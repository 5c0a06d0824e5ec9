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

/** A limiter that never refuses (hosts without limits, tests that do not exercise them). */
export const unlimited: Limiter = async () => {};
