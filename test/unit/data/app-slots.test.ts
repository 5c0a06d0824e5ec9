import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  AppSlots,
  MAX_SLOT_POLL_MS,
  SLOT_POLL_MS,
  TooManyConcurrentError,
} from "../../../src/data/app-slots.ts";

const limits = { inFlight: 2, waiting: 2, waitMs: 1000, leaseMs: 5000 };

/** A piece of work that ends when the test says so. */
function held() {
  let finish!: () => void;
  let fail!: (err: Error) => void;
  const done = new Promise<string>((resolve, reject) => {
    finish = () => resolve("done");
    fail = reject;
  });
  return { work: () => done, finish, fail };
}

describe("AppSlots", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("runs `inFlight` per app, lets `waiting` more wait, refuses the next; other apps go on", async () => {
    const slots = new AppSlots(limits);
    const works = [held(), held(), held(), held()];
    const runs = works.map((w) => slots.run("a", w.work));
    expect([slots.running("a"), slots.waiting("a")]).toEqual([2, 2]);
    await expect(slots.run("a", async () => "x")).rejects.toThrow(TooManyConcurrentError);
    await expect(slots.run("a", async () => "x")).rejects.toMatchObject({
      status: 429,
      code: "too_many_concurrent_requests",
      headers: { "retry-after": "1" },
    });
    expect(await slots.run("b", async () => "b's call")).toBe("b's call");
    works[0]?.finish();
    expect(await runs[0]).toBe("done");
    // One waiter takes the freed slot at its next look; the other still waits.
    await vi.advanceTimersByTimeAsync(SLOT_POLL_MS);
    expect([slots.running("a"), slots.waiting("a")]).toEqual([2, 1]);
    for (const w of works) w.finish();
    await vi.advanceTimersByTimeAsync(SLOT_POLL_MS);
    expect(await Promise.all(runs)).toEqual(["done", "done", "done", "done"]);
    expect(slots.size).toBe(0);
  });

  it("looks less often behind a deep queue: about `inFlight` looks per poll interval in all", async () => {
    const slots = new AppSlots({ ...limits, waiting: 10, waitMs: 5000 });
    const works = [held(), held()];
    const runs = works.map((w) => slots.run("a", w.work));
    const waiters = Array.from({ length: 10 }, (_, i) => slots.run("a", async () => `w${i}`));
    const timers = vi.spyOn(globalThis, "setTimeout");
    // One second with both slots held: at one look per SLOT_POLL_MS each, ten waiters would set
    // 1,000 timers; five per slot, they look every 5 × SLOT_POLL_MS — about 200.
    await vi.advanceTimersByTimeAsync(1000);
    const looks = timers.mock.calls.length;
    timers.mockRestore();
    expect(looks).toBeGreaterThan(150);
    expect(looks).toBeLessThan(250);
    for (const w of works) w.finish();
    await vi.advanceTimersByTimeAsync(MAX_SLOT_POLL_MS * 10);
    expect(await Promise.all(runs)).toEqual(["done", "done"]);
    expect((await Promise.all(waiters)).sort()).toEqual(Array.from({ length: 10 }, (_, i) => `w${i}`).sort());
    expect(slots.size).toBe(0);
  });

  it("lets no new call pass a waiting one", async () => {
    const slots = new AppSlots(limits);
    const works = [held(), held()];
    const runs = works.map((w) => slots.run("a", w.work));
    const waiter = slots.run("a", async () => "waiter");
    works[0]?.finish();
    await runs[0];
    // A slot is free, but a call is waiting: the newcomer waits behind it.
    const newcomer = slots.run("a", async () => "newcomer");
    expect([slots.running("a"), slots.waiting("a")]).toEqual([1, 2]);
    works[1]?.finish();
    await vi.advanceTimersByTimeAsync(SLOT_POLL_MS);
    expect(await Promise.all([waiter, newcomer])).toEqual(["waiter", "newcomer"]);
    expect(slots.size).toBe(0);
  });

  it("releases the slot of work that throws, and forgets an idle app", async () => {
    const slots = new AppSlots(limits);
    for (let i = 0; i < 5; i++) {
      await expect(
        slots.run("a", async () => {
          throw new Error("boom");
        }),
      ).rejects.toThrow("boom");
    }
    const failing = [held(), held()];
    const runs = failing.map((w) => slots.run("a", w.work));
    for (const w of failing) w.fail(new Error("lost"));
    await expect(Promise.all(runs)).rejects.toThrow("lost");
    await Promise.allSettled(runs);
    expect(slots.size).toBe(0);
    expect(await Promise.all([1, 2].map(() => slots.run("a", async () => "ok")))).toEqual(["ok", "ok"]);
    expect(slots.running("a")).toBe(0);
  });

  it("refuses a waiter whose wait is over and counts it out", async () => {
    const slots = new AppSlots(limits);
    const works = [held(), held()];
    const runs = works.map((w) => slots.run("a", w.work));
    const late = slots.run("a", async () => "late");
    const refused = expect(late).rejects.toMatchObject({
      code: "too_many_concurrent_requests",
      message: expect.stringContaining("within 1 s"),
    });
    await vi.advanceTimersByTimeAsync(limits.waitMs);
    await refused;
    expect(slots.waiting("a")).toBe(0);
    for (const w of works) w.finish();
    await Promise.all(runs);
    expect(slots.size).toBe(0);
  });

  it("counts a slot free again once its lease lapses: a cancelled request never reaches its finally", async () => {
    const slots = new AppSlots(limits);
    const never = () => new Promise<never>(() => {});
    void slots.run("a", never);
    void slots.run("a", never);
    expect(slots.running("a")).toBe(2);
    const waiter = expect(slots.run("a", async () => "in time")).rejects.toMatchObject({
      code: "too_many_concurrent_requests",
    });
    await vi.advanceTimersByTimeAsync(limits.waitMs);
    await waiter;
    await vi.advanceTimersByTimeAsync(limits.leaseMs - limits.waitMs);
    expect(slots.running("a")).toBe(0);
    expect(slots.size).toBe(0);
    expect(await slots.run("a", async () => "runs")).toBe("runs");
  });
});
