/**
 * `npm run bench -- cpu`: CPU time per request inside workerd (what Workers bill, and what the free
 * plan cuts at 10 ms), from the V8 sampling profiler of each Worker's isolate over its inspector
 * port. The app runs under `wrangler dev` the way `npm run dev` wires it (scripts/lib/bench-app.ts:
 * the hot-path rig, 100,000-row `foods`); for each request type N requests are sent one after
 * another while the profiler samples, and
 *
 *   CPU ms / request = sampled JavaScript time / N,
 *
 * with `(program)` (native work V8 cannot attribute: parsing, the runtime's own C++) and GC printed
 * beside it and `(idle)` excluded. Types: app MCP `ping`, `tools/list` (first page), `tools/call
 * foods_find`, `tools/call foods_insert`, REST `/find`, and as baselines in the same run the
 * hello-world Worker's `/hello` and the minimal Worker's `/find` (scripts/bench/workers/). Each is
 * profiled at N/4 and at N requests: the per-request figures agree when the method is sound (time
 * scales with N, not with the wall clock). Then the top self-time functions per type.
 *
 * `BENCH_COMPARE=<checkout>` also runs the app of another checkout (say, main's: a folder with
 * its own node_modules) on the same database, profiled in the same rounds: the before/after table.
 * Env: `BENCH_N` (default 200), `BENCH_SAMPLE_US` (sampling interval, default 100), `BENCH_TOP`
 * (functions listed per type, default 12), `BENCH_PORT` (default 8827; the next ones for the
 * minimal Worker and the compared app; inspectors on port + 1000).
 */
import { loadavg } from "node:os";
import { join } from "node:path";
import {
  BENCH_HOST,
  type BenchApp,
  benchFetch,
  captureFind,
  FIND_INPUT,
  inspectorPortOf,
  mcpBody,
  openBenchRig,
} from "../lib/bench-app.ts";
import { type Cpu, type CpuCase, measureCpu, profileCase, workerdOf } from "../lib/cpu-cases.ts";
import { type CpuTimes, Inspector } from "../lib/cpu-profile.ts";

const N = Number(process.env.BENCH_N ?? 200);
const SAMPLE_US = Number(process.env.BENCH_SAMPLE_US ?? 100);
const TOP = Number(process.env.BENCH_TOP ?? 12);
const WARM_UP = 20;
const ROWS = Number(process.env.BENCH_ROWS ?? 100_000);
const APP_PORT = Number(process.env.BENCH_PORT ?? 8827);
const BASE_PORT = APP_PORT + 1;
const COMPARE_PORT = APP_PORT + 2;
const COMPARE = process.env.BENCH_COMPARE;
const root = join(import.meta.dirname, "../..");
const load = [loadavg()];

const rig = await openBenchRig("cpu", COMPARE ? [APP_PORT, BASE_PORT, COMPARE_PORT] : [APP_PORT, BASE_PORT]);
const app = await rig.startApp(APP_PORT, ROWS);
const { find } = await captureFind(rig, app);
const baseline = await rig.startBaseline(BASE_PORT, find);
const compared = COMPARE ? await rig.startCheckout(COMPARE, COMPARE_PORT, app) : undefined;

/** One request; throws unless it succeeded (an error answer would flatter the figures). */
const request = (url: string, init: RequestInit, ok: (text: string) => boolean) => async () => {
  const res = await benchFetch(url, init);
  const text = await res.text();
  if (res.status !== 200 || !ok(text)) throw new Error(`${url} → ${res.status} ${text.slice(0, 200)}`);
};
const anything = () => true;
const mcpOk = (text: string) => !text.includes('"isError":true') && !text.includes('"error":{');

let inserted = 0;
/** The app's request types, against `target` (this checkout's app or the compared one). */
function appCases(target: BenchApp): [string, () => Promise<void>][] {
  const mcp = (body: () => string) => async () =>
    request(target.mcpUrl, { method: "POST", headers: target.mcpHeaders, body: body() }, mcpOk)();
  return [
    ["app MCP `ping`", mcp(() => mcpBody("ping"))],
    ["app MCP `tools/list` (first page)", mcp(() => mcpBody("tools/list"))],
    [
      "app MCP `tools/call foods_find`",
      mcp(() => mcpBody("tools/call", { name: "foods_find", arguments: FIND_INPUT })),
    ],
    [
      "app MCP `tools/call foods_insert`",
      mcp(() =>
        mcpBody("tools/call", {
          name: "foods_insert",
          arguments: { title: `cpu bench ${++inserted}`, calories: inserted % 1000 },
        }),
      ),
    ],
    [
      "REST `/find`",
      request(
        target.restFind,
        { method: "POST", headers: target.dev, body: JSON.stringify(FIND_INPUT) },
        anything,
      ),
    ],
  ];
}

