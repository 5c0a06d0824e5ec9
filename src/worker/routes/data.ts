/**
 * The SDK data routes: /v1/projects/:id/collections/:name/… (rows, find, aggregate, nearest).
 * Developer Bearer, or X-Api-Key + end-user session Bearer. Thin: every route resolves the caller,
 * counts the request against the app's caller tier (the app MCP's budget: one per caller and app)
 * and, for end users, the app's aggregate budget; loads the collection, then calls the data
 * service, where validation and access policy live.
 */
import { type Context, Hono } from "hono";
import * as v from "valibot";
import { actorOf, isUuid } from "../../credentials/principal.ts";
import { invalidInput, notFound } from "../../errors.ts";
import { appCallerKey } from "../../rate-limit.ts";
import type { AppEnv, Authenticated } from "../hono.ts";
import { hotServices } from "../lazy.ts";
import { appLimiter, TIER_LIMITERS } from "../rate-limit.ts";
import { jsonBody } from "../request.ts";
import { requireProjectCaller } from "../require.ts";

export const dataRoutes = new Hono<AppEnv>();

const BASE = "/v1/projects/:id/collections/:name";

/**
 * Every data route's auth. Credentials from the isolate cache (src/worker/credential-cache.ts);
 * metadata from the rev-keyed cache (meta_rev comes with the credentials), so a warm request is the
 * operation's query alone.
 */
const caller = requireProjectCaller({ cached: true });

/**
 * The caller (set by `requireProjectCaller`) as a data-service actor, the collection's metadata and
 * the data service (src/worker/hot-services.ts: imported by the first request that gets this far,
 * not at start-up). The request counts against the app's caller tier first: a write waits for the
 * limiter's answer, a read is counted in the background (refused at once only when the caller was
 * refused moments ago; `limitedExecute` in src/app-mcp/handlers.ts argues why).
 */
async function resolve(c: Context<Authenticated<"principal" | "appRuntime">>, access: "read" | "write") {
  const { principal, appRuntime: config } = c.var;
  const waitUntil = (promise: Promise<unknown>) => c.executionCtx.waitUntil(promise);
  const limit = appLimiter(
    c.env,
    principal,
    TIER_LIMITERS[config.rateLimitPerMinute] ?? "RATE_LIMITER",
    waitUntil,
  );
  const key = appCallerKey(principal);
  if (access === "read" && limit.inBackground) limit.inBackground(key, "this app's caller");
  else await limit(key, "this app's caller");
  const actor = actorOf(principal);
  const name = c.req.param("name") as string;
  const { data, projectCollection, storageGuard, storageQuotaBytes } = await hotServices();
  const meta = await projectCollection(c.env.META_KV, c.var.db, principal.project, name, waitUntil);
  const storage = storageGuard(c.var.db, storageQuotaBytes(c.env.STORAGE_QUOTA_MIB), waitUntil);
  return { actor, meta, data, storage };
}

const ANY = v.unknown();
const body = <E extends AppEnv>(c: Context<E>): Promise<unknown> => jsonBody(c, ANY);

/** The `:rowId` path segment; a value that cannot be a row id names no row (404, as an absent one). */
function rowId<E extends AppEnv>(c: Context<E>): string {
  const id = c.req.param("rowId") as string;
  if (!isUuid(id)) throw notFound(`row "${id}" not found`);
  return id;
}

/** `?limit=` as a number when it is one (the schema then checks the range), else as given. */
function limitParam(value: string | undefined): unknown {
  if (value === undefined || value === "") return undefined;
  return /^-?\d+$/.test(value) ? Number(value) : value;
}

dataRoutes.get(`${BASE}/rows`, caller, async (c) => {
  const { actor, meta, data } = await resolve(c, "read");
  const cursor = c.req.query("cursor");
  const input = { limit: limitParam(c.req.query("limit")), cursor: cursor === "" ? undefined : cursor };
  return c.json(await data.listRows(c.var.db, actor, meta, input));
});

dataRoutes.get(`${BASE}/rows/:rowId`, caller, async (c) => {
  const { actor, meta, data } = await resolve(c, "read");
  return c.json(await data.getRow(c.var.db, actor, meta, { id: rowId(c) }));
});

dataRoutes.post(`${BASE}/rows`, caller, async (c) => {
  const { actor, meta, data, storage } = await resolve(c, "write");
  return c.json(await data.insertRowFor(c.var.db, actor, meta, await body(c), storage), 201);
});

dataRoutes.patch(`${BASE}/rows/:rowId`, caller, async (c) => {
  const { actor, meta, data, storage } = await resolve(c, "write");
  const patch = await body(c);
  return c.json(await data.updateRowFor(c.var.db, actor, meta, { id: rowId(c), patch }, storage));
});

dataRoutes.delete(`${BASE}/rows/:rowId`, caller, async (c) => {
  const { actor, meta, data } = await resolve(c, "write");
  const hardParam = c.req.query("hard");
  if (hardParam !== undefined && hardParam !== "true" && hardParam !== "false") {
    throw invalidInput('hard: expected "true" or "false"');
  }
  const input = { id: rowId(c), hard: hardParam === "true" };
  return c.json(await data.deleteRowFor(c.var.db, actor, meta, input));
});

dataRoutes.post(`${BASE}/find`, caller, async (c) => {
  const { actor, meta, data } = await resolve(c, "read");
  return c.json(await data.findRows(c.var.db, actor, meta, await body(c)));
});

dataRoutes.post(`${BASE}/aggregate`, caller, async (c) => {
  const { actor, meta, data } = await resolve(c, "read");
  return c.json(await data.aggregate(c.var.db, actor, meta, await body(c)));
});

dataRoutes.post(`${BASE}/nearest`, caller, async (c) => {
  const { actor, meta, data } = await resolve(c, "read");
  return c.json(await data.nearest(c.var.db, actor, meta, await body(c)));
});
