/**
 * The Worker's rate-limit port remembers a refusal for a moment (REFUSAL_MEMORY_MS): the key is
 * refused again without asking the binding. A read counted in the background (`inBackground`) does
 * not wait for the answer: a refusal it learns after the response refuses the key's next calls.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  clientIp,
  enforceRateLimit,
  RATE_LIMIT_DEADLINE_MS,
  RateLimitedError,
  RateLimiterUnavailableError,
  REFUSAL_MEMORY_MS,
  rateLimitAddress,
  rateLimiter,
  withProjectLimit,
} from "../../src/worker/rate-limit.ts";
import { countingLimiter } from "../fixtures.ts";

afterEach(() => {
  vi.useRealTimers();
});

describe("rate-limit port", () => {
  it("refuses a key it was just refused without asking the binding, then asks again", async () => {
    vi.useFakeTimers();
    const RATE_LIMITER = countingLimiter(2);
    const limit = rateLimiter({ RATE_LIMITER });
    await limit("a", "caller a");
    await limit("a", "caller a");
    await expect(limit("a", "caller a")).rejects.toBeInstanceOf(RateLimitedError);
    expect(RATE_LIMITER.calls.get("a")).toBe(3);

    await expect(limit("a", "caller a")).rejects.toThrow(/rate limit exceeded for caller a/);
    expect(RATE_LIMITER.calls.get("a")).toBe(3);
    await limit("b", "caller b");

    vi.advanceTimersByTime(REFUSAL_MEMORY_MS + 1);
    await expect(limit("a", "caller a")).rejects.toBeInstanceOf(RateLimitedError);
    expect(RATE_LIMITER.calls.get("a")).toBe(4);
  });

  it("keeps bindings apart and never refuses without a binding", async () => {
    const RATE_LIMITER_LOW = countingLimiter(0);
    const low = rateLimiter({ RATE_LIMITER_LOW }, "RATE_LIMITER_LOW");
    await expect(low("k", "k")).rejects.toBeInstanceOf(RateLimitedError);
    const standard = rateLimiter({ RATE_LIMITER: countingLimiter(1) });
    await standard("k", "k");
    const none = rateLimiter({}, "RATE_LIMITER_LOW", () => {});
    await none("k", "k");
    none.inBackground?.("k", "k");
  });

  it("counts a read in the background: the answer lands after the call, and a refusal refuses the next calls", async () => {
    const RATE_LIMITER = countingLimiter(1);
    const pending: Promise<unknown>[] = [];
    const limit = rateLimiter({ RATE_LIMITER }, "RATE_LIMITER", (p) => pending.push(p));
    expect(rateLimiter({ RATE_LIMITER }).inBackground).toBeUndefined();

    limit.inBackground?.("r", "reader");
    limit.inBackground?.("r", "reader"); // over the limit: not known yet, so not refused
    expect(RATE_LIMITER.calls.get("r")).toBe(2);
    expect(pending).toHaveLength(2);
    await Promise.all(pending);

    expect(() => limit.inBackground?.("r", "reader")).toThrow(RateLimitedError);
    await expect(limit("r", "reader")).rejects.toThrow(/rate limit exceeded for reader/);
    expect(RATE_LIMITER.calls.get("r")).toBe(2);
    limit.inBackground?.("other", "other reader");
  });

  it("a failing binding allows the call, awaited or in the background, and is asked again", async () => {
    const pending: Promise<unknown>[] = [];
    const failing = { limit: async () => Promise.reject(new Error("limiter down")) };
    const error = vi.spyOn(console, "error").mockImplementation(() => {});
    const limit = rateLimiter({ RATE_LIMITER: failing }, "RATE_LIMITER", (p) => pending.push(p));
    await limit("f", "f");
    limit.inBackground?.("f", "f");
    await Promise.all(pending);
    limit.inBackground?.("f", "f"); // not remembered as a refusal: asked again
    await Promise.all(pending);
    expect(error).toHaveBeenCalledTimes(3);
    error.mockRestore();
  });

  it("a binding that answers late lets the waiting call go on, and its refusal still refuses the next calls", async () => {
    vi.useFakeTimers();
    let refuse!: () => void;
    const slow = {
      limit: () =>
        new Promise<{ success: boolean }>((resolve) => {
          refuse = () => resolve({ success: false });
        }),
    };
    const error = vi.spyOn(console, "error").mockImplementation(() => {});
    const limit = rateLimiter({ RATE_LIMITER: slow });
    const waiting = limit("s", "slow caller");
    await vi.advanceTimersByTimeAsync(RATE_LIMIT_DEADLINE_MS);
    await waiting; // allowed: not a hang, not an error
    expect(error).toHaveBeenCalledOnce();
    error.mockRestore();
    refuse();
    await vi.advanceTimersByTimeAsync(0);
    await expect(limit("s", "slow caller")).rejects.toBeInstanceOf(RateLimitedError);
  });

  it("the auth limiters fail closed: a failing or late binding refuses the attempt with 503", async () => {
    vi.useFakeTimers();
    const error = vi.spyOn(console, "error").mockImplementation(() => {});
    const failing = { limit: async () => Promise.reject(new Error("limiter down")) };
    const silent = { limit: () => new Promise<{ success: boolean }>(() => {}) };
    for (const name of ["AUTH_RATE_LIMITER", "AUTH_IP_RATE_LIMITER"] as const) {
      const refused = enforceRateLimit({ [name]: failing }, "signin:p:e", "sign-ins", name);
      await expect(refused).rejects.toBeInstanceOf(RateLimiterUnavailableError);
      await expect(refused).rejects.toMatchObject({ status: 503, code: "rate_limiter_unavailable" });
      const late = enforceRateLimit({ [name]: silent }, "signin:p:e", "sign-ins", name);
      const settled = expect(late).rejects.toBeInstanceOf(RateLimiterUnavailableError);
      await vi.advanceTimersByTimeAsync(RATE_LIMIT_DEADLINE_MS);
      await settled;
    }
    // The same failures on a caller limiter let the request go on.
    await enforceRateLimit({ RATE_LIMITER: failing }, "k", "k", "RATE_LIMITER");
    await enforceRateLimit({ ADMIN_RATE_LIMITER: failing }, "k", "k", "ADMIN_RATE_LIMITER");
    error.mockRestore();
  });

  it("counts every caller of an app against the app's aggregate budget too, awaited or in the background", async () => {
    const RATE_LIMITER = countingLimiter(100);
    const PROJECT_RATE_LIMITER = countingLimiter(3);
    const env = { RATE_LIMITER, PROJECT_RATE_LIMITER };
    const pending: Promise<unknown>[] = [];
    const waitUntil = (p: Promise<unknown>) => pending.push(p);
    const app = (id: string) =>
      withProjectLimit(env, rateLimiter(env, "RATE_LIMITER", waitUntil), id, waitUntil);
    await app("p1")("mcp:p1:user:1", "caller 1");
    app("p1").inBackground?.("mcp:p1:user:2", "caller 2");
    await Promise.all(pending);
    await app("p1")("mcp:p1:user:3", "caller 3");
    expect(PROJECT_RATE_LIMITER.calls.get("project:p1")).toBe(3);
    // A fourth caller, new to its own tier, is over the app's budget.
    await expect(app("p1")("mcp:p1:user:4", "caller 4")).rejects.toThrow(
      /this app \(all its callers together\)/,
    );
    expect(() => app("p1").inBackground?.("mcp:p1:user:5", "caller 5")).toThrow(RateLimitedError);
    // Another app is untouched.
    await app("p2")("mcp:p2:user:1", "caller 1");
  });
});

describe("clientIp", () => {
  it("is no per-IP caller for a loopback address (npm run dev's clients; Cloudflare never sends one)", () => {
    const of = (ip: string) => clientIp(new Headers({ "cf-connecting-ip": ip }));
    for (const ip of ["127.0.0.1", "127.3.2.1", "::1", "0:0:0:0:0:0:0:1", "::ffff:127.0.0.1"]) {
      expect(of(ip), ip).toBeNull();
    }
    expect(of("203.0.113.7")).toBe("203.0.113.7");
    expect(of("128.0.0.1")).toBe("128.0.0.1");
    expect(of("127.evil")).toBe("127.evil");
    expect(of("::2")).toBe("0:0:0:0::/64");
    expect(of("::ffff:198.51.100.4")).toBe("198.51.100.4");
    expect(clientIp(new Headers())).toBeNull();
  });
});

describe("rateLimitAddress", () => {
  it("counts an IPv6 address by its /64, an IPv4 one (also IPv4-mapped) as it is", () => {
    for (const [ip, key] of [
      ["203.0.113.7", "203.0.113.7"],
      ["2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"],
      ["2001:DB8:1:2::9", "2001:db8:1:2::/64"],
      ["2001:0db8:0001:0002:ffff::1", "2001:db8:1:2::/64"],
      ["2001:db8::7:1234", "2001:db8:0:0::/64"],
      ["::1", "0:0:0:0::/64"],
      ["::", "0:0:0:0::/64"],
      ["fe80::1:2:3:4", "fe80:0:0:0::/64"],
      ["::ffff:198.51.100.4", "198.51.100.4"],
      ["64:ff9b::198.51.100.4", "64:ff9b:0:0::/64"],
    ]) {
      expect(rateLimitAddress(ip as string), ip).toBe(key);
    }
  });

  it("keeps what is no address as it came (its own key)", () => {
    for (const ip of [
      "1::2::3",
      "1:2:3:4:5:6:7:8:9",
      "1:2:3",
      "12345::1",
      "::ffff:300.1.1.1",
      "g::1",
      "unknown",
    ]) {
      expect(rateLimitAddress(ip)).toBe(ip);
    }
  });
});
