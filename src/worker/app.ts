/**
 * `createApp()`: the Hono app with its middleware, error renderer and one sub-app per resource.
 */
import { sql } from "drizzle-orm";
import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { toAppError } from "../errors.ts";
import { forgetCredentials } from "./credential-cache.ts";
import { createDb } from "./db.ts";
import { renderError, renderNotFound } from "./errors.ts";
import type { AppEnv } from "./hono.ts";
import { pathGuard } from "./path-guard.ts";
import { appMcpRoutes, slugFromHost } from "./routes/app-mcp.ts";
import { appMcpAdminRoutes } from "./routes/app-mcp-admin.ts";
import { authRoutes } from "./routes/auth.ts";
import { collectionRoutes } from "./routes/collections.ts";
import { consoleRoutes } from "./routes/console.ts";
import { dataRoutes } from "./routes/data.ts";
import { developerRoutes } from "./routes/developers.ts";
import { functionRoutes } from "./routes/functions.ts";
import { oauthRoutes } from "./routes/oauth.ts";
import { openApiRoutes } from "./routes/openapi.ts";
import { platformMcpRoutes } from "./routes/platform-mcp.ts";
import { projectRoutes } from "./routes/projects.ts";

/** Largest request body the platform accepts (JSON rows, tool calls). */
export const MAX_BODY_BYTES = 1024 * 1024;

export function createApp() {
  const app = new Hono<AppEnv>();

  app.onError(renderError);
  app.notFound(renderNotFound);

  app.use(
    "*",
    bodyLimit({
      maxSize: MAX_BODY_BYTES,
      onError: (c) =>
        c.json(
          { error: { code: "payload_too_large", message: `body exceeds ${MAX_BODY_BYTES} bytes` } },
          413,
        ),
    }),
  );
  app.use("*", pathGuard());
  app.use("*", async function database(c, next) {
    c.set("db", createDb(c.env));
    await next();
  });
  // Control-plane writes (revoke, sign-out, config, exposure, collections…) drop this isolate's
  // credential cache once answered; the hot routes (app MCP, /v1/projects/… data and invoke) do not.
  app.use("*", async function credentialCache(c, next) {
    await next();
    if (c.req.method === "GET" || c.req.method === "HEAD" || c.req.method === "OPTIONS") return;
    const path = c.req.path;
    if (path.startsWith("/app/") || path.startsWith("/v1/projects/")) return;
    if (path === "/mcp" && slugFromHost(new URL(c.req.url).hostname, c.env.APP_MCP_HOST_SUFFIX)) return;
    forgetCredentials();
  });

  app.get("/healthz", async (c) => {
    const started = Date.now();
    try {
      await c.var.db.execute(sql`select 1`);
      return c.json({
        ok: true,
        version: c.env.APP_VERSION,
        database: { ok: true, latency_ms: Date.now() - started },
      });
    } catch (err) {
      // The reason is logged, not shown: driver errors can name hosts and users.
      console.error("health check: database unreachable", err);
      const code = toAppError(err)?.code ?? "database_unavailable";
      return c.json({ ok: false, version: c.env.APP_VERSION, database: { ok: false, error: code } }, 503);
    }
  });

  // Each sub-app declares its full paths (they span /v1/admin/…, /v1/projects/…, /app/…).
  app.route("/", appMcpRoutes);
  app.route("/", developerRoutes);
  app.route("/", projectRoutes);
  app.route("/", authRoutes);
  app.route("/", collectionRoutes);
  app.route("/", dataRoutes);
  app.route("/", functionRoutes);
  app.route("/", appMcpAdminRoutes);
  app.route("/", platformMcpRoutes);
  app.route("/", openApiRoutes);
  app.route("/", consoleRoutes);
  app.route("/", oauthRoutes);

  return app;
}
