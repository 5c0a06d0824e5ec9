/**
 * The Hono environment shared by every sub-app: bindings plus per-request variables.
 */
import type { Db } from "./db.ts";
import type { Env } from "./env.ts";

export interface AppEnv {
  Bindings: Env;
  Variables: {
    /** drizzle over the Neon driver, set by the `database` middleware. */
    db: Db;
  };
}
