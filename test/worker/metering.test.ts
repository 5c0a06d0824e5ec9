/**
 * The batched usage meter (src/usage/metering.ts) against the real database: a failed flush (the
 * database does not answer: `fault-endpoint.ts`'s `/hang`, under a short deadline) loses nothing,
 * a flush whose statement committed but whose answer was lost (`/lose`) is not counted twice when
 * retried, counts added while a flush runs go to the next one, the period is the one of the call,
 * and a deleted project's counts do not block the others.
 */

import { env } from "cloudflare:workers";
import { describe, expect, inject, it } from "vitest";
import { DatabaseTimeoutError, toAppError } from "../../src/errors.ts";
import { billingPeriod, UsageMeter, usageFor } from "../../src/usage/metering.ts";
import { createDb } from "../../src/worker/db.ts";
import type { Env } from "../../src/worker/env.ts";
import { apiJson, signupDeveloper, testDb } from "./helpers.ts";

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

describe("usage meter", () => {
  it("keeps the counts of a failed flush and writes them exactly once with the next", async () => {
    const dev = await signupDeveloper();
    const meter = new UsageMeter();
    for (let i = 0; i < 7; i++) meter.add(dev.projectId, "agent_tool_calls");
    meter.add(dev.projectId, "function_invocations", 2);

    expect(await timedOut(meter.flush(hangingDb()))).toBe(true);
    expect(await usage(dev.projectId)).toEqual({ agent_tool_calls: 0, function_invocations: 0 });
    expect(meter.pending()).toHaveLength(2);

    meter.add(dev.projectId, "agent_tool_calls");
    await meter.flush(testDb());
    expect(await usage(dev.projectId)).toEqual({ agent_tool_calls: 8, function_invocations: 2 });
    expect(meter.pending()).toEqual([]);
    // Nothing left to write twice.
    await meter.flush(testDb());
    expect(await usage(dev.projectId)).toEqual({ agent_tool_calls: 8, function_invocations: 2 });
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
    expect(meter.pending()).toEqual([]);
  });

  it("sends counts added while a flush runs with the next flush, also when that flush fails", async () => {
    const dev = await signupDeveloper();
    const meter = new UsageMeter();
    meter.add(dev.projectId, "agent_tool_calls", 3);
    const failing = meter.flush(hangingDb());
    meter.add(dev.projectId, "agent_tool_calls", 4);
    expect(meter.pending()).toEqual([
      { projectId: dev.projectId, period: billingPeriod(), metric: "agent_tool_calls", n: 4 },
    ]);
    expect(await timedOut(failing)).toBe(true);
    expect(meter.pending()).toEqual([
      { projectId: dev.projectId, period: billingPeriod(), metric: "agent_tool_calls", n: 7 },
    ]);

    const succeeding = meter.flush(testDb());
    meter.add(dev.projectId, "agent_tool_calls", 5);
    await succeeding;
    expect((await usage(dev.projectId)).agent_tool_calls).toBe(7);
    await meter.flush(testDb());
    expect((await usage(dev.projectId)).agent_tool_calls).toBe(12);
  });

  it("counts a call in the month it happened, however late the flush", async () => {
    const dev = await signupDeveloper();
    const meter = new UsageMeter();
    meter.add(dev.projectId, "agent_tool_calls", 1, new Date("2026-10-31T23:59:59.900Z"));
    meter.add(dev.projectId, "agent_tool_calls", 1, new Date("2026-11-01T00:00:00.000Z"));
    await meter.flush(testDb());
    expect((await usage(dev.projectId, "2026-10")).agent_tool_calls).toBe(1);
    expect((await usage(dev.projectId, "2026-11")).agent_tool_calls).toBe(1);
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
