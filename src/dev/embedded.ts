/**
 * The embedded database, ready to use: PGlite with pgvector, migrations applied. Either persisted in
 * a directory (`npm run dev`, data survives restarts) or started from a migrated snapshot tarball
 * cached under `.amba/` (tests: ≈1 s instead of creating a cluster and migrating every run).
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { openPglite, openPostgres, type SqlBackend } from "./backends.ts";
import { migrate, migrationsHash } from "./migrate.ts";

/** Local state (database, demo credentials, caches): `.amba/`, or `AMBA_DATA_DIR`. */
export const AMBA_DIR = process.env.AMBA_DATA_DIR ?? join(import.meta.dirname, "../../.amba");

/** A persisted embedded database under `dir`, migrated. */
export async function openPersisted(dir = join(AMBA_DIR, "pgdata")): Promise<SqlBackend> {
  mkdirSync(dir, { recursive: true });
  const backend = await openPglite({ dataDir: dir });
  await migrate(backend);
  return backend;
}

/** An in-memory embedded database from the cached migrated snapshot (built on first use). */
export async function openFromSnapshot(cacheDir = AMBA_DIR): Promise<SqlBackend> {
  const file = join(cacheDir, `snapshot-${migrationsHash()}.tar.gz`);
  if (existsSync(file)) {
    return openPglite({ snapshot: new Blob([readFileSync(file)]) });
  }
  const backend = await openPglite();
  await migrate(backend);
  const tarball = await backend.db.dumpDataDir("gzip");
  mkdirSync(cacheDir, { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, Buffer.from(await tarball.arrayBuffer()));
  renameSync(tmp, file);
  return backend;
}

/** A real Postgres at `url`, migrated. */
export async function openMigratedPostgres(url: string): Promise<SqlBackend> {
  const backend = await openPostgres(url);
  await migrate(backend);
  return backend;
}

/** `DATABASE_URL` set: a real Postgres, migrated; otherwise `fallback()`. */
export async function openConfigured(fallback: () => Promise<SqlBackend>): Promise<SqlBackend> {
  const url = process.env.DATABASE_URL;
  return url ? openMigratedPostgres(url) : fallback();
}

/**
 * Whether the database has pgvector (`vector(N)` columns). The extension migration tolerates its
 * absence, so a plain Postgres migrates fine and only vector columns are refused.
 */
export async function hasPgvector(backend: SqlBackend): Promise<boolean> {
  const { rows } = await backend.query({
    query: "select count(*) from pg_extension where extname = 'vector'",
    params: [],
  });
  return rows[0]?.[0] === "1";
}
