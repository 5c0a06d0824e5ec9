/**
 * The cold half of the Worker app (src/worker/app.ts): the console, the OAuth authorization server,
 * the OpenAPI document, the platform MCP and the admin API. Imported on the first request that
 * needs it, so a Worker that only serves the hot path never compiles or evaluates any of this.
 */
import type { Hono } from "hono";
import { buildApp } from "./app.ts";
import type { AppEnv } from "./hono.ts";
import { appMcpAdminRoutes } from "./routes/app-mcp-admin.ts";
import { authRoutes } from "./routes/auth.ts";
import { collectionRoutes } from "./routes/collections.ts";
import { consoleHeaders, consoleRoutes } from "./routes/console.ts";
import { developerRoutes } from "./routes/developers.ts";
import { eventAdminRoutes } from "./routes/events.ts";
import { functionRoutes } from "./routes/functions.ts";
import { oauthRoutes } from "./routes/oauth.ts";
import { openApiRoutes } from "./routes/openapi.ts";
import { platformMcpRoutes } from "./routes/platform-mcp.ts";
import { projectRoutes } from "./routes/projects.ts";

export function coldApp(): Hono<AppEnv> {
  // Each sub-app declares its full paths (they span /v1/admin/…, /v1/auth/…, /console, /.well-known…).
  return buildApp(
    (app) => {
      app.route("/", developerRoutes);
      app.route("/", projectRoutes);
      app.route("/", authRoutes);
      app.route("/", collectionRoutes);
      app.route("/", functionRoutes);
      app.route("/", appMcpAdminRoutes);
      app.route("/", eventAdminRoutes);
      app.route("/", platformMcpRoutes);
      app.route("/", openApiRoutes);
      app.route("/", consoleRoutes);
      app.route("/", oauthRoutes);
    },
    (app) => {
      // Before the body limit and the path guard: their refusals under /console get its headers too.
      app.use("/console/*", consoleHeaders);
    },
  );
}
