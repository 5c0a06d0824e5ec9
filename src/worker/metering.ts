/**
 * The isolate's usage meter (src/usage/metering.ts) wired to a request: counts from every request
 * this isolate serves are summed in one place, and the request whose count opens a window carries
 * that window's flush in its `waitUntil`, on its database client.
 */
import type { Context } from "hono";
import { type Meter, UsageMeter } from "../usage/metering.ts";
import type { AppEnv } from "./hono.ts";

/** This isolate's pending usage. */
export const isolateMeter = new UsageMeter();

/** The metering port of one request. */
export const requestMeter = <E extends AppEnv>(c: Context<E>): Meter =>
  isolateMeter.port(c.var.db, (promise) => c.executionCtx.waitUntil(promise));
