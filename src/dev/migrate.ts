/**
 * Applies the drizzle-kit migrations in `schema/migrations` to a backend, in journal order, once
 * each (tracked in `amba_migrations`). The same runner serves the embedded database, a local
 * Postgres and Neon (`npm run db:migrate`).
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { SqlBackend } from "./backends.ts";

export const MIGRATIONS_DIR = join(import.meta.dirname, "../../schema/migrations");

interface Migration {
  tag: string;
  sql: string;
}

/** The migrations in journal order. */
export function readMigrations(dir = MIGRATIONS_DIR): Migration[] {
  const journal = JSON.parse(readFileSync(join(dir, "meta/_journal.json"), "utf8")) as {
    entries: { tag: string }[];
  };
  return journal.entries.map(({ tag }) => ({ tag, sql: readFileSync(join(dir, `${tag}.sql`), "utf8") }));
}

/** A short hash of all migrations: names a database snapshot that is still current. */
export function migrationsHash(dir = MIGRATIONS_DIR): string {
  const hash = createHash("sha256");
  for (const m of readMigrations(dir)) hash.update(m.tag).update(m.sql);
  return hash.digest("hex").slice(0, 16);
}

/** Apply pending migrations; returns the tags applied now. */
export async function migrate(backend: SqlBackend, dir = MIGRATIONS_DIR): Promise<string[]> {
  await backend.exec(
    "create table if not exists amba_migrations (tag text primary key, applied_at timestamptz not null default now())",
  );
  const done = new Set(
    (await backend.query({ query: "select tag from amba_migrations", params: [] })).rows.map((r) => r[0]),
  );
  const applied: string[] = [];
  for (const m of readMigrations(dir)) {
    if (done.has(m.tag)) continue;
    const statements = m.sql
      .split("--> statement-breakpoint")
      .map((s) => s.trim())
      .filter(Boolean);
    await backend.transaction([
      ...statements.map((query) => ({ query, params: [] })),
      { query: "insert into amba_migrations (tag) values ($1)", params: [m.tag] },
    ]);
    applied.push(m.tag);
  }
  return applied;
}