type Case = CpuCase;
const workers: [string, string, number, [string, () => Promise<void>][]][] = [
  ["this checkout", root, APP_PORT, appCases(app)],
  [
    "baseline",
    root,
    BASE_PORT,
    [
      ["hello-world Worker `/hello`", request(`${baseline}/hello`, {}, anything)],
      ["minimal Worker `/find` (same SQL)", request(`${baseline}/find`, {}, anything)],
    ],
  ],
];
if (compared && COMPARE) workers.push(["compared", COMPARE, COMPARE_PORT, appCases(compared)]);

const cases: Case[] = [];
const inspectors: Inspector[] = [];
for (const [worker, checkout, port, list] of workers) {
  const inspector = await Inspector.connect(BENCH_HOST, inspectorPortOf(port));
  inspectors.push(inspector);
  for (const [name, run] of list)
    cases.push({ worker, root: checkout, name, inspector, ...workerdOf(rig.wranglerPid(port), port), run });
}

const cpu = measureCpu;
const profile = (c: Case, n: number) => profileCase(c, n, SAMPLE_US);

const n4 = Math.max(1, Math.round(N / 4));
const small = new Map<Case, Cpu>();
const full = new Map<Case, Cpu>();
const profiles = new Map<Case, CpuTimes>();
for (const c of cases) for (let i = 0; i < WARM_UP; i++) await c.run();
// Interleaved: every case at N/4, then every case at N, so drift (load, JIT) hits all alike.
for (const c of cases) small.set(c, await cpu(c, n4));
for (const c of cases) full.set(c, await cpu(c, N));
for (const c of cases) profiles.set(c, await profile(c, N));
load.push(loadavg());
for (const inspector of inspectors) inspector.close();

const ms = (n: number) => n.toFixed(2);
const hello = full.get(cases.find((c) => c.name.startsWith("hello-world")) as Case) as Cpu;
console.log(
  `\nload average ${load.map((l) => l.map((n) => n.toFixed(1)).join(" / ")).join(" → ")} (1/5/15 min, start → end)`,
);
console.log(
  `N = ${N} sequential requests per type (N/4 = ${n4} for the scaling check); CPU = run time of the runtime workerd's threads (/proc schedstat), per request\n`,
);
console.log(
  "| Worker | request | CPU ms/req | − hello-world | × hello-world | at N/4 | proxy workerd ms/req | wall ms/req |",
);
console.log("|---|---|---|---|---|---|---|---|");
for (const c of cases) {
  const t = full.get(c) as Cpu;
  const s = small.get(c) as Cpu;
  console.log(
    `| ${c.worker} | ${c.name} | ${ms(t.runtimeMs)} | ${ms(t.runtimeMs - hello.runtimeMs)} | ${(t.runtimeMs / hello.runtimeMs).toFixed(2)}× | ${ms(s.runtimeMs)} | ${ms(t.proxyMs)} | ${ms(t.wallMs)} |`,
  );
}

if (compared) {
  console.log(`\nBefore/after: the compared checkout (${COMPARE}) → this one, same run, ms/req`);
  console.log("| request | workerd CPU before | after | JS sampled before | after |");
  console.log("|---|---|---|---|---|");
  for (const c of cases.filter((c) => c.worker === "this checkout")) {
    const before = cases.find((b) => b.worker === "compared" && b.name === c.name) as Case;
    const [cb, ca] = [full.get(before), full.get(c)] as [Cpu, Cpu];
    const [pb, pa] = [profiles.get(before), profiles.get(c)] as [CpuTimes, CpuTimes];
    console.log(
      `| ${c.name} | ${ms(cb.runtimeMs)} | ${ms(ca.runtimeMs)} | ${ms(pb.jsMs / N)} | ${ms(pa.jsMs / N)} |`,
    );
  }
}

console.log(
  `\nSampling profiler (a sample every ${SAMPLE_US} µs while the isolate runs; N requests per type), ms/req:`,
);
for (const c of cases) {
  const t = profiles.get(c) as CpuTimes;
  const top = [...t.self].sort((a, b) => b[1] - a[1]).slice(0, TOP);
  console.log(
    `\n${c.worker} — ${c.name}: JS ${ms(t.jsMs / N)}, (program) ${ms(t.programMs / N)}, GC ${ms(t.gcMs / N)}; top self time:`,
  );
  for (const [name, self] of top) console.log(`  ${(self / N).toFixed(3).padStart(6)}  ${name}`);
  const own = [...t.total].sort((a, b) => b[1] - a[1]).slice(0, TOP);
  console.log("  the project's own functions, inclusive (callees on the same synchronous stack):");
  for (const [name, total] of own) console.log(`  ${(total / N).toFixed(3).padStart(6)}  ${name}`);
}

await rig.close();
process.exit(0);
