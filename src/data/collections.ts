/**
 * Collection lifecycle (admin API): create, alter, drop. Each change — the DDL on the project's
 * schema, the metadata row and the project's `meta_rev` bump — runs in ONE `db.batch`, so the app
 * MCP never sees tools for a table that does not exist (or the reverse).
 */

import { type SQL, sql } from "drizzle-orm";
import { pgError } from "../db-errors.ts";
import { conflict, invalidInput } from "../errors.ts";
import { parseInput } from "../validate.ts";
import type { Db } from "../worker/db.ts";
import { bumpMetaRev } from "../worker/meta.ts";
import {
  type Access,
  AlterCollectionSchema,
  alterMeta,
  CollectionDefinitionSchema,
  type CollectionMeta,
  type ColumnSpec,
} from "./columns.ts";
import { mapDatabaseError, requireCollection } from "./service.ts";
import { alterTableStatements, createTableStatements, dropTableStatement } from "./sql.ts";

/** The wire shape of a collection. */
export interface CollectionView {
  name: string;
  columns: ColumnSpec[];
  access: Access;
}

export const collectionView = (meta: CollectionMeta): CollectionView => ({
  name: meta.name,
  columns: meta.columns,
  access: meta.access,
});

async function batch(db: Db, statements: SQL[], metadata: SQL, projectId: string): Promise<void> {
  const queries = [db.execute(metadata), ...statements.map((s) => db.execute(s)), bumpMetaRev(db, projectId)];
  try {
    await db.batch(queries as unknown as Parameters<Db["batch"]>[0]);
  } catch (err) {
    const code = pgError(err)?.code;
    if (code === "42704" && JSON.stringify((err as Error).message ?? "").includes("vector")) {
      throw invalidInput("vector columns are not available on this database (pgvector is missing)");
    }
    if (code === "42P07") throw conflict("a table with this name already exists");
    throw mapDatabaseError(err);
  }
}

/** Create a collection from a definition (`POST …/collections`); 409 when the name is taken. */
export async function createCollection(db: Db, projectId: string, body: unknown): Promise<CollectionView> {
  const definition = parseInput(CollectionDefinitionSchema, body);
  const meta: CollectionMeta = {
    projectId,
    name: definition.name,
    columns: definition.columns as ColumnSpec[],
    access: definition.access as Access,
  };
  const metadata = sql`INSERT INTO collections (project_id, name, columns, access)
    VALUES (${projectId}::uuid, ${meta.name}, ${JSON.stringify(meta.columns)}::jsonb, ${JSON.stringify(meta.access)}::jsonb)`;
  try {
    await batch(db, createTableStatements(meta), metadata, projectId);
  } catch (err) {
    if ((err as { status?: number }).status === 409) {
      throw conflict(`collection "${meta.name}" already exists`);
    }
    throw err;
  }
  return collectionView(meta);
}

/** Alter a collection (`PATCH …/collections/:name`): add / drop columns, change the policy. */
export async function alterCollection(
  db: Db,
  projectId: string,
  name: string,
  body: unknown,
): Promise<CollectionView> {
  const change = parseInput(AlterCollectionSchema, body);
  const current = await requireCollection(db, projectId, name);
  const next = alterMeta(current, change);
  const metadata = sql`UPDATE collections SET columns = ${JSON.stringify(next.columns)}::jsonb,
    access = ${JSON.stringify(next.access)}::jsonb, updated_at = now()
    WHERE project_id = ${projectId}::uuid AND name = ${name}`;
  await batch(db, alterTableStatements(current, change), metadata, projectId);
  return collectionView(next);
}

/** Drop a collection and its rows (`DELETE …/collections/:name`); it also leaves the exposure list. */
export async function dropCollection(
  db: Db,
  projectId: string,
  name: string,
): Promise<{ name: string; deleted: true }> {
  const current = await requireCollection(db, projectId, name);
  const metadata = sql`DELETE FROM collections WHERE project_id = ${projectId}::uuid AND name = ${name}`;
  const unexpose = sql`UPDATE app_mcp_configs SET exposed_collections = array_remove(exposed_collections, ${name}::text)
    WHERE project_id = ${projectId}::uuid`;
  await batch(db, [dropTableStatement(current), unexpose], metadata, projectId);
  return { name, deleted: true };
}
