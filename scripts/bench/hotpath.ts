/**
 * `npm run bench -- hotpath`: the app's hot path against a fair baseline, all in one run under the
 * same `wrangler dev`, through the same local Neon endpoint, on the same 100,000-row table:
 * (a) the database direct (the statement straight to the backend: `pg` with `DATABASE_URL`, else
 * the embedded PGlite in-process), (b) a hello-world Worker, (c) a minimal Worker (Hono + the app's
 * db module, no auth) running the exact SQL the app sends for the find, (d) app MCP `tools/call
 * foods_find`, (e) REST `/find`, (f) app MCP `ping`. p50 at 1 in flight and req/s at 16 in flight,
 * rounds interleaved (case order shuffled each round, seeded), the first round discarded; every
 * Worker figure as a ratio to (c) and to (a).
 *
 * The app runs from a copy of wrangler.toml whose `RATE_LIMITER` limit is raised out of reach: the
 * limiter is still called on every request (its cost is measured), it just never says no.
 * Ports: `BENCH_PORT` (default 8817) for the app and the next one for the minimal Worker.
 */
import type { ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { projectSchemaName } from "../../src/data/sql.ts";
import type { RawQuery, SqlBackend } from "../../src/dev/backends.ts";
import { openConfigured, openFromSnapshot } from "../../src/dev/embedded.ts";
import { startNeonEndpoint } from "../../src/dev/neon-endpoint.ts";
import { spawnWranglerDev } from "../lib/wrangler-dev.ts";
import { seedDemo } from "../seed.ts";

const ROWS = 100_000;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const SERIAL = 40;
const PARALLEL = 160;
const IN_FLIGHT = 16;
const HOST = "127.0.0.1";
const APP_PORT = Number(process.env.BENCH_PORT ?? 8817);
const BASE_PORT = APP_PORT + 1;
const APP = `http://${HOST}:${APP_PORT}`;
const BASELINE = `http://${HOST}:${BASE_PORT}`;
const FIND_INPUT = { where: { calories: { lt: 200 } }, limit: 20 };

const root = join(import.meta.dirname, "../..");
const _wranglerBin = join(
  dirname(createRequire(import.meta.url).resolve("wrangler/package.json")),
  "bin/wrangler.js",
);
const load = [loadavg()];
const children: ChildProcess[] = [];
const tmp = mkdtempSync(join(tmpdir(), "amba-hotpath-"));

function stopAll() {
  for (const child of children) {
    if (child.pid && child.exitCode === null) {
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {}
    }
  }
}
process.on("exit", () => {
  stopAll();
  rmSync(tmp, { recursive: true, force: true });
});
process.on("SIGINT", () => process.exit(130));

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer()
      .once("error", () => resolve(false))
      .once("listening", () => probe.close(() => resolve(true)))
      .listen(port, HOST);
  });
}

/** `wrangler dev` of `config` on `port` (`npm run dev`'s wiring), waited for until `readyPath` answers. */
async function wranglerDev(config: string, port: number, readyPath: string, vars: Record<string, string>) {
  const child = spawnWranglerDev({
    host: HOST,
    port,
    endpoint,
    stateDir: join(tmp, `state-${port}`),
    vars,
    config,
    inspectorPort: port + 1000,
  });
  children.push(child);
  const deadline = Date.now() + 180_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`wrangler dev (${config}) exited`);
    try {
      if ((await fetch(`http://${HOST}:${port}${readyPath}`)).ok) return;
    } catch {}
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`wrangler dev (${config}) did not answer ${readyPath} within 180 s`);
}

/** The backend, recording the statements it is sent while `recording` is set. */
function recorded(backend: SqlBackend) {
  const seen: RawQuery[] = [];
  let recording = false;
  const wrapped: SqlBackend = {
    kind: backend.kind,
    query: (q) => {
      if (recording) seen.push(q);
      return backend.query(q);
    },
    transaction: (qs, options) => backend.transaction(qs, options),
    exec: (script) => backend.exec(script),
    close: () => backend.close(),
  };
  return {
    wrapped,
    async capture(run: () => Promise<unknown>): Promise<RawQuery[]> {
      seen.length = 0;
      recording = true;
      try {
        await run();
      } finally {
        recording = false;
      }
      return [...seen];
    },
  };
}

/**
 * `fetch`, retried once when a kept-alive connection turns out closed (workerd closes idle ones;
 * undici may pick one in that instant: "other side closed"). Any other failure is thrown.
 */
async function fetch(url: string, init?: RequestInit): Promise<Response> {
  try {
    return await globalThis.fetch(url, init);
  } catch (err) {
    const code = (err as { cause?: { code?: string } }).cause?.code;
    if (code !== "UND_ERR_SOCKET") throw err;
    return globalThis.fetch(url, init);
  }
}

