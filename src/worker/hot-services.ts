/**
 * What the hot routes need past routing and authentication, in one module they import on first use
 * (routes/app-mcp.ts, routes/data.ts, routes/function-invoke.ts, routes/events.ts): the app MCP's
 * handlers, surface and allowed origins, the data, functions and event-ingestion services. Not at start-up: with them come
 * drizzle's pg-core and the SQL compiler, and evaluating them was most of the start-up CPU left above
 * a Hono hello-world (BENCHMARKS.md "Start-up and bundle"). One module rather than an `import()` of
 * each: esbuild puts shared code into one chunk per distinct set of importers, so a single entry
 * keeps start-up and an isolate's first request to fewer modules (8 and 17 through a first
 * `tools/list`, against 12 and 32 with an `import()` per service). The database handle is imported
 * on its own (src/worker/app.ts): every request needs it, not every request these.
 */
export { appMcpHandlers } from "../app-mcp/handlers.ts";
export { appAllowedOrigins } from "../app-mcp/origins.ts";
export { appSurface, projectCollection } from "../app-mcp/surface.ts";
export * as data from "../data/service.ts";
export { storageGuard, storageQuotaBytes } from "../data/storage-quota.ts";
export { ingestEvents } from "../events/service.ts";
export { invokeFunction, loadFunction } from "../functions/service.ts";
