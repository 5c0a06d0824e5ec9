/**
 * Data plane on the embedded database (PGlite + pgvector), 100,000 rows:
 * - keyset pagination: `list` page 1 vs the page at depth 10,000 (cursor), both through the data
 *   service; OFFSET 10,000 shown for contrast (goal: depth ≤ 1.2× page 1);
 * - `find` with an indexed filter through the data service (validation, policy, compilation, row
 *   mapping) vs the same compiled SQL sent straight to the database (goal ≤ 1.5× p50), twice:
 *   in-process (a thin runner: PGlite `query` of the compiled SQL) and production-shaped, over the
 *   local Neon HTTP endpoint (service on drizzle neon-http vs the bare `neon()` driver call).
 * Each figure is the median of interleaved rounds in the same run, after warm-up rounds; the case
 * order is shuffled every round (seeded) so no case always runs right after the same other case
 * (a 2.4 ms OFFSET scan, or the identical query just answered, changes what is warm).
 * The baseline is checked to be the exact SQL text and parameters the service sends, with the same rows.
 */
import { neon, neonConfig } from "@neondatabase/serverless";
import { type SQL, sql } from "drizzle-orm";
import { drizzle as drizzleNeon } from "drizzle-orm/neon-http";
import { PgDialect } from "drizzle-orm/pg-core";
import { drizzle } from "drizzle-orm/pglite";
import type { CollectionMeta } from "../../src/data/columns.ts";
import { encodeCursor } from "../../src/data/cursor.ts";
import { type Actor, findRows, listRows, type SqlRunner } from "../../src/data/service.ts";
import {
  compileWhere,
  createTableStatements,
  notDeleted,
  parseOrder,
  selectPage,
  tableRef,
} from "../../src/data/sql.ts";
import { openPglite } from "../../src/dev/backends.ts";
import { startNeonEndpoint } from "../../src/dev/neon-endpoint.ts";
import { checkInputLimits } from "../../src/validate.ts";
import { seededShuffler } from "../lib/bench-app.ts";

const ROWS = 100_000;
const DEPTH = 10_000;
const ROUNDS = 400;
const WARMUP = 40;

const backend = await openPglite();
const pglite = backend.db;
await pglite.exec("CREATE EXTENSION IF NOT EXISTS vector");
const db = drizzle({ client: pglite });
const dialect = new PgDialect();
// In-process runner: compile with drizzle's dialect, run on PGlite (drizzle-pglite's own execute adds
// per-query parser setup that production — neon-http — does not pay).
const runner: SqlRunner = {
  async execute(query: SQL) {
    const { sql: text, params } = dialect.sqlToQuery(query);
    return pglite.query(text, params);
  },
};
const endpoint = await startNeonEndpoint(backend);
neonConfig.fetchEndpoint = () => endpoint.url;
const neonClient = neon(endpoint.connectionString);
const httpRunner = drizzleNeon({ client: neonClient }) as unknown as SqlRunner;
const meta: CollectionMeta = {
  projectId: crypto.randomUUID(),
  name: "recipes",
  columns: [
    { name: "title", type: "text", required: true },
    { name: "calories", type: "integer" },
    { name: "sku", type: "text", unique: true },
  ],
  access: { read: "owner", write: "owner" },
};
for (const statement of createTableStatements(meta)) await db.execute(statement);

const seedStart = performance.now();
const owner = crypto.randomUUID();
await db.execute(sql`
  INSERT INTO ${tableRef(meta)} (id, owner_id, title, calories, sku, created_at, updated_at)
  SELECT gen_random_uuid(), CASE WHEN i % 2 = 0 THEN ${owner}::uuid END, 'dish ' || i, i % 1000, 'sku-' || i,
         now() - i * interval '1 second', now()
  FROM generate_series(1, ${ROWS}) AS i`);
await db.execute(sql`ANALYZE ${tableRef(meta)}`);
console.log(`seeded ${ROWS} rows in ${((performance.now() - seedStart) / 1000).toFixed(1)} s`);

// One tenant's slots (the bench's app has no developer row; any id names them).
const tenant = crypto.randomUUID();
const developer: Actor = { scope: "developer", tenant };
const endUser: Actor = { scope: "end_user", userId: owner, tenant };

// The cursor of the row at depth 10,000 (newest first), as the service would have issued it.
const [deep] = (
  await db.execute(sql`SELECT created_at::text AS at, id::text AS id FROM ${tableRef(meta)} AS t
    WHERE t.deleted_at IS NULL ORDER BY created_at DESC, id DESC OFFSET ${DEPTH - 1} LIMIT 1`)
).rows as { at: string; id: string }[];
const [deepJson] = (
  await db.execute(sql`SELECT to_json(created_at) AS at FROM ${tableRef(meta)} WHERE id = ${deep?.id}::uuid`)
).rows as { at: string }[];
const deepCursor = encodeCursor({ order: "created_at desc", value: deepJson?.at, id: deep?.id as string });

// Sanity: the deep page starts right after row 10,000.
const deepPage = await listRows(runner, developer, meta, { limit: 20, cursor: deepCursor });
const offsetPage =
  await db.execute(sql`SELECT id::text AS id FROM ${tableRef(meta)} AS t WHERE t.deleted_at IS NULL
  ORDER BY created_at DESC, id DESC OFFSET ${DEPTH} LIMIT 20`);
if (
  JSON.stringify(deepPage.rows.map((r) => r.id)) !==
  JSON.stringify(offsetPage.rows.map((r) => (r as { id: string }).id))
) {
  throw new Error("deep keyset page differs from OFFSET page");
}

