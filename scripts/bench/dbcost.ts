/**
 * What one app's calls cost the shared database, on a real PostgreSQL (a throw-away cluster,
 * test/postgres-server.ts; 100,000 rows of a 232-character `title`, a 2-element `tags text[]` and a
 * small `data jsonb`):
 * - one `find` per filter shape, at the old and the new list limits (src/data/sql.ts
 *   `MAX_ARRAY_OPERAND_VALUES`, `MAX_WHERE_LIST_VALUES`), as the statement the service compiles
 *   (written out here, so the old limits can still be measured), against the newest page (baseline);
 * - a cheap call of app B (the newest page) while app A keeps k expensive calls in flight: how B's
 *   latency grows with A's concurrency, and with A's callers through the per-app slots
 *   (src/data/app-slots.ts), which bound it.
 * Medians of interleaved rounds in the same run; a statement that passes the 8 s deadline is reported
 * as such (the cluster's `statement_timeout`, as in production).
 */
import { type SQL, sql } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import pg from "pg";
import {
  APP_SLOT_LIMITS,
  AppSlots,
  SLOTS_RETRY_AFTER_SECONDS,
  TooManyConcurrentError,
} from "../../src/data/app-slots.ts";
import type { CollectionMeta } from "../../src/data/columns.ts";
import { createTableStatements, notDeleted, parseOrder, selectPage, tableRef } from "../../src/data/sql.ts";
import { bindList } from "../../src/data/values.ts";
import { STATEMENT_TIMEOUT_MS } from "../../src/dev/backends.ts";
import { startTestPostgres } from "../../test/postgres-server.ts";

const ROWS = 100_000;
const ROUNDS = 3;

