/**
 * Compile-time check, run by `npm run typecheck` (tsconfig includes test/): a route's handler can
 * read only the caller variables its `require*()` middleware sets (src/worker/require.ts,
 * `Authenticated` in src/worker/hono.ts). Each `@ts-expect-error` line must fail to compile, or the
 * typecheck fails with "Unused '@ts-expect-error' directive". Never imported or run.
 */
import { Hono } from "hono";
import type { AppEnv } from "../../src/worker/hono.ts";
import { requireEndUser, requireProjectAdmin } from "../../src/worker/require.ts";

const routes = new Hono<AppEnv>();
// @ts-expect-error: no middleware on this route sets `project`
routes.get("/none", (c) => c.text(c.var.project.id));
// @ts-expect-error: requireEndUser() sets the end user, not a developer
routes.get("/end-user", requireEndUser(), (c) => c.text(c.var.developerId));
// @ts-expect-error: requireProjectAdmin() sets the developer, not an end user
routes.get("/admin", requireProjectAdmin(), (c) => c.text(c.var.endUser.email));
routes.get("/typed", requireEndUser(), (c) =>
  c.text(`${c.var.project.id} ${c.var.endUser.email} ${c.var.sessionId}`),
);
routes.get("/db", (c) => c.json(typeof c.var.db));
