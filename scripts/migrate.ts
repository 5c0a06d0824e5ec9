/**
 * `npm run db:migrate`: apply schema/migrations to `DATABASE_URL` (Neon or any Postgres).
 */
import { openPostgres } from "../src/dev/backends.ts";
import { migrate } from "../src/dev/migrate.ts";

const url = process.env.DATABASE_URL;
if (!url) {
  process.stderr.write("error: set DATABASE_URL to the Postgres/Neon connection string to migrate\n");
  process.exit(1);
}
try {
  const backend = await openPostgres(url);
  const applied = await migrate(backend);
  await backend.close();
  process.stdout.write(applied.length ? `applied: ${applied.join(", ")}\n` : "up to date\n");
} catch (err) {
  process.stderr.write(`error: migration failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
