/**
 * The batched usage meter (src/usage/metering.ts) against the real database: a failed flush (the
 * database does not answer: `fault-endpoint.ts`'s `/hang`, under a short deadline) loses nothing,
 * a flush whose statement committed but whose answer was lost (`/lose`) is not counted twice when
 * retried, counts added while a flush runs go to the next one, the day (and so the period) is the
 * one of the call, a month is the sum of its days, and a deleted project's counts do not block the
 * others. Plus the daily read's range checks.
 */

import { env } from "cloudflare:workers";
import { describe, expect, inject, it } from "vitest";
import { DatabaseTimeoutError, toAppError } from "../../src/errors.ts";
import { dailyUsage, usageFor } from "../../src/usage/billing.ts";
import { UsageMeter, usageDay } from "../../src/usage/metering.ts";
import { createDb } from "../../src/worker/db.ts";
import type { Env } from "../../src/worker/env.ts";
import { apiJson, signupDeveloper, signupUser, testDb } from "./helpers.ts";

/** A database client behind the faulty endpoint: `hang` (every statement) or `lose` (every answer). */
const faultyDb = (mode: "hang" | "lose") =>
  createDb({
    ...(env as unknown as Env),
    LOCAL_DB_URL: `${inject("faultDbUrl")}/${mode}`,
    DB_TIMEOUT_MS: "500",
  });
const hangingDb = () => faultyDb("hang");

/** True when `flush` failed on the database deadline (drizzle wraps the driver's error). */
const timedOut = (flush: Promise<void>) =>
  flush.then(
    () => false,
    (err: unknown) => toAppError(err) instanceof DatabaseTimeoutError,
  );

const usage = async (projectId: string, period?: string) =>
  (await usageFor(testDb(), projectId, period)).usage;

/** One metric per day over a range, oldest first. */
const daily = async (projectId: string, from: string, to: string, metric = "agent_tool_calls") =>
  (await dailyUsage(testDb(), projectId, { from, to })).days.map((d) => [d.day, d.usage[metric]]);