const server = await startTestPostgres();
try {
  const pool = new pg.Pool({
    connectionString: server.url,
    max: 40,
    statement_timeout: STATEMENT_TIMEOUT_MS,
  });
  const dialect = new PgDialect();
  const exec = (query: SQL) => {
    const { sql: text, params } = dialect.sqlToQuery(query);
    return pool.query(text, params);
  };

  const meta: CollectionMeta = {
    projectId: crypto.randomUUID(),
    name: "items",
    columns: [
      { name: "title", type: "text", required: true },
      { name: "tags", type: "text[]" },
      { name: "data", type: "json" },
    ],
    access: { read: "public", write: "owner" },
  };
  for (const statement of createTableStatements(meta)) await exec(statement);
  const seeded = performance.now();
  await exec(sql`
  INSERT INTO ${tableRef(meta)} (id, title, tags, data, created_at, updated_at)
  SELECT gen_random_uuid(), 'item ' || i || ' ' || repeat(md5(i::text), 7), ARRAY['t' || (i % 50), 'b' || (i % 2)],
         jsonb_build_object('n', i, 'k', ARRAY['a' || (i % 10), 'b']), now() - i * interval '1 second', now()
  FROM generate_series(1, ${ROWS}) AS i`);
  await exec(sql`ANALYZE ${tableRef(meta)}`);
  console.log(`seeded ${ROWS} rows in ${((performance.now() - seeded) / 1000).toFixed(1)} s`);

  const page = (condition?: SQL) =>
    selectPage(meta, condition ? [notDeleted, condition] : [notDeleted], parseOrder(meta), 21);
  const words = (n: number, prefix = "w") => Array.from({ length: n }, (_, i) => `${prefix}${i}`);
  /**
   * One value repeated, then one no row holds: every element but the last is found, so containment
   * compares them all before it fails (its worst case).
   */
  const same = (n: number, value: string) => Array.from({ length: n }, () => value);
  const textArray = (values: string[]) => bindList("text", values);
  const PATTERN = `%${"x%".repeat(127)}`.slice(0, 256);

  // Every arm its own values: Postgres drops OR arms that are identical (`process_duplicate_ors`).
  const anyOf = (n: number, arm: (prefix: string) => SQL) =>
    sql`(${sql.join(
      Array.from({ length: n }, (_, i) => arm(`a${i}_`)),
      sql` OR `,
    )})`;
  const cases: Record<string, SQL> = {
    "newest 20 (baseline)": page(),
    "`in` 1,000 values": page(sql`t.title = ANY(${textArray(words(1000))})`),
    "`nin` 1,000 values": page(sql`(t.title IS NULL OR t.title <> ALL(${textArray(words(1000))}))`),
    "`overlaps` 1,000 values (old limit)": page(sql`t.tags && ${textArray(words(1000))}`),
    "`overlaps` 100 values (new limit)": page(sql`t.tags && ${textArray(words(100))}`),
    "`contains` 1,000 values (old limit)": page(sql`t.tags @> ${textArray([...same(999, "b1"), "zz"])}`),
    "`contains` 100 values (new limit)": page(sql`t.tags @> ${textArray([...same(99, "b1"), "zz"])}`),
    "json `contains` 10,000 values (old limit)": page(
      sql`t.data @> ${JSON.stringify({ k: [...same(9_999, "b"), "zz"] })}::jsonb`,
    ),
    "json `contains` 1,000 values": page(
      sql`t.data @> ${JSON.stringify({ k: [...same(999, "b"), "zz"] })}::jsonb`,
    ),
    "json `contains` 100 values (new limit)": page(
      sql`t.data @> ${JSON.stringify({ k: [...same(99, "b"), "zz"] })}::jsonb`,
    ),
    "4 `ilike` of 256 characters (limit kept)": page(
      sql.join(
        Array.from({ length: 4 }, () => sql`t.title ILIKE ${PATTERN}::text`),
        sql` AND `,
      ),
    ),
    "`or` of 10 × `overlaps` 1,000 values (old limits)": page(
      anyOf(10, (p) => sql`t.tags && ${textArray(words(1000, p))}`),
    ),
    "`or` of 10 × `overlaps` 10 values (new: 100 per where)": page(
      anyOf(10, (p) => sql`t.tags && ${textArray(words(10, p))}`),
    ),
    "`or` of 100 × `in` 1,000 values (old limits)": page(
      anyOf(100, (p) => sql`t.title = ANY(${textArray(words(1000, p))})`),
    ),
    "`or` of 10 × `in` 100 values (new: 1,000 per where)": page(
      anyOf(10, (p) => sql`t.title = ANY(${textArray(words(100, p))})`),
    ),
  };

  /** Milliseconds of one statement, or Infinity when it passed the deadline. */
  async function timed(query: SQL): Promise<number> {
    const start = performance.now();
    try {
      await exec(query);
    } catch (err) {
      if ((err as { code?: string }).code === "57014") return Number.POSITIVE_INFINITY;
      throw err;
    }
    return performance.now() - start;
  }

  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
  const shown = (ms: number) =>
    Number.isFinite(ms) ? `${ms.toFixed(1)}` : `> ${STATEMENT_TIMEOUT_MS} (deadline)`;

  const samples: Record<string, number[]> = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
  for (const query of Object.values(cases)) await timed(query); // warm-up
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, query] of Object.entries(cases)) samples[name]?.push(await timed(query));
  }
  const base = median(samples["newest 20 (baseline)"] as number[]);
  console.log("\n| one call | p50 ms | × baseline |\n|---|---|---|");
  for (const [name, xs] of Object.entries(samples)) {
    const ms = median(xs);
    console.log(`| ${name} | ${shown(ms)} | ${Number.isFinite(ms) ? (ms / base).toFixed(1) : "—"}× |`);
  }

  // App B's calls while app A keeps k expensive calls in flight (closed loops), both through one pool
  // of 20 connections, as apps share the pooler's backends on Neon (≈ 94 at its smallest compute).
  const shared = new pg.Pool({
    connectionString: server.url,
    max: 20,
    statement_timeout: STATEMENT_TIMEOUT_MS,
  });
  const onShared = async (query: SQL) => {
    const { sql: text, params } = dialect.sqlToQuery(query);
    const start = performance.now();
    await shared.query(text, params);
    return performance.now() - start;
  };
  const EXPENSIVE = cases["`overlaps` 100 values (new limit)"] as SQL;
  const CHEAP = cases["newest 20 (baseline)"] as SQL;
  const MEDIUM = cases["`in` 1,000 values"] as SQL;
  // With `gated`, A's callers go through the per-app slots, as the data service sends them.
  const slots = new AppSlots(APP_SLOT_LIMITS);
  let refused = 0;
  async function victim(k: number, gated = false): Promise<[number, number]> {
    let stop = false;
    const loops = Array.from({ length: k }, async () => {
      while (!stop) {
        try {
          await (gated ? slots.run("a", () => onShared(EXPENSIVE)) : onShared(EXPENSIVE));
        } catch (err) {
          if ((err as { code?: string }).code === "57014") continue; // A's own statement hit the deadline
          if (!(err instanceof TooManyConcurrentError)) throw err;
          refused++;
          await new Promise((resolve) => setTimeout(resolve, SLOTS_RETRY_AFTER_SECONDS * 1000));
        }
      }
    });
    await new Promise((resolve) => setTimeout(resolve, k ? 500 : 0));
    const cheap: number[] = [];
    const medium: number[] = [];
    for (let i = 0; i < 7; i++) {
      cheap.push(await onShared(CHEAP));
      medium.push(await onShared(MEDIUM));
    }
    stop = true;
    await Promise.all(loops);
    return [median(cheap), median(medium)];
  }
  const [cheapAlone, mediumAlone] = await victim(0);
  console.log(
    "\n| app A's calls in flight (`overlaps` 100) | app B newest 20, p50 ms | × alone | app B `in` 1,000, p50 ms | × alone |\n|---|---|---|---|---|",
  );
  console.log(`| 0 | ${cheapAlone.toFixed(1)} | 1.0× | ${mediumAlone.toFixed(1)} | 1.0× |`);
  const row = (label: string, [cheap, medium]: [number, number]) =>
    console.log(
      `| ${label} | ${cheap.toFixed(1)} | ${(cheap / cheapAlone).toFixed(1)}× | ${medium.toFixed(1)} | ${(medium / mediumAlone).toFixed(1)}× |`,
    );
  for (const k of [2, 8, 16, 32]) row(String(k), await victim(k));
  const gated = await victim(64, true);
  row(
    `64 of A's callers through the per-app slots (${APP_SLOT_LIMITS.inFlight} run, the rest wait; ${refused} refused after ${APP_SLOT_LIMITS.waitMs / 1000} s)`,
    gated,
  );
  await shared.end();

  await pool.end();
} finally {
  await server.close();
}
