/**
 * The database handle every service takes: drizzle over the Neon serverless HTTP driver, with the
 * platform schema. Only the type lives here; the Worker builds the instance (`createDb` in
 * src/worker/db.ts), tests and scripts build their own.
 */
import type { NeonHttpDatabase } from "drizzle-orm/neon-http";
import type * as schema from "../schema/index.ts";

/** A drizzle database over the Neon HTTP driver (batches are transactions). */
export type Db = NeonHttpDatabase<typeof schema>;
