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
    // A waiter takes the freed slot at its next look; the other still waits.
    await vi.advanceTimersByTimeAsync(SLOT_POLL_MS);
    expect([slots.running("a"), slots.waiting("a")]).toEqual([2, 1]);
    for (const w of works) w.finish();
    await vi.advanceTimersByTimeAsync(MAX_SLOT_POLL_MS); // the waiters' next looks
    expect(await Promise.all(runs)).toEqual(["done", "done", "done", "done"]);
    expect(slots.size).toBe(0);
  });

  it("serves waiters in arrival order, to within the `inFlight` at the front", async () => {
    const slots = new AppSlots({ ...limits, waiting: 10 });
    const works = [held(), held()];
    const runs = works.map((w) => slots.run("a", w.work));
    const order: number[] = [];
    const waiters = Array.from({ length: 10 }, (_, i) =>
      slots.run("a", async () => {
        order.push(i);
        return i;
      }),
    );
    expect([slots.running("a"), slots.waiting("a")]).toEqual([2, 10]);
    works[0]?.finish();
    works[1]?.finish();
    await vi.advanceTimersByTimeAsync(10 * MAX_SLOT_POLL_MS);
    expect(await Promise.all([...runs, ...waiters])).toEqual(["done", "done", ...order.keys()]);
    // Each waiter ran at most `inFlight` (2) places away from its place in the queue.
    for (const [place, waiter] of order.entries()) expect(Math.abs(place - waiter)).toBeLessThan(2);
    expect(slots.size).toBe(0);
  });

  it("lets no new call pass a waiting one", async () => {
    const slots = new AppSlots(limits);
    const [first, second, waiting, newer] = [held(), held(), held(), held()];
    const runs = [first, second].map((w) => slots.run("a", w.work));
    const order: string[] = [];
    const started = (name: string, work: () => Promise<string>) => () => {
      order.push(name);
      return work();
    };
    const waiter = slots.run("a", started("waiter", waiting.work));
    const newcomer = slots.run("a", started("newcomer", newer.work));
    expect([slots.running("a"), slots.waiting("a")]).toEqual([2, 2]);
    first.finish();
    await runs[0];
    await vi.advanceTimersByTimeAsync(SLOT_POLL_MS); // the waiter's next look
    // The freed slot went to the call that waited first; the newcomer still waits.
    expect(order).toEqual(["waiter"]);
    expect([slots.running("a"), slots.waiting("a")]).toEqual([2, 1]);
    second.finish();
    await runs[1];
    await vi.advanceTimersByTimeAsync(2 * SLOT_POLL_MS);
    expect(order).toEqual(["waiter", "newcomer"]);
    waiting.finish();
    newer.finish();
    expect(await Promise.all([waiter, newcomer])).toEqual(["done", "done"]);
    expect(slots.size).toBe(0);
  });

  it("serves the developer's calls ahead of the end users' waiting ones", async () => {
    const slots = new AppSlots({ ...limits, waiting: 4 });
    const [first, second] = [held(), held()];
    const runs = [first, second].map((w) => slots.run("a", w.work));
    const order: string[] = [];
    const call = (name: string, developer: boolean) =>
      slots.run(
        "a",
        async () => {
          order.push(name);
          return name;
        },
        developer,
      );
    const users = [call("user 1", false), call("user 2", false)];
    const developer = call("developer", true);
    expect([slots.running("a"), slots.waiting("a")]).toEqual([2, 3]);
    first.finish();
    await runs[0];
    await vi.advanceTimersByTimeAsync(SLOT_POLL_MS);
    // The developer came last and takes the freed slot; the end users still wait.
    expect(order).toEqual(["developer"]);
    second.finish();
    await vi.advanceTimersByTimeAsync(MAX_SLOT_POLL_MS);
    expect(await Promise.all([...runs, ...users, developer])).toEqual([
      "done",
      "done",
      "user 1",
      "user 2",
      "developer",
    ]);
    expect(order.slice(0, 1)).toEqual(["developer"]);
    expect(slots.size).toBe(0);
  });

  it("counts out a waiter whose request was cancelled: it holds neither the queue nor the end users", async () => {
    const slots = new AppSlots(limits);
    const works = [held(), held()];
    const runs = works.map((w) => slots.run("a", w.work));
    // A developer call waits, then its request is cancelled: its timers never fire again, so it
    // never looks again and never reaches its finally.
    const swallow = vi.spyOn(globalThis, "setTimeout").mockImplementation((() => 0) as never);
    void slots.run("a", async () => "never", true);
    swallow.mockRestore();
    expect(slots.waiting("a")).toBe(1);
    for (const w of works) w.finish();
    await Promise.all(runs);
    // While it counts, an end user's call yields to it, though both slots are free.
    const user = slots.run("a", async () => "user");
    const refused = expect(user).rejects.toMatchObject({ code: "too_many_concurrent_requests" });
    await vi.advanceTimersByTimeAsync(limits.waitMs);
    await refused;
    // Past its wait and the grace it is counted out: the app's calls run again, the entry goes.
    await vi.advanceTimersByTimeAsync(2000);
    expect(slots.waiting("a")).toBe(0);
    expect(await slots.run("a", async () => "runs")).toBe("runs");
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
