/**
 * `npm run bench -- toolslist`: the first `tools/list` page of an app with 1, 100 and 1,000 exposed
 * collections (copies of DESIGN.md's `recipes`: owner/owner, four columns, one a vector), developer
 * scope, against the hello-world Worker (scripts/bench/workers/baseline-worker.ts `/hello`) and the
 * app's own `ping` in the same run, all under `wrangler dev` through the local Neon endpoint:
 *
 * - warm: the surface of the current `meta_rev` is in isolate memory (after one list), so the page
 *   is the pre-serialised text of (rev, scope, version, page);
 * - first after a change: each sample follows a `PUT …/app-mcp/exposure` (same set; it bumps
 *   `meta_rev`), so the list reads the metadata from Postgres, generates the scope's tools, renders
 *   and serialises the page.
 *
 * Latency is wall-clock at 1 in flight, p50 over the rounds (case order shuffled per round, seeded,
 * first round discarded); "above the floor" is p50 − the hello-world p50 of the same run, and "above
 * the same bytes" p50 − the hello-world Worker answering a body of the page's size (`/bytes/:n`):
 * under `wrangler dev` the body crosses a local proxy, which costs by the byte whatever the Worker
 * did. Collections
 * are created through the API (the path a developer takes), exposed with one PUT.
 * Ports: `BENCH_PORT` (default 8827) for the app and the next one for the hello-world Worker.
 */
import { loadavg } from "node:os";
import { join } from "node:path";
import { benchFetch as fetch, json, openBenchRig, seededShuffler } from "../lib/bench-app.ts";
import { seedDemo } from "../seed.ts";

/** Exposed collections per measured app (`BENCH_SIZES=1,10` for a quick check; 1 must be among them). */
const SIZES = (process.env.BENCH_SIZES ?? "1,100,1000").split(",").map(Number);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const WARM = 20;
const CHANGED = 4;
const APP_PORT = Number(process.env.BENCH_PORT ?? 8827);
const BASE_PORT = APP_PORT + 1;
const COLUMNS = [
  { name: "title", type: "text", required: true, description: "Dish name" },
  { name: "calories", type: "integer" },
  { name: "tags", type: "text[]" },
  { name: "embedding", type: "vector", dimensions: 3 },
];

const load = [loadavg()];
const rig = await openBenchRig("toolslist", [APP_PORT, BASE_PORT]);
const APP = await rig.startBareApp(APP_PORT);
const BASELINE = await rig.startBaseline(BASE_PORT, { query: "select 1", params: [] });

async function call<T>(url: string, init: RequestInit, what: string): Promise<T> {
  return json<T>(await fetch(url, init), what);
}

// A developer, then one project per size with that many `recipes_NNNN` collections, all exposed.
const demo = await seedDemo(APP, join(rig.tmp, "demo.json"));
const dev = { authorization: `Bearer ${demo.developerToken}`, "content-type": "application/json" };
const projects = new Map<number, string>();
const seeding = performance.now();
for (const size of SIZES) {
  const project = await call<{ id: string }>(
    `${APP}/v1/admin/projects`,
    { method: "POST", headers: dev, body: JSON.stringify({ name: `Recipe Box ${size}` }) },
    "create project",
  );
  const names = Array.from({ length: size }, (_, i) => `recipes_${String(i).padStart(4, "0")}`);
  for (const name of names) {
    await call(
      `${APP}/v1/admin/projects/${project.id}/collections`,
      {
        method: "POST",
        headers: dev,
        body: JSON.stringify({ name, columns: COLUMNS, access: { read: "owner", write: "owner" } }),
      },
      `create ${name}`,
    );
  }
  projects.set(size, project.id);
  process.stdout.write(`project with ${size} collection(s) seeded\n`);
}
console.log(`seeded through the API in ${((performance.now() - seeding) / 1000).toFixed(0)} s`);

const mcpHeaders = {
  ...dev,
  accept: "application/json, text/event-stream",
  "mcp-protocol-version": "2025-06-18",
};
const LIST = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" });
const PING = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" });
const exposure = (size: number) =>
  JSON.stringify({
    collections: Array.from({ length: size }, (_, i) => `recipes_${String(i).padStart(4, "0")}`),
  });

/** Sets the exposure (same set each time: a change that bumps `meta_rev`). */
const expose = (size: number) =>
  call(
    `${APP}/v1/admin/projects/${projects.get(size)}/app-mcp/exposure`,
    { method: "PUT", headers: dev, body: exposure(size) },
    "set exposure",
  );