async function json<T>(res: Response, what: string): Promise<T> {
  const text = await res.text();
  if (!res.ok) throw new Error(`${what} → ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as T;
}

for (const port of [APP_PORT, BASE_PORT]) {
  if (!(await portFree(port))) throw new Error(`port ${port} is in use; set BENCH_PORT`);
}

const backend = await openConfigured(() => openFromSnapshot());
const recorder = recorded(backend);
const endpoint = await startNeonEndpoint(recorder.wrapped);
const devVars = { FUNCTION_URL_POLICY: "dev" };

// The app, from its own wrangler.toml (absolute entry), the caller limit out of reach.
const appToml = readFileSync(join(root, "wrangler.toml"), "utf8")
  .replace(/^main = .*$/m, `main = ${JSON.stringify(join(root, "src/worker/index.ts"))}`)
  .replace(/(name = "RATE_LIMITER"[^[]*?simple = \{ limit = )\d+/, "$11000000000");
if (!appToml.includes("limit = 1000000000")) throw new Error("could not raise RATE_LIMITER in the copy");
mkdirSync(join(tmp, "app"));
writeFileSync(join(tmp, "app/wrangler.toml"), appToml);
const started = performance.now();
await wranglerDev(join(tmp, "app/wrangler.toml"), APP_PORT, "/healthz", { ...devVars, PUBLIC_BASE_URL: APP });
console.log(`app under wrangler dev ready in ${((performance.now() - started) / 1000).toFixed(1)} s`);

// The demo developer and project (the same path `npm run dev` takes), then `foods` with 100,000 rows.
const demo = await seedDemo(APP, join(tmp, "demo.json"));
const dev = { authorization: `Bearer ${demo.developerToken}`, "content-type": "application/json" };
await json(
  await fetch(`${APP}/v1/admin/projects/${demo.projectId}/collections`, {
    method: "POST",
    headers: dev,
    body: JSON.stringify({
      name: "foods",
      columns: [
        { name: "title", type: "text", required: true },
        { name: "calories", type: "integer" },
      ],
      access: { read: "public", write: "owner" },
    }),
  }),
  "create foods",
);
await json(
  await fetch(`${APP}/v1/admin/projects/${demo.projectId}/app-mcp/exposure`, {
    method: "PUT",
    headers: dev,
    body: JSON.stringify({ collections: ["recipes", "foods"] }),
  }),
  "expose foods",
);
const foods = `"${projectSchemaName(demo.projectId)}"."foods"`;
await backend.exec(`
  INSERT INTO ${foods} (id, title, calories, created_at, updated_at)
  SELECT gen_random_uuid(), 'food ' || i, i % 1000, now() - i * interval '1 second', now()
  FROM generate_series(1, ${ROWS}) AS i;
  ANALYZE ${foods};`);
console.log(`seeded ${ROWS} rows into foods`);

const mcpUrl = `${APP}/app/${demo.projectId}/mcp`;
const mcpHeaders = {
  ...dev,
  accept: "application/json, text/event-stream",
  "mcp-protocol-version": "2025-06-18",
};
const mcpBody = (method: string, params?: unknown) =>
  JSON.stringify({ jsonrpc: "2.0", id: 1, method, ...(params ? { params } : {}) });
const findCall = mcpBody("tools/call", { name: "foods_find", arguments: FIND_INPUT });
const pingCall = mcpBody("ping");
const restFind = `${APP}/v1/projects/${demo.projectId}/collections/foods/find`;
const restBody = JSON.stringify(FIND_INPUT);

// The statement the app sends for the find, captured at the endpoint; the baseline runs exactly it.
let mcpRows: unknown;
const sent = await recorder.capture(async () => {
  const reply = await json<{ result: { structuredContent?: { rows: unknown[] }; isError?: boolean } }>(
    await fetch(mcpUrl, { method: "POST", headers: mcpHeaders, body: findCall }),
    "tools/call foods_find",
  );
  if (reply.result.isError || !reply.result.structuredContent) throw new Error(JSON.stringify(reply));
  mcpRows = reply.result.structuredContent.rows;
});
const findSql = sent.find((q) => q.query.includes('"foods"'));
if (!findSql) throw new Error("the app's find statement was not seen at the endpoint");
console.log(
  `app MCP tools/call foods_find sent ${sent.length} statement(s) to the database: ${sent
    .map((q) => q.query.replace(/\s+/g, " ").slice(0, 40))
    .join(" | ")}`,
);

const baseToml = [
  'name = "amba-bench-baseline"',
  `main = ${JSON.stringify(join(import.meta.dirname, "workers/baseline-worker.ts"))}`,
  `compatibility_date = ${JSON.stringify(/^compatibility_date = "(.*)"$/m.exec(appToml)?.[1])}`,
  `compatibility_flags = ${/^compatibility_flags = (.*)$/m.exec(appToml)?.[1] ?? "[]"}`,
  /^minify = true$/m.test(appToml) ? "minify = true" : "",
  "[vars]",
  `BENCH_SQL = ${JSON.stringify(findSql.query)}`,
  `BENCH_PARAMS = ${JSON.stringify(JSON.stringify(findSql.params))}`,
  "",
].join("\n");
mkdirSync(join(tmp, "baseline"));
writeFileSync(join(tmp, "baseline/wrangler.toml"), baseToml);
await wranglerDev(join(tmp, "baseline/wrangler.toml"), BASE_PORT, "/hello", devVars);

// Every path must return the same rows before anything is timed.
const direct = (await backend.query(findSql)).rows.map((r) => JSON.parse(r[0] as string));
const base = await json<{ rows: unknown[] }>(await fetch(`${BASELINE}/find`), "baseline /find");
const rest = await json<{ rows: unknown[] }>(
  await fetch(restFind, { method: "POST", headers: dev, body: restBody }),
  "REST /find",
);
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
if (direct.length !== 21 || !same(direct.slice(0, 20), mcpRows) || !same(base.rows, direct)) {
  throw new Error("the database, the minimal Worker and app MCP returned different rows");
}
if (!same(rest.rows, mcpRows)) throw new Error("REST /find and app MCP returned different rows");

/** One request; throws unless it succeeded (a 429 or an error result would flatter the figures). */
const request = (url: string, init: RequestInit, ok: (text: string) => boolean) => async () => {
  const res = await fetch(url, init);
  const text = await res.text();
  if (res.status !== 200 || !ok(text)) throw new Error(`${url} → ${res.status} ${text.slice(0, 200)}`);
};
const anything = () => true;
const mcpOk = (text: string) => !text.includes('"isError":true') && !text.includes('"error":{');

const CASES: [string, () => Promise<unknown>][] = [
  [
    `(a) database direct (${backend.kind === "postgres" ? "pg" : "PGlite in-process"})`,
    () => backend.query(findSql),
  ],
  ["(b) hello-world Worker, no database", request(`${BASELINE}/hello`, {}, anything)],
  ["(c) minimal Worker + same SQL (baseline)", request(`${BASELINE}/find`, {}, anything)],
  [
    "(d) app MCP `tools/call foods_find`",
    request(mcpUrl, { method: "POST", headers: mcpHeaders, body: findCall }, mcpOk),
  ],
  ["(e) REST `/find`", request(restFind, { method: "POST", headers: dev, body: restBody }, anything)],
  ["(f) app MCP `ping`", request(mcpUrl, { method: "POST", headers: mcpHeaders, body: pingCall }, mcpOk)],
];

const latencies = new Map<string, number[]>(CASES.map(([name]) => [name, []]));
const throughput = new Map<string, number[]>(CASES.map(([name]) => [name, []]));
let seed = 11;
const random = () => {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  return seed / 2 ** 31;
};
const order = [...CASES];
for (let round = 0; round <= ROUNDS; round++) {
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j], order[i]] as [(typeof order)[number], (typeof order)[number]];
  }
  for (const [name, run] of order) {
    const serial: number[] = [];
    for (let i = 0; i < SERIAL; i++) {
      const start = performance.now();
      await run();
      serial.push(performance.now() - start);
    }
    let next = 0;
    const start = performance.now();
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next++ < PARALLEL) await run();
      }),
    );
    const perSecond = PARALLEL / ((performance.now() - start) / 1000);
    if (round === 0) continue; // warm-up
    latencies.get(name)?.push(...serial);
    throughput.get(name)?.push(perSecond);
  }
  process.stdout.write(round === 0 ? "warm-up round done\n" : `round ${round}/${ROUNDS} done\n`);
}
load.push(loadavg());

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const p50 = new Map(CASES.map(([name]) => [name, median(latencies.get(name) ?? [])]));
const rps = new Map(CASES.map(([name]) => [name, median(throughput.get(name) ?? [])]));
const [a, , c] = CASES.map(([name]) => name) as [string, string, string];
const x = (n: number) => `${n.toFixed(2)}×`;
console.log(
  `\nload average ${load.map((l) => l.map((n) => n.toFixed(1)).join(" / ")).join(" → ")} (1/5/15 min, start → end)`,
);
console.log(
  `${ROUNDS} rounds (+1 warm-up) of ${SERIAL} requests at 1 in flight and ${PARALLEL} at ${IN_FLIGHT}; p50 over all rounds' requests, req/s the median round\n`,
);
console.log("| path | p50 ms (c=1) | × (c) | × (a) | req/s (c=16) | × (c) | × (a) |");
console.log("|---|---|---|---|---|---|---|");
for (const [name] of CASES) {
  const ms = p50.get(name) as number;
  const r = rps.get(name) as number;
  console.log(
    `| ${name} | ${ms.toFixed(2)} | ${x(ms / (p50.get(c) as number))} | ${x(ms / (p50.get(a) as number))} | ${r.toFixed(0)} | ${x(r / (rps.get(c) as number))} | ${x(r / (rps.get(a) as number))} |`,
  );
}

stopAll();
await endpoint.close();
await backend.close();
rmSync(tmp, { recursive: true, force: true });
process.exit(0);
