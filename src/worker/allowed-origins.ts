/**
 * An app's `allowed_origins` (its app-MCP config), looked up without credentials — a CORS preflight
 * carries none — for the app MCP's Origin check (routes/app-mcp.ts) and the SDK routes' CORS
 * (sdk-cors.ts). Both read through the same isolate cache (`cachedOrigins`, credential-cache.ts:
 * the credentials' TTL, forgotten by the same control-plane writes), under the same key per app.
 */
import type { Context } from "hono";
import type { ProjectSelector } from "../credentials/principal.ts";
import { cachedOrigins } from "./credential-cache.ts";
import type { AppEnv } from "./hono.ts";
import { dbModule, hotServices } from "./lazy.ts";
import { failedCredentialGuard } from "./rate-limit.ts";

/** The origins of the app `selector` names; null for an unknown app. */
export async function allowedOriginsOf<E extends AppEnv>(
  c: Context<E>,
  selector: ProjectSelector,
): Promise<readonly string[] | null> {
  const named = "projectId" in selector ? { projectId: selector.projectId.toLowerCase() } : selector;
  return cachedOrigins(JSON.stringify(named), async () => {
    // Anonymous, and a made-up app is never cached: a lookup that finds no app counts against the
    // address's budget of failed checks, which refuses it (429) before the database past that.
    const guard = failedCredentialGuard(c.env, c.req.raw.headers, (p) => c.executionCtx.waitUntil(p));
    guard.before();
    const { appAllowedOrigins } = await hotServices();
    // Before the `database` middleware (a preflight answered ahead of the body limit): a handle of
    // the request's own, as that middleware would have made.
    const db = c.var.db ?? (await dbModule()).createDb(c.env, c.var.answerHold);
    const app = await appAllowedOrigins(db, selector);
    if (app === null) guard.failed();
    return app;
  });
}