/** One timed request; throws unless it is a 200 with a result (an error would flatter the figure). */
async function timed(url: string, init: RequestInit, check: (text: string) => void): Promise<number> {
  const start = performance.now();
  const res = await fetch(url, init);
  const text = await res.text();
  const ms = performance.now() - start;
  if (res.status !== 200) throw new Error(`${url} → ${res.status} ${text.slice(0, 200)}`);
  check(text);
  return ms;
}

const pageBytes = new Map<number, number>();
const listOnce = (size: number) =>
  timed(
    `${APP}/app/${projects.get(size)}/mcp`,
    { method: "POST", headers: mcpHeaders, body: LIST },
    (text) => {
      const page = JSON.parse(text) as { result?: { tools: unknown[] } };
      const expected = Math.min(100, 2 + size * 7);
      if (page.result?.tools.length !== expected)
        throw new Error(`tools/list (${size}): ${text.slice(0, 200)}`);
      pageBytes.set(size, Buffer.byteLength(text));
    },
  );

for (const size of SIZES) await expose(size);

type Case = [string, () => Promise<number[]>];
const repeat = async (n: number, run: () => Promise<number>) => {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(await run());
  return out;
};
// Page sizes first (the same-bytes references need them).
for (const size of SIZES) await listOnce(size);
const CASES: Case[] = [
  ["hello-world Worker (floor)", () => repeat(WARM, () => timed(`${BASELINE}/hello`, {}, () => {}))],
  ...SIZES.map(
    (size): Case => [
      `hello-world Worker, body of page 1's size at ${size} collection(s)`,
      () => repeat(WARM, () => timed(`${BASELINE}/bytes/${pageBytes.get(size)}`, {}, () => {})),
    ],
  ),
  [
    "app MCP `ping`",
    () =>
      repeat(WARM, () =>
        timed(
          `${APP}/app/${projects.get(1)}/mcp`,
          { method: "POST", headers: mcpHeaders, body: PING },
          (text) => {
            if (!text.includes('"result"')) throw new Error(text);
          },
        ),
      ),
  ],
  ...SIZES.map(
    (size): Case => [
      `tools/list page 1, ${size} collection(s), warm`,
      async () => {
        await listOnce(size);
        return repeat(WARM, () => listOnce(size));
      },
    ],
  ),
  ...SIZES.map(
    (size): Case => [
      `tools/list page 1, ${size} collection(s), first after a change`,
      () =>
        repeat(CHANGED, async () => {
          await expose(size);
          return listOnce(size);
        }),
    ],
  ),
];

const samples = new Map<string, number[]>(CASES.map(([name]) => [name, []]));
const shuffle = seededShuffler(7);
const order = [...CASES];
for (let round = 0; round <= ROUNDS; round++) {
  shuffle(order);
  for (const [name, run] of order) {
    const ms = await run();
    if (round > 0) samples.get(name)?.push(...ms);
  }
  process.stdout.write(round === 0 ? "warm-up round done\n" : `round ${round}/${ROUNDS} done\n`);
}
load.push(loadavg());

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const floor = median(samples.get(CASES[0]![0]) ?? []);
console.log(
  `\nload average ${load.map((l) => l.map((n) => n.toFixed(1)).join(" / ")).join(" → ")} (1/5/15 min, start → end)`,
);
console.log(
  `${ROUNDS} rounds (+1 warm-up): ${WARM} warm requests or ${CHANGED} changes per case and round; p50 over all rounds\n`,
);
const sameBytes = (size: number) =>
  median(samples.get(`hello-world Worker, body of page 1's size at ${size} collection(s)`) ?? []);
console.log(
  "| request | p50 ms | above the floor, ms | above the same bytes, ms | samples | response bytes |",
);
console.log("|---|---|---|---|---|---|");
for (const [name] of CASES) {
  const xs = samples.get(name) ?? [];
  const ms = median(xs);
  const size = /(\d+) collection/.exec(name)?.[1];
  const bytes = size ? (pageBytes.get(Number(size))?.toLocaleString("en") ?? "") : "";
  const aboveFloor = name.includes("(floor)") ? "—" : (ms - floor).toFixed(2);
  const aboveBytes = name.startsWith("tools/list") && size ? (ms - sameBytes(Number(size))).toFixed(2) : "—";
  console.log(`| ${name} | ${ms.toFixed(2)} | ${aboveFloor} | ${aboveBytes} | ${xs.length} | ${bytes} |`);
}

await rig.close();
process.exit(0);
