/**
 * Collection lifecycle (admin API): create, alter, drop. Each change — the DDL on the project's
 * schema, the metadata row and the project's `meta_rev` bump — runs in ONE `db.batch`, so the app
 * MCP never sees tools for a table that does not exist (or the reverse). Alter and drop read the
 * metadata before their batch, so the batch carries a guard that fails (409, retry) when it changed
 * meanwhile; creates in one project serialize on an advisory lock of its schema.
 */

import { type SQL, sql } from "drizzle-orm";
import type { Db } from "../db.ts";
import { isConcurrentChange, isUniqueViolation, pgError } from "../db-errors.ts";
import { conflict, invalidInput, quotaExceeded } from "../errors.ts";
import { bumpMetaRev } from "../meta/rev.ts";
import { parseInput } from "../validate.ts";
import {
  type Access,
  AlterCollectionSchema,
  alterMeta,
  CollectionDefinitionSchema,
  type CollectionMeta,
  type ColumnSpec,
} from "./columns.ts";
import { listCollections, mapDatabaseError, requireCollection } from "./service.ts";
import { alterTableStatements, createTableStatements, dropTableStatement, projectSchemaName } from "./sql.ts";

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

/** A project's collections as the admin API lists them (`GET …/collections`, `amba_collections_list`). */
export async function listCollectionViews(
  db: Db,
  projectId: string,
): Promise<{ collections: CollectionView[] }> {
  return { collections: (await listCollections(db, projectId)).map(collectionView) };
}

/** The unique constraint on a collection's name within its project (schema/index.ts). */
const COLLECTION_NAME_KEY = "collections_project_name_key";

/**
 * Advisory-lock class of "create in the project's Postgres schema" (ASCII "amba"). Concurrent
 * `CREATE SCHEMA IF NOT EXISTS` of one schema race on the catalog's unique index; holding this
 * transaction lock (keyed by the schema) first makes them run one after the other, so the second
 * sees the schema and skips it.
 */
const SCHEMA_LOCK_CLASS = 0x616d6261;

const schemaLock = (projectId: string): SQL =>
  sql`SELECT pg_advisory_xact_lock(${sql.raw(String(SCHEMA_LOCK_CLASS))}, hashtext(${projectSchemaName(projectId)}))`;

/**
 * The metadata write of an alter or drop, guarded: `write` carries the condition (for an alter,
 * the columns and access the request read; for a drop, that the row exists) and must touch one
 * row, otherwise `amba_guard()` raises SQLSTATE 40001 and the whole batch, DDL included, rolls
 * back. The statement takes the row lock first in its batch, so a concurrent change waits for it
 * and then re-checks the condition against the committed row.
 */
const guarded = (write: SQL, name: string): SQL =>
  sql`WITH changed AS (${write} RETURNING 1)
    SELECT amba_guard(EXISTS (SELECT 1 FROM changed), ${`collection "${name}" changed concurrently; retry`})`;

/** A schema-change failure as the admin API answers it. */
function schemaChangeError(err: unknown, name: string): unknown {
  const pg = pgError(err);
  if (isConcurrentChange(err)) return conflict(`collection "${name}" changed concurrently; retry`);
  if (isUniqueViolation(err, COLLECTION_NAME_KEY) || pg?.code === "42P07") {
    return conflict(`collection "${name}" already exists`);
  }
  // Any other unique violation comes from a catalog index: a concurrent DDL won, a retry succeeds.
  if (pg?.code === "23505") return conflict(`collection "${name}" changed concurrently; retry`);
  if (pg?.code === "42704" && pg.message.includes("vector")) {
    return invalidInput("vector columns are not available on this database (pgvector is missing)");
  }
  return mapDatabaseError(err);
}

/** Metadata write, DDL and the `meta_rev` bump in one transaction (`first` runs before all of them). */
async function batch(
  db: Db,
  name: string,
  projectId: string,
  parts: { first?: SQL; metadata: SQL; statements: SQL[] },
): Promise<void> {
  const queries = [
    ...(parts.first ? [db.execute(parts.first)] : []),
    db.execute(parts.metadata),
    ...parts.statements.map((s) => db.execute(s)),
    bumpMetaRev(db, projectId),
  ];
  try {
    await db.batch(queries as unknown as Parameters<Db["batch"]>[0]);
  } catch (err) {
    throw schemaChangeError(err, name);
  }
}

/**
 * Most collections one project may hold. Each is a table with two indexes in the database every
 * tenant shares, so one developer's loop must not grow its catalog without bound (1,000 is the
 * size `tools/list` is measured at, BENCHMARKS.md).
 */
export const MAX_COLLECTIONS_PER_PROJECT = 1000;

