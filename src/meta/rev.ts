/**
 * `meta_rev`: every change to what a project's app MCP surface is generated from (collections,
 * functions, exposure, config) bumps it, so cached metadata is never served stale.
 */
import { eq, sql } from "drizzle-orm";
import { projects } from "../../schema/index.ts";
import type { Db } from "../db.ts";

/** The update that bumps a project's `meta_rev`; put it in the same `db.batch` as the change. */
export const bumpMetaRev = (db: Db, projectId: string) =>
  db
    .update(projects)
    .set({ metaRev: sql`${projects.metaRev} + 1` })
    .where(eq(projects.id, projectId));
