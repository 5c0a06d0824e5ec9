/**
 * The Worker's modules loaded on first use rather than at start-up, each imported once per isolate
 * and kept (src/lazy-module.ts: a request never waits on an `import()` another request started).
 * One loader per module, shared by every route that needs it.
 */
import { lazyModule } from "../lazy-module.ts";

/** The hot routes' services (data, app MCP, events, function invoke, allowed origins). */
export const hotServices = lazyModule(() => import("./hot-services.ts"));
/** drizzle over the Neon driver: the `database` middleware's `createDb`. */
export const dbModule = lazyModule(() => import("./db.ts"));
