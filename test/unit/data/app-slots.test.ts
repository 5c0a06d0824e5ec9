import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { AppSlots, TooManyConcurrentError } from "../../../src/data/app-slots.ts";

const limits = { inFlight: 2, waiting: 2, waitMs: 1000 };

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

  it("runs `inFlight` per app, queues `waiting` more in order, refuses the next; other apps go on", async () => {
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
    // The slot passed to the first waiter: still 2 running, 1 waiting.
    expect([slots.running("a"), slots.waiting("a")]).toEqual([2, 1]);
    for (const w of works) w.finish();
    expect(await Promise.all(runs)).toEqual(["done", "done", "done", "done"]);
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

  it("refuses a waiter whose wait is over and takes it out of the queue", async () => {
    const slots = new AppSlots(limits);
    const works = [held(), held()];
    const runs = works.map((w) => slots.run("a", w.work));
    const late = slots.run("a", async () => "late");
    const refused = expect(late).rejects.toMatchObject({ code: "too_many_concurrent_requests" });
    await vi.advanceTimersByTimeAsync(limits.waitMs);
    await refused;
    expect(slots.waiting("a")).toBe(0);
    for (const w of works) w.finish();
    await Promise.all(runs);
    expect(slots.size).toBe(0);
  });
});
