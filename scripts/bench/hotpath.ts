/**
 * `npm run bench -- hotpath`: the app's hot path against a fair baseline, all in one run under the
 * same `wrangler dev`, through the same local Neon endpoint, on the same 100,000-row table:
 * (a) the database direct (the statement straight to the backend: `pg` with `DATABASE_URL`, else
 * the embedded PGlite in-process), (b) a hello-world Worker, (c) a minimal Worker (Hono + the app's
 * db module, no auth) running the exact SQL the app sends for the find, (d) app MCP `tools/call
 * foods_find`, (e) REST `/find`, (f) app MCP `ping`, (g) (d) as the demo's end user. p50 at 1 in
 * flight and req/s at 16 in flight, rounds interleaved (case order shuffled each round, seeded), the
 * first round discarded; every Worker figure as a ratio to (c) and to (a).
 *
 * The app runs from a copy of wrangler.toml whose caller and per-app limits are raised out of reach:
 * the limiters are still called on every request (their cost is measured), they just never say no.
 * Ports: `BENCH_PORT` (default 8817) for the app and the next one for the minimal Worker.
 */
import { loadavg } from "node:os";
import {
  captureFind,
  FIND_INPUT,
  benchFetch as fetch,
  json,
  mcpBody,
  openBenchRig,
  seededShuffler,
} from "../lib/bench-app.ts";

const ROWS = 100_000;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const SERIAL = 40;
const PARALLEL = 160;
const IN_FLIGHT = 16;
const APP_PORT = Number(process.env.BENCH_PORT ?? 8817);
const BASE_PORT = APP_PORT + 1;
const load = [loadavg()];

const rig = await openBenchRig("hotpath", [APP_PORT, BASE_PORT]);
const { backend } = rig;
const app = await rig.startApp(APP_PORT, ROWS);
const { dev, mcpUrl, mcpHeaders, restFind } = app;
const findCall = mcpBody("tools/call", { name: "foods_find", arguments: FIND_INPUT });
// The same find as the demo's signed-in end user (client key + session; `foods` reads are public, so
// the rows are the same): the in-app assistant's path, which also counts on the app's budget.
const { authorization: _, ...mcpBase } = mcpHeaders;
const endUserMcpHeaders = {
  ...mcpBase,
  "x-api-key": app.demo.clientKey,
  authorization: `Bearer ${app.demo.sessionToken}`,
};
const pingCall = mcpBody("ping");
const restBody = JSON.stringify(FIND_INPUT);

// The statement the app sends for the find, captured at the endpoint; the baseline runs exactly it.
const { sent, find: findSql, rows: mcpRows } = await captureFind(rig, app);
console.log(
  `app MCP tools/call foods_find sent ${sent.length} statement(s) to the database: ${sent
    .map((q) => q.query.replace(/\s+/g, " ").slice(0, 40))
    .join(" | ")}`,
);
const BASELINE = await rig.startBaseline(BASE_PORT, findSql);

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
const asEndUser = await json<{ result: { structuredContent?: { rows: unknown[] } } }>(
  await fetch(mcpUrl, { method: "POST", headers: endUserMcpHeaders, body: findCall }),
  "tools/call foods_find as the end user",
);
if (!same(asEndUser.result.structuredContent?.rows, mcpRows)) {
  throw new Error("the end user and the developer got different rows from foods_find");
}

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
  [
    "(g) app MCP `tools/call foods_find`, end user",
    request(mcpUrl, { method: "POST", headers: endUserMcpHeaders, body: findCall }, mcpOk),
  ],
];

const latencies = new Map<string, number[]>(CASES.map(([name]) => [name, []]));
/** Each round's p50 per case: ratios within a round pair the paths under the same machine state. */
const roundP50s = new Map<string, number[]>(CASES.map(([name]) => [name, []]));
const throughput = new Map<string, number[]>(CASES.map(([name]) => [name, []]));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const shuffle = seededShuffler(11);
const order = [...CASES];
for (let round = 0; round <= ROUNDS; round++) {
  shuffle(order);
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
    roundP50s.get(name)?.push(median(serial));
    throughput.get(name)?.push(perSecond);
  }
  process.stdout.write(round === 0 ? "warm-up round done\n" : `round ${round}/${ROUNDS} done\n`);
}
load.push(loadavg());

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

// The same ratios paired per round (each round's p50 of a path over the baseline's in that round):
// the spread says how much of a single run's ratio is the machine.
const perRound = (name: string, base: string, by: Map<string, number[]>) => {
  const ours = by.get(name) ?? [];
  const theirs = by.get(base) ?? [];
  return ours.map((v, i) => v / (theirs[i] as number));
};
console.log(
  "\n| path | per-round p50 × (c): median | min | max | per-round req/s × (c): median | min | max |",
);
console.log("|---|---|---|---|---|---|---|");
for (const [name] of CASES.slice(3)) {
  const lat = perRound(name, c, roundP50s);
  const thr = perRound(name, c, throughput);
  console.log(
    `| ${name} | ${x(median(lat))} | ${x(Math.min(...lat))} | ${x(Math.max(...lat))} | ${x(median(thr))} | ${x(Math.min(...thr))} | ${x(Math.max(...thr))} |`,
  );
}

await rig.close();
process.exit(0);