// find: end user (owner policy → owner index) with a filter on the unique (indexed) sku column.
const findInput = { where: { sku: { in: ["sku-5000", "sku-5002", "sku-77778", "sku-3"] } }, limit: 20 };
// The baseline is the statement the service itself sends, captured once.
let sent: { sql: string; params: unknown[] } | undefined;
const recorder: SqlRunner = {
  execute(query: SQL) {
    sent = dialect.sqlToQuery(query);
    return runner.execute(query);
  },
};
const viaService = await findRows(recorder, endUser, meta, findInput);
const compiled = sent as { sql: string; params: unknown[] };
const expected = dialect.sqlToQuery(
  selectPage(
    meta,
    [notDeleted, sql`t.owner_id = ${owner}::uuid`, compileWhere(meta, findInput.where)],
    parseOrder(meta),
    21,
  ),
);
if (compiled.sql !== expected.sql || JSON.stringify(compiled.params) !== JSON.stringify(expected.params)) {
  throw new Error("the service did not send the expected find statement");
}
const direct = await pglite.query<{ row: unknown }>(compiled.sql, compiled.params);
if (
  viaService.rows.length !== 3 ||
  JSON.stringify(viaService.rows) !== JSON.stringify(direct.rows.map((r) => r.row))
) {
  throw new Error("find through the service and straight to the database differ");
}
const overHttp = await findRows(httpRunner, endUser, meta, findInput);
const bareHttp = (await neonClient.query(compiled.sql, compiled.params)) as { row: unknown }[];
if (JSON.stringify(overHttp.rows) !== JSON.stringify(bareHttp.map((r) => r.row))) {
  throw new Error("find over HTTP: service and bare driver differ");
}

const findBody = JSON.stringify(findInput);
const cases: Record<string, () => Promise<unknown>> = {
  "list page 1 (service)": () => listRows(runner, developer, meta, { limit: 20 }),
  "list page at depth 10,000 (service, cursor)": () =>
    listRows(runner, developer, meta, { limit: 20, cursor: deepCursor }),
  "OFFSET 10,000 (raw SQL, contrast)": () =>
    pglite.query(`SELECT id FROM ${`"app_${meta.projectId.replace(/-/g, "")}"."recipes"`} WHERE deleted_at IS NULL
      ORDER BY created_at DESC, id DESC OFFSET ${DEPTH} LIMIT 21`),
  "find, indexed filter (service)": () => findRows(runner, endUser, meta, findInput),
  // What a request adds before the service since the input limits (src/limits.ts): parse the body
  // text, walk it for depth/size/finite numbers/NUL.
  "find, body parsed and limit-checked, then the service": () => {
    const body = JSON.parse(findBody) as typeof findInput;
    checkInputLimits(body, "body");
    return findRows(runner, endUser, meta, body);
  },
  "find, same SQL straight to the database": () => pglite.query(compiled.sql, compiled.params),
  "find over HTTP (service, neon-http)": () => findRows(httpRunner, endUser, meta, findInput),
  "find over HTTP (bare neon driver)": () => neonClient.query(compiled.sql, compiled.params as unknown[]),
};
const samples: Record<string, number[]> = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
const order = Object.entries(cases);
const shuffle = seededShuffler(42);
for (let round = 0; round < WARMUP + ROUNDS; round++) {
  shuffle(order);
  for (const [name, run] of order) {
    const start = performance.now();
    await run();
    if (round >= WARMUP) samples[name]?.push(performance.now() - start);
  }
}
const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const median = Object.fromEntries(Object.entries(samples).map(([k, xs]) => [k, p50(xs)]));
const ms = (name: string) => (median[name] as number).toFixed(3);
const ratio = (a: string, b: string) => ((median[a] as number) / (median[b] as number)).toFixed(2);

console.log(`\n| case | p50 ms | ratio |\n|---|---|---|`);
console.log(`| list page 1 (baseline) | ${ms("list page 1 (service)")} | 1.00× |`);
console.log(
  `| list page at depth 10,000 (keyset cursor) | ${ms("list page at depth 10,000 (service, cursor)")} | ${ratio("list page at depth 10,000 (service, cursor)", "list page 1 (service)")}× (goal ≤ 1.2) |`,
);
console.log(
  `| OFFSET 10,000, raw SQL (contrast) | ${ms("OFFSET 10,000 (raw SQL, contrast)")} | ${ratio("OFFSET 10,000 (raw SQL, contrast)", "list page 1 (service)")}× |`,
);
console.log(
  `| find, same SQL straight to PGlite (baseline) | ${ms("find, same SQL straight to the database")} | 1.00× |`,
);
console.log(
  `| find, indexed filter, through the data service | ${ms("find, indexed filter (service)")} | ${ratio("find, indexed filter (service)", "find, same SQL straight to the database")}× (goal ≤ 1.5) |`,
);
console.log(
  `| find, body parsed + input-limit check + data service | ${ms("find, body parsed and limit-checked, then the service")} | ${ratio("find, body parsed and limit-checked, then the service", "find, same SQL straight to the database")}× (${ratio("find, body parsed and limit-checked, then the service", "find, indexed filter (service)")}× the service alone) |`,
);
console.log(
  `| find over the local Neon HTTP endpoint, bare \`neon()\` call (baseline) | ${ms("find over HTTP (bare neon driver)")} | 1.00× |`,
);
console.log(
  `| find over the local Neon HTTP endpoint, data service on drizzle neon-http | ${ms("find over HTTP (service, neon-http)")} | ${ratio("find over HTTP (service, neon-http)", "find over HTTP (bare neon driver)")}× (goal ≤ 1.5) |`,
);
await endpoint.close();
await backend.close();