describe("usage meter", () => {
  it("settle writes what is pending and waits for a flush under way (billing read-your-writes)", async () => {
    const dev = await signupDeveloper();
    const meter = new UsageMeter();
    meter.add(dev.projectId, "agent_tool_calls", 3);
    const running = meter.flush(testDb()); // taken out, statement under way
    meter.add(dev.projectId, "agent_tool_calls", 2); // pending again
    await meter.settle(testDb());
    expect(await usage(dev.projectId)).toMatchObject({ agent_tool_calls: 5 });
    expect(meter.pending()).toEqual([]);
    await running;
    // A failed write is kept for the next flush, not thrown at the reader.
    meter.add(dev.projectId, "agent_tool_calls");
    await meter.settle(hangingDb());
    expect(meter.pending()).toHaveLength(1);
    await meter.settle(testDb());
    expect(await usage(dev.projectId)).toMatchObject({ agent_tool_calls: 6 });
  });

  it("keeps the counts of a failed flush and writes them exactly once with the next", async () => {
    const dev = await signupDeveloper();
    const meter = new UsageMeter();
    for (let i = 0; i < 7; i++) meter.add(dev.projectId, "agent_tool_calls");
    meter.add(dev.projectId, "function_invocations", 2);

    expect(await timedOut(meter.flush(hangingDb()))).toBe(true);
    expect(await usage(dev.projectId)).toMatchObject({ agent_tool_calls: 0, function_invocations: 0 });
    expect(meter.pending()).toHaveLength(2);

    meter.add(dev.projectId, "agent_tool_calls");
    await meter.flush(testDb());
    expect(await usage(dev.projectId)).toEqual({
      agent_tool_calls: 8,
      function_invocations: 2,
      events: 0,
      mau: 0,
      storage_bytes: 0,
    });
    expect(meter.pending()).toEqual([]);
    const today = usageDay();
    expect((await dailyUsage(testDb(), dev.projectId, { from: today, to: today })).days).toEqual([
      { day: today, usage: { agent_tool_calls: 8, function_invocations: 2, events: 0 } },
    ]);
    // Nothing left to write twice.
    await meter.flush(testDb());
    expect(await usage(dev.projectId)).toEqual({
      agent_tool_calls: 8,
      function_invocations: 2,
      events: 0,
      mau: 0,
      storage_bytes: 0,
    });
  });

  it("does not count a batch twice when its statement committed but the answer was lost", async () => {
    const dev = await signupDeveloper();
    const meter = new UsageMeter();
    meter.add(dev.projectId, "agent_tool_calls", 5);
    await expect(meter.flush(faultyDb("lose"))).rejects.toThrow();
    // It did commit; the meter cannot know, and keeps the batch.
    expect((await usage(dev.projectId)).agent_tool_calls).toBe(5);
    expect(meter.pending()).toHaveLength(1);
    meter.add(dev.projectId, "agent_tool_calls", 2);
    await meter.flush(testDb());
    expect((await usage(dev.projectId)).agent_tool_calls).toBe(7);
    expect(await daily(dev.projectId, usageDay(), usageDay())).toEqual([[usageDay(), 7]]);
    expect(meter.pending()).toEqual([]);
  });

  it("sends counts added while a flush runs with the next flush, also when that flush fails", async () => {
    const dev = await signupDeveloper();
    const meter = new UsageMeter();
    meter.add(dev.projectId, "agent_tool_calls", 3);
    const failing = meter.flush(hangingDb());
    meter.add(dev.projectId, "agent_tool_calls", 4);
    expect(meter.pending()).toEqual([
      { projectId: dev.projectId, day: usageDay(), metric: "agent_tool_calls", n: 4 },
    ]);
    expect(await timedOut(failing)).toBe(true);
    expect(meter.pending()).toEqual([
      { projectId: dev.projectId, day: usageDay(), metric: "agent_tool_calls", n: 7 },
    ]);

    const succeeding = meter.flush(testDb());
    meter.add(dev.projectId, "agent_tool_calls", 5);
    await succeeding;
    expect((await usage(dev.projectId)).agent_tool_calls).toBe(7);
    await meter.flush(testDb());
    expect((await usage(dev.projectId)).agent_tool_calls).toBe(12);
  });

  it("counts a call on the UTC day (and in the month) it happened, however late the flush", async () => {
    const dev = await signupDeveloper();
    const meter = new UsageMeter();
    meter.add(dev.projectId, "agent_tool_calls", 2, new Date("2026-10-30T12:00:00.000Z"));
    meter.add(dev.projectId, "agent_tool_calls", 1, new Date("2026-10-31T23:59:59.900Z"));
    meter.add(dev.projectId, "agent_tool_calls", 1, new Date("2026-11-01T00:00:00.000Z"));
    meter.add(dev.projectId, "function_invocations", 3, new Date("2026-11-01T08:00:00.000Z"));
    await meter.flush(testDb());
    expect((await usage(dev.projectId, "2026-10")).agent_tool_calls).toBe(3);
    expect((await usage(dev.projectId, "2026-11")).agent_tool_calls).toBe(1);
    // Zero-filled, oldest first, across the month boundary; each metric on its own day.
    expect(await daily(dev.projectId, "2026-10-29", "2026-11-02")).toEqual([
      ["2026-10-29", 0],
      ["2026-10-30", 2],
      ["2026-10-31", 1],
      ["2026-11-01", 1],
      ["2026-11-02", 0],
    ]);
    expect(await daily(dev.projectId, "2026-10-31", "2026-11-01", "function_invocations")).toEqual([
      ["2026-10-31", 0],
      ["2026-11-01", 3],
    ]);
    // The default range: the 30 days ending today (or `to`).
    const range = await dailyUsage(testDb(), dev.projectId, { to: "2026-11-01" });
    expect([range.from, range.to, range.days.length]).toEqual(["2026-10-03", "2026-11-01", 30]);
    expect(range.days.reduce((sum, d) => sum + (d.usage.agent_tool_calls ?? 0), 0)).toBe(4);
    expect((await dailyUsage(testDb(), dev.projectId, {})).to).toBe(usageDay());
  });

  it("refuses a daily range that is not one of calendar days, ends before it starts or spans over a year", async () => {
    const dev = await signupDeveloper();
    const refused = (range: unknown) =>
      dailyUsage(testDb(), dev.projectId, range).then(
        () => "answered",
        (err: { status?: number; code?: string; message?: string }) =>
          `${err.status} ${err.code}: ${err.message}`,
      );
    expect(await refused({ from: "2026-02-30" })).toMatch(/^400 invalid_input: from: must be a calendar day/);
    expect(await refused({ to: "20261101" })).toMatch(/^400 invalid_input: to: must be YYYY-MM-DD/);
    expect(await refused({ to: "0001-01-01" })).toMatch(
      /^400 invalid_input: to: must be 1970-01-01 or later/,
    );
    expect(await refused({ from: "2026-11-02", to: "2026-11-01" })).toBe(
      "400 invalid_input: from: must not be after to",
    );
    expect(await refused({ from: "2025-01-01", to: "2026-01-02" })).toMatch(
      /^400 invalid_input: from: the range may span at most 366 days/,
    );
    expect(await refused({ from: "2025-01-01", to: "2026-01-01" })).toBe("answered");
  });

  it("counts each end user once per period as mau, across isolates, retries and flushes", async () => {
    const dev = await signupDeveloper();
    const users = await Promise.all([
      signupUser(dev.projectId, dev.clientKey),
      signupUser(dev.projectId, dev.clientKey),
    ]);
    const [a, b] = [new UsageMeter(), new UsageMeter()];
    expect(a.addActiveUser(dev.projectId, users[0]!.userId)).toBe(true);
    expect(a.addActiveUser(dev.projectId, users[0]!.userId)).toBe(false);
    a.addActiveUser(dev.projectId, users[1]!.userId);
    b.addActiveUser(dev.projectId, users[0]!.userId);
    b.addActiveUser(dev.projectId, users[0]!.userId, new Date("2001-01-15T00:00:00Z"));
    // A flush that fails keeps its users for the next one; a user sent twice counts once.
    expect(await timedOut(b.flush(hangingDb()))).toBe(true);
    await Promise.all([a.flush(testDb()), b.flush(testDb())]);
    await b.flush(testDb());
    expect((await usage(dev.projectId)).mau).toBe(2);
    expect((await usage(dev.projectId, "2001-01")).mau).toBe(1);
  });

  it("writes many projects in one flush and drops the counts of a project deleted meanwhile", async () => {
    const [kept, deleted] = [await signupDeveloper(), await signupDeveloper()];
    const meter = new UsageMeter();
    meter.add(kept.projectId, "agent_tool_calls", 2);
    meter.add(deleted.projectId, "agent_tool_calls", 3);
    const gone = await apiJson(`/v1/admin/projects/${deleted.projectId}`, {
      method: "DELETE",
      token: deleted.token,
    });
    expect(gone.status, JSON.stringify(gone.body)).toBeLessThan(300);
    await meter.flush(testDb());
    expect((await usage(kept.projectId)).agent_tool_calls).toBe(2);
    expect(meter.pending()).toEqual([]);
  });
});
