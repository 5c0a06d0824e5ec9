/**
 * The minimal Worker `npm run bench -- hotpath` measures the app against: Hono and the app's own
 * database module (`src/worker/db.ts`: the same Neon HTTP driver, drizzle, deadline fetch and
 * per-isolate client), no auth, no metering. `GET /hello` answers without the database (the
 * `wrangler dev` floor), `GET /bytes/:n` with an n-byte JSON body built once per size (the floor
 * for a response that large: `npm run bench -- toolslist`); `GET /find` runs the statement in `BENCH_SQL` / `BENCH_PARAMS` — the exact
 * text and parameters the app sent for the measured find — and returns its rows like the app does.
 */
import { SQL, StringChunk } from "drizzle-orm";
import { Hono } from "hono";
import { createDb } from "../../../src/worker/db.ts";

interface Bindings {
  DATABASE_URL: string;
  LOCAL_DB_URL?: string;
  DB_TIMEOUT_MS?: string;
  BENCH_SQL: string;
  BENCH_PARAMS: string;
}

/** `text` with `$1 … $n` (each once, in order) as a flat drizzle statement carrying `params`. */
function statement(text: string, params: unknown[]): SQL {
  const parts = text.split(/\$\d+/);
  const placeholders = [...text.matchAll(/\$(\d+)/g)].map((m) => Number(m[1]));
  if (placeholders.some((n, i) => n !== i + 1) || placeholders.length !== params.length) {
    throw new Error("BENCH_SQL must use $1 … $n once each, in order, one per BENCH_PARAMS entry");
  }
  const chunks: unknown[] = [new StringChunk(parts[0] ?? "")];
  for (const [i, param] of params.entries()) chunks.push(param, new StringChunk(parts[i + 1] ?? ""));
  return new SQL(chunks as SQL["queryChunks"]);
}

let find: SQL | undefined;
const bodies = new Map<number, string>();

export default new Hono<{ Bindings: Bindings }>()
  .get("/hello", (c) => c.text("hello"))
  .get("/bytes/:n", (c) => {
    const n = Math.min(Number(c.req.param("n")) || 2, 10_000_000);
    let body = bodies.get(n);
    if (!body) {
      body = `"${"x".repeat(Math.max(0, n - 2))}"`;
      bodies.set(n, body);
    }
    return c.body(body, 200, { "content-type": "application/json" });
  })
  .get("/find", async (c) => {
    find ??= statement(c.env.BENCH_SQL, JSON.parse(c.env.BENCH_PARAMS) as unknown[]);
    const { rows } = await createDb(c.env).execute(find);
    return c.json({ rows: rows.map((r) => (r as { row: unknown }).row) });
  });
