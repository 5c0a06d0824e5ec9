/**
 * The isolate's usage meter (src/usage/metering.ts) wired to a request: counts (and the end users
 * seen, for `mau`) from every request this isolate serves are gathered in one place, and the request
 * that opens a window carries that window's flush in its `waitUntil`, on its database client.
 */
import type { Context } from "hono";
import { type Meter, UsageMeter } from "../usage/metering.ts";
import type { Db } from "./db.ts";
import type { AppEnv } from "./hono.ts";

/** This isolate's pending usage. */
export const isolateMeter = new UsageMeter();

/** The metering port of one request. */
export const requestMeter = <E extends AppEnv>(c: Context<E>): Meter =>
  isolateMeter.port(c.var.db, (promise) => c.executionCtx.waitUntil(promise));

/**
 * Notes the request's end user as active this month (`mau` in the billing view): sign-up, sign-in
 * and every request made with their session (REST, function invoke, app MCP). Written with the next
 * flush; a user the isolate already noted this month costs a set lookup.
 */
export const noteActiveUser = <E extends AppEnv>(c: Context<E>, projectId: string, userId: string): void =>
  isolateMeter.noteActiveUser(c.var.db, (promise) => c.executionCtx.waitUntil(promise), projectId, userId);

/**
 * Before a usage read (billing views): this isolate's pending counts and active users are written
 * first, so a read right after a call sees it (src/usage/metering.ts, `settle`).
 */
export const settleUsage = (db: Db): Promise<void> => isolateMeter.settle(db);

/** Whether this isolate's meter has a flush scheduled or under way. */
export const usageFlushPending = (): boolean => isolateMeter.busy;
