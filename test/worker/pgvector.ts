/**
 * pgvector is optional: the embedded database has it, a plain PostgreSQL (the `AMBA_TEST_PG=1`
 * run on Debian's packages) may not. The global setup says which; vector tests skip with
 * `NO_PGVECTOR` as the visible reason, and shared fixtures drop their vector column (always named
 * `embedding` in these suites) so everything else still runs on such a server.
 */
import { inject, type TestContext } from "vitest";

/** Whether the test database has the `vector` extension. */
export const HAS_VECTOR: boolean = inject("hasVector");

/** The skip reason shown by the reporter. */
export const NO_PGVECTOR = "pgvector is not installed on this database";

/** Skip the running test (with the reason) when the database has no pgvector. */
export const needsPgvector = (ctx: TestContext): void => ctx.skip(!HAS_VECTOR, NO_PGVECTOR);

/** Column definitions without the vector ones when the database has no pgvector. */
export const vectorColumns = <C extends { type: string }>(columns: readonly C[]): C[] =>
  HAS_VECTOR ? [...columns] : columns.filter((c) => c.type !== "vector");

/** A row without its `embedding` value when the database has no pgvector. */
export function vectorValues<R extends Record<string, unknown>>(row: R): R {
  if (HAS_VECTOR) return row;
  const { embedding: _, ...rest } = row;
  return rest as R;
}
