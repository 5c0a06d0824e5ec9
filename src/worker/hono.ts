/**
 * The Hono environment shared by every sub-app: bindings plus per-request variables.
 */
import type { AppMcpSettings } from "../app-mcp/admin.ts";
import type { Principal, ProjectRef } from "./auth.ts";
import type { Db } from "./db.ts";
import type { Env } from "./env.ts";

export interface AppEnv {
  Bindings: Env;
  Variables: {
    /** drizzle over the Neon driver, set by the `database` middleware. */
    db: Db;
    // The authenticated caller, set by the `require*()` middleware a route declares
    // (src/worker/require.ts); a handler reads only what its route's middleware sets.
    /** The developer (developer token): `requireDeveloper()`, `requireProjectAdmin()`. */
    developerId: string;
    /** The addressed project: `requireProjectAdmin()`, `requireClientKey()`, `requireEndUser()`. */
    project: ProjectRef;
    /** The project's app-MCP config, from the same statement: `requireProjectAdmin()`, `requireProjectCaller()`. */
    appConfig: AppMcpSettings;
    /** Developer or end user, for the project in the path: `requireProjectCaller()`. */
    principal: Principal;
    /** The signed-in end user (client key + session): `requireEndUser()`. */
    endUser: { id: string; email: string };
    /** That end user's session row id: `requireEndUser()`. */
    sessionId: string;
  };
}
