/**
 * The Worker's rate-limit port remembers a refusal for a moment (REFUSAL_MEMORY_MS): the key is
 * refused again without asking the binding, and `refusing` answers synchronously — what lets the app
 * MCP run a read while the limiter answers without restarting that work for a refused caller.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { RateLimitedError, REFUSAL_MEMORY_MS, rateLimiter } from "../../src/worker/rate-limit.ts";

/** A binding that allows the first `allowed` calls per key, and counts every call. */
function binding(allowed: number) {
  const calls = new Map<string, number>();
  return {
    calls,
    limit: async ({ key }: { key: string }) => {
      const n = (calls.get(key) ?? 0) + 1;
      calls.set(key, n);
      return { success: n <= allowed };
    },
  };
}

afterEach(() => {
  vi.useRealTimers();
});

describe("rate-limit port", () => {
  it("refuses a key it was just refused without asking the binding, then asks again", async () => {
    vi.useFakeTimers();
    const RATE_LIMITER = binding(2);
    const limit = rateLimiter({ RATE_LIMITER });
    await limit("a", "caller a");
    await limit("a", "caller a");
    expect(limit.refusing?.("a")).toBe(false);
    await expect(limit("a", "caller a")).rejects.toBeInstanceOf(RateLimitedError);
    expect(RATE_LIMITER.calls.get("a")).toBe(3);

    expect(limit.refusing?.("a")).toBe(true);
    expect(limit.refusing?.("b")).toBe(false);
    await expect(limit("a", "caller a")).rejects.toThrow(/rate limit exceeded for caller a/);
    expect(RATE_LIMITER.calls.get("a")).toBe(3);
    await limit("b", "caller b");

    vi.advanceTimersByTime(REFUSAL_MEMORY_MS + 1);
    expect(limit.refusing?.("a")).toBe(false);
    await expect(limit("a", "caller a")).rejects.toBeInstanceOf(RateLimitedError);
    expect(RATE_LIMITER.calls.get("a")).toBe(4);
  });

  it("keeps bindings apart and never refuses without a binding", async () => {
    const RATE_LIMITER_LOW = binding(0);
    const low = rateLimiter({ RATE_LIMITER_LOW }, "RATE_LIMITER_LOW");
    await expect(low("k", "k")).rejects.toBeInstanceOf(RateLimitedError);
    expect(low.refusing?.("k")).toBe(true);
    const standard = rateLimiter({ RATE_LIMITER: binding(1) });
    expect(standard.refusing?.("k")).toBe(false);
    await standard("k", "k");
    const none = rateLimiter({}, "RATE_LIMITER_LOW");
    expect(none.refusing?.("k")).toBe(false);
    await none("k", "k");
  });
});