/**
 * Most bytes of column definitions (their JSON as Postgres prints the stored `jsonb`) one project's
 * collections may hold together. Every request that builds an app's tools or lists its collections
 * loads all of them into an isolate other tenants share (128 MB): without this, 1,000 collections of
 * 100 columns with 500-character descriptions came to ≈ 56 M characters. 4 MiB is 1,000 collections
 * of about 30 columns with short descriptions, or 70 of the largest a definition allows — and of
 * the order of what 100 functions' annotations may hold (64 KiB each, src/functions/definition.ts).
 */
export const MAX_PROJECT_COLUMN_BYTES = 4 * 1024 * 1024;

const columnBudgetMessage = (bytes: number) =>
  `a project's collections hold at most ${MAX_PROJECT_COLUMN_BYTES} bytes of column definitions ` +
  `(this change would make ${bytes}); shorten descriptions or drop columns or collections first`;

/**
 * The project's quotas on what a create or a growing alter adds, in one statement: the collection
 * count (a create) and the column-definition bytes with `columns` in place of collection `replacing`
 * (an alter) or added (a create). Checked before the change's batch, like the other count quotas
 * (src/quota.ts): concurrent changes may pass together and end a little over, never unboundedly.
 */
async function checkCollectionQuotas(
  db: Db,
  projectId: string,
  columns: ColumnSpec[],
  replacing?: string,
): Promise<void> {
  const others = replacing === undefined ? sql`true` : sql`name <> ${replacing}`;
  const { rows } = await db.execute(sql`SELECT count(*)::int AS n,
      (coalesce(sum(octet_length(columns::text)) FILTER (WHERE ${others}), 0)
        + octet_length(${JSON.stringify(columns)}::jsonb::text))::bigint AS bytes
    FROM collections WHERE project_id = ${projectId}::uuid`);
  const { n, bytes } = rows[0] as { n: number | string; bytes: number | string };
  if (replacing === undefined && Number(n) >= MAX_COLLECTIONS_PER_PROJECT) {
    throw quotaExceeded(
      `a project holds at most ${MAX_COLLECTIONS_PER_PROJECT} collections; drop one before creating another`,
    );
  }
  if (Number(bytes) > MAX_PROJECT_COLUMN_BYTES) throw quotaExceeded(columnBudgetMessage(Number(bytes)));
}

/** Create a collection from a definition (`POST …/collections`); 409 when the name is taken. */
export async function createCollection(db: Db, projectId: string, body: unknown): Promise<CollectionView> {
  const definition = parseInput(CollectionDefinitionSchema, body);
  await checkCollectionQuotas(db, projectId, definition.columns as ColumnSpec[]);
  const meta: CollectionMeta = {
    projectId,
    name: definition.name,
    columns: definition.columns as ColumnSpec[],
    access: definition.access as Access,
  };
  const metadata = sql`INSERT INTO collections (project_id, name, columns, access)
    VALUES (${projectId}::uuid, ${meta.name}, ${JSON.stringify(meta.columns)}::jsonb, ${JSON.stringify(meta.access)}::jsonb)`;
  await batch(db, meta.name, projectId, {
    first: schemaLock(projectId),
    metadata,
    statements: createTableStatements(meta),
  });
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
  // Only a change that grows the definitions is checked: one over the budget can always shrink.
  if (JSON.stringify(next.columns).length > JSON.stringify(current.columns).length) {
    await checkCollectionQuotas(db, projectId, next.columns, name);
  }
  const metadata = guarded(
    sql`UPDATE collections SET columns = ${JSON.stringify(next.columns)}::jsonb,
      access = ${JSON.stringify(next.access)}::jsonb, updated_at = now()
      WHERE project_id = ${projectId}::uuid AND name = ${name}
        AND columns = ${JSON.stringify(current.columns)}::jsonb AND access = ${JSON.stringify(current.access)}::jsonb`,
    name,
  );
  await batch(db, name, projectId, { metadata, statements: alterTableStatements(current, change) });
  return collectionView(next);
}

/** Drop a collection and its rows (`DELETE …/collections/:name`); it also leaves the exposure list. */
export async function dropCollection(
  db: Db,
  projectId: string,
  name: string,
): Promise<{ name: string; deleted: true }> {
  const current = await requireCollection(db, projectId, name);
  const metadata = guarded(
    sql`DELETE FROM collections WHERE project_id = ${projectId}::uuid AND name = ${name}`,
    name,
  );
  const unexpose = sql`UPDATE app_mcp_configs SET exposed_collections = array_remove(exposed_collections, ${name}::text)
    WHERE project_id = ${projectId}::uuid`;
  await batch(db, name, projectId, { metadata, statements: [dropTableStatement(current), unexpose] });
  return { name, deleted: true };
}
