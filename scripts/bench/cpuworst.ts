/**
 * `npm run bench -- cpuworst`: Worker CPU of the most expensive request each limit still allows,
 * per request type, against the ordinary request of that type measured in the same run — one
 * tenant's worst request must not hold an isolate other tenants share, and Cloudflare stops a
 * request at its CPU limit (10 ms on the free plan). Same rig and same measuring method as `npm run
 * bench -- cpu` (scripts/lib/bench-app.ts, scripts/lib/cpu-cases.ts): the app under `wrangler dev`,
 * the workerd CPU of the isolate's process (kernel run time, no profiler) and the JavaScript time the
 * V8 sampling profiler sees in the isolate, per request, with the hello-world Worker as the floor.
 *
 * Request types and their worst cases (each within every limit, or refused by one — a refusal costs
 * what it took to reach it): `ping` (a batch of 100, a 1 MiB body, JSON nested 100,000 deep),
 * `tools/list` (warm and first after a `meta_rev` change, at the demo app's 2 collections and at
 * 1,000; 15 collections of 100 columns with no definition cached; a cursor of 262,144 characters), `find` (the largest `where` the budgets allow; `where`s of
 * 27,000 conditions, valid and not, in a 1 MiB body; a 262,144-character cursor), `insert` (100
 * text columns filling 1 MiB), `aggregate` (1,000 groups × 20 metrics), `find_nearest` (2,000
 * dimensions, 100 rows), OAuth registration (8 KiB of metadata), credentials (a fresh well-formed
 * developer token or session each request: every cache misses; 60 KB of headers).
 *
 * Env: `BENCH_N` (requests per type, default 40; N/4 for the scaling check), `BENCH_SAMPLE_US`
 * (default 100), `BENCH_TOP` (functions listed per worst case, default 6), `BENCH_ROWS` (`foods`
 * rows, default 10,000), `BENCH_COLLECTIONS` (the large app, default 1000), `BENCH_PORT` (default
 * 8827, the hello-world Worker on the next port, inspectors on port + 1000), `BENCH_ONLY` (substrings
 * of the request types to run, comma-separated, say `find,aggregate`).
 */
import { loadavg } from "node:os";
import { join } from "node:path";
import {
  BENCH_HOST,
  benchFetch,
  captureFind,
  FIND_INPUT,
  inspectorPortOf,
  json,
  mcpBody,
  openBenchRig,
} from "../lib/bench-app.ts";
import { type Cpu, type CpuCase, measureCpu, profileCase, workerdOf } from "../lib/cpu-cases.ts";
import { type CpuTimes, Inspector } from "../lib/cpu-profile.ts";

const N = Number(process.env.BENCH_N ?? 40);
const SAMPLE_US = Number(process.env.BENCH_SAMPLE_US ?? 100);
const TOP = Number(process.env.BENCH_TOP ?? 6);
const ROWS = Number(process.env.BENCH_ROWS ?? 10_000);
const COLLECTIONS = Number(process.env.BENCH_COLLECTIONS ?? 1000);
const APP_PORT = Number(process.env.BENCH_PORT ?? 8827);
const BASE_PORT = APP_PORT + 1;
const ONLY = process.env.BENCH_ONLY;
const WARM_UP = 5;
const root = join(import.meta.dirname, "../..");
const load = [loadavg()];

const rig = await openBenchRig("cpuworst", [APP_PORT, BASE_PORT]);
const app = await rig.startApp(APP_PORT, ROWS);
const { find } = await captureFind(rig, app);
const baseline = await rig.startBaseline(BASE_PORT, find);
const admin = `${app.url}/v1/admin/projects/${app.demo.projectId}`;

const post = async <T>(url: string, body: unknown, what: string, method = "POST") =>
  json<T>(await benchFetch(url, { method, headers: app.dev, body: JSON.stringify(body) }), what);

// ─── fixtures: 100 text columns, a 2,000-dimension vector, an app of 1,000 collections ──────────
const WIDE_COLUMNS = 100;
const DIMENSIONS = 2000;
await post(
  `${admin}/collections`,
  {
    name: "wide",
    columns: Array.from({ length: WIDE_COLUMNS }, (_, i) => ({ name: `c${i}`, type: "text" })),
    access: { read: "public", write: "owner" },
  },
  "create wide",
);
/** A collection `name` of one `dimensions`-vector column `v`, with 200 rows. */
async function vectorCollection(name: string, dimensions: number) {
  await post(
    `${admin}/collections`,
    {
      name,
      columns: [{ name: "v", type: "vector", dimensions }],
      access: { read: "public", write: "owner" },
    },
    `create ${name}`,
  );
  await rig.backend.exec(`
    INSERT INTO "app_${app.demo.projectId.replace(/-/g, "")}"."${name}" (id, v, created_at, updated_at)
    SELECT gen_random_uuid(), (SELECT array_agg(random() + 0 * i + 0 * g) FROM generate_series(1, ${dimensions}) AS g)::vector, now(), now()
    FROM generate_series(1, 200) AS i;`);
}
await vectorCollection("vec3", 3);
await vectorCollection("vecs", DIMENSIONS);
const demoExposure = { collections: ["recipes", "foods", "wide", "vec3", "vecs"] };
await post(`${admin}/app-mcp/exposure`, demoExposure, "expose", "PUT");

const big = await post<{ id: string }>(`${app.url}/v1/admin/projects`, { name: "Large app" }, "project");
const bigAdmin = `${app.url}/v1/admin/projects/${big.id}`;
const bigNames = Array.from({ length: COLLECTIONS }, (_, i) => `recipes_${String(i).padStart(4, "0")}`);
const seeding = performance.now();
for (const name of bigNames) {
  await post(
    `${bigAdmin}/collections`,
    {
      name,
      columns: [
        { name: "title", type: "text", required: true, description: "Dish name" },
        { name: "calories", type: "integer" },
        { name: "tags", type: "text[]" },
        { name: "embedding", type: "vector", dimensions: 3 },
      ],
      access: { read: "owner", write: "owner" },
    },
    `create ${name}`,
  );
}
await post(`${bigAdmin}/app-mcp/exposure`, { collections: bigNames }, "expose large", "PUT");
console.log(`${COLLECTIONS} collections seeded in ${((performance.now() - seeding) / 1000).toFixed(0)} s`);

// An app whose first `tools/list` page is 100 tools of 100-column collections (15 × 7 tools).
const wideApp = await post<{ id: string }>(`${app.url}/v1/admin/projects`, { name: "Wide app" }, "project");
const wideAdmin = `${app.url}/v1/admin/projects/${wideApp.id}`;
const wideNames = Array.from({ length: 15 }, (_, i) => `wide_${i}`);
for (const name of wideNames) {
  await post(
    `${wideAdmin}/collections`,
    {
      name,
      columns: Array.from({ length: WIDE_COLUMNS }, (_, i) => ({ name: `c${i}`, type: "text" })),
      access: { read: "public", write: "owner" },
    },
    `create ${name}`,
  );
}
await post(`${wideAdmin}/app-mcp/exposure`, { collections: wideNames }, "expose wide", "PUT");

// ─── requests ───────────────────────────────────────────────────────────────────────────────────
/** One request; throws unless `ok` accepts the status and text (an unexpected answer flatters). */
const request =
  (url: string, init: () => RequestInit, ok: (status: number, text: string) => boolean) => async () => {
    const res = await benchFetch(url, init());
    const text = await res.text();
    if (!ok(res.status, text)) throw new Error(`${url} → ${res.status} ${text.slice(0, 300)}`);
  };
const mcpOk = (status: number, text: string) =>
  status === 200 && !text.includes('"isError":true') && !text.includes('"error":{');
const toolError = (says: string) => (status: number, text: string) =>
  status === 200 && text.includes('"isError":true') && text.includes(says);
const rpcError = (code: number) => (status: number, text: string) =>
  text.includes(`"code":${code}`) && status < 500;

let ips = 0;
/** A fresh client address per request (the per-address limits are not what is measured). */
const freshIp = () => {
  const n = ++ips;
  return `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
};
const mcpAt =
  (url: string, ok = mcpOk, headers: () => Record<string, string> = () => ({})) =>
  (body: () => string) =>
    request(
      url,
      () => ({
        method: "POST",
        headers: { ...app.mcpHeaders, ...headers(), "cf-connecting-ip": freshIp() },
        body: body(),
      }),
      ok,
    );
const demoMcp = (ok = mcpOk) => mcpAt(app.mcpUrl, ok);
/** The demo app's end user (vector search is the end-user scope's). */
const userMcp = mcpAt(app.mcpUrl, mcpOk, () => ({
  "x-api-key": app.demo.clientKey,
  authorization: `Bearer ${app.demo.sessionToken}`,
}));
const bigMcpUrl = `${app.url}/app/${big.id}/mcp`;
const call = (name: string, args: unknown) => () => mcpBody("tools/call", { name, arguments: args });

const hex = (bytes: number) =>
  Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16).padStart(2, "0")).join("");
const base64url = (bytes: number) =>
  Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString("base64url");
/** A credential of `token`'s kind that no row matches: `amba_<kind>_<random id>_<random secret>`. */
const unknownLike = (token: string) =>
  `${token.slice(0, token.indexOf("_", 5) + 1)}${hex(16)}_${base64url(32)}`;

// The largest `where` the budgets allow: 8 levels of `and`/`or`, 100 conditions, one `in` of 1,000
// values, four `like` patterns of 256 characters (1,024 in all).
function deepestWhere(): unknown {
  const conditions: unknown[] = [
    { title: { in: Array.from({ length: 1000 }, (_, i) => `food ${i}`) } },
    ...Array.from({ length: 4 }, (_, i) => ({ title: { like: `%${String(i).repeat(254)}%` } })),
  ];
  while (conditions.length < 100) conditions.push({ calories: { gte: conditions.length } });
  // Nest: each level holds its share of the conditions and the next level.
  let node: unknown = { or: conditions.slice(0, 20) };
  const rest = conditions.slice(20);
  for (let level = 0; level < 7; level++) {
    const mine = rest.splice(0, level === 6 ? rest.length : 10);
    node = { [level % 2 ? "or" : "and"]: [...mine, node] };
  }
  return node;
}
/** `or` lists of `count` conditions in all (3 lists: one array holds at most 10,000), ≈ 1 MiB. */
function widestWhere(condition: (i: number) => unknown, count: number): unknown {
  const per = Math.ceil(count / 3);
  return {
    or: [0, 1, 2].map((list) => ({ or: Array.from({ length: per }, (_, i) => condition(list * per + i)) })),
  };
}
const pad = (chars: number, seed: number) => `${seed} `.padEnd(chars, "x");
let inserted = 0;

const nested = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;
const vector = (n: number) => Array.from({ length: n }, (_, i) => ((i * 7919) % 1000) / 1000);
const metrics = [
  ...["count", "sum", "avg", "min", "max"].map((fn) => ({ fn, column: "calories" })),
  ...["count", "min", "max"].map((fn) => ({ fn, column: "title" })),
  ...["count", "min", "max"].map((fn) => ({ fn, column: "created_at" })),
  ...["count", "min", "max"].map((fn) => ({ fn, column: "updated_at" })),
  ...["count", "min", "max"].map((fn) => ({ fn, column: "id" })),
  { fn: "count" },
  { fn: "sum", column: "calories" },
  { fn: "avg", column: "calories" },
].slice(0, 20);
const bump = () =>
  post(`${bigAdmin}/app-mcp/exposure`, { collections: bigNames }, "bump", "PUT").then(() => {});
const bumpDemo = () => post(`${admin}/app-mcp/exposure`, demoExposure, "bump", "PUT").then(() => {});
const bumpWide = () =>
  post(`${wideAdmin}/app-mcp/exposure`, { collections: wideNames }, "bump", "PUT").then(() => {});
let wideEdits = 0;
/**
 * A change to every wide collection's metadata (its first column's description, in the metadata
 * rows), then a `meta_rev` bump: no definition is in the isolate's cache (`DEFINITION_CACHE_COLUMNS`),
 * as in a fresh isolate — the JS of its definitions is what a first request there pays.
 */
const editWide = async () => {
  wideEdits++;
  await rig.backend.exec(`UPDATE collections
    SET columns = jsonb_set(columns, '{0,description}', to_jsonb('edit ${wideEdits}'::text))
    WHERE project_id = '${wideApp.id}'::uuid`);
  await bumpWide();
};
const register = (uris: number) => () =>
  JSON.stringify({
    client_name: "cpu bench",
    redirect_uris: Array.from({ length: uris }, (_, i) => `https://client.example/callback/${i}`),
  });
const registerUrl = `${app.url}/oauth/register`;
const registerOk = (status: number, text: string) => status === 201 && text.includes("client_id");
const registration = (uris: number) =>
  request(
    registerUrl,
    () => ({
      method: "POST",
      headers: { "content-type": "application/json", "cf-connecting-ip": freshIp() },
      body: register(uris)(),
    }),
    registerOk,
  );
/** A JSON-RPC batch of 100 messages (batches exist up to protocol version 2025-03-26). */
const batch = (message: () => object) =>
  JSON.stringify(Array.from({ length: 100 }, (_, id) => ({ jsonrpc: "2.0", id, ...message() })));
const batchVersion = () => ({ "mcp-protocol-version": "2025-03-26" });
const batchOk = (status: number, text: string) =>
  status === 200 && text.startsWith("[") && !text.includes('"isError":true') && !text.includes('"error":{');
const manyHeaders = () =>
  Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`x-bench-${i}`, pad(600, i)]));

/** [type, request, run, prepare?]: the first request of each type is its ordinary one. */
const appCases: [string, string, () => Promise<void>, (() => Promise<void>)?][] = [
  ["ping", "`ping`", demoMcp()(() => mcpBody("ping"))],
  [
    "ping",
    "batch of 100 `ping`s",
    mcpAt(app.mcpUrl, batchOk, batchVersion)(() => batch(() => ({ method: "ping" }))),
  ],
  [
    "ping",
    "`ping` in a 1 MiB body (1,000 strings of 1,000)",
    demoMcp((s) => s === 200)(() =>
      mcpBody("ping", { pad: Array.from({ length: 1000 }, (_, i) => pad(1000, i)) }),
    ),
  ],
  [
    "ping",
    "`ping` with params nested 100,000 deep",
    demoMcp((s) => s < 500)(() => mcpBody("ping", { a: [] }).replace("[]", nested(100_000))),
  ],
  [
    "ping",
    "`ping` with params nested 500,000 deep (≈1 MiB)",
    demoMcp((s) => s < 500)(() => mcpBody("ping", { a: [] }).replace("[]", nested(500_000))),
  ],
  [
    "ping",
    "`ping` with 1 MiB of `{}` in params (349,000 objects)",
    demoMcp((s) => s < 500)(() =>
      mcpBody("ping", { a: [] }).replace("[]", `[${Array(349_000).fill("{}").join(",")}]`),
    ),
  ],
  ["ping", "`ping`, 100 headers of 600 bytes", mcpAt(app.mcpUrl, mcpOk, manyHeaders)(() => mcpBody("ping"))],
  [
    "ping",
    "`ping`, fresh unknown developer token (401)",
    request(
      app.mcpUrl,
      () => ({
        method: "POST",
        headers: {
          ...app.mcpHeaders,
          authorization: `Bearer ${unknownLike(app.demo.developerToken)}`,
          "cf-connecting-ip": freshIp(),
        },
        body: mcpBody("ping"),
      }),
      (s) => s === 401,
    ),
  ],
  [
    "ping",
    "`ping`, client key + fresh unknown session (401)",
    request(
      app.mcpUrl,
      () => ({
        method: "POST",
        headers: {
          ...app.mcpHeaders,
          "x-api-key": app.demo.clientKey,
          authorization: `Bearer ${unknownLike(app.demo.sessionToken)}`,
          "cf-connecting-ip": freshIp(),
        },
        body: mcpBody("ping"),
      }),
      (s) => s === 401,
    ),
  ],
  ["tools/list", "page 1, 5 collections, warm", demoMcp()(() => mcpBody("tools/list"))],
  ["tools/list", `page 1, ${COLLECTIONS} collections, warm`, mcpAt(bigMcpUrl)(() => mcpBody("tools/list"))],
  [
    "tools/list",
    "page 1, 5 collections, first after a change",
    demoMcp()(() => mcpBody("tools/list")),
    bumpDemo,
  ],
  [
    "tools/list",
    `page 1, ${COLLECTIONS} collections, first after a change`,
    mcpAt(bigMcpUrl)(() => mcpBody("tools/list")),
    bump,
  ],
  [
    "tools/list",
    `page 1, 15 collections of ${WIDE_COLUMNS} columns, first after a change`,
    mcpAt(`${app.url}/app/${wideApp.id}/mcp`)(() => mcpBody("tools/list")),
    bumpWide,
  ],
  [
    "tools/list",
    `page 1, 15 collections of ${WIDE_COLUMNS} columns, no definition cached (as in a fresh isolate)`,
    mcpAt(`${app.url}/app/${wideApp.id}/mcp`)(() => mcpBody("tools/list")),
    editWide,
  ],
  [
    "tools/list",
    "cursor of 262,144 characters (refused)",
    demoMcp(rpcError(-32602))(() => mcpBody("tools/list", { cursor: "A".repeat(262_144) })),
  ],
  ["find", "`foods_find` (FIND_INPUT)", demoMcp()(call("foods_find", FIND_INPUT))],
  [
    "find",
    "largest `where` allowed (depth 8, 100 conditions, `in` of 1,000, 1,024 `like` chars)",
    demoMcp()(call("foods_find", { where: deepestWhere(), limit: 200 })),
  ],
  [
    "find",
    "`where` of 27,000 valid conditions, ≈1 MiB (refused)",
    demoMcp(toolError("where"))(
      call("foods_find", { where: widestWhere((i) => ({ calories: { gte: i % 1000 } }), 27_000) }),
    ),
  ],
  [
    "find",
    "`where` of 27,000 invalid conditions, ≈1 MiB (refused)",
    demoMcp(toolError("where"))(
      call("foods_find", { where: widestWhere(() => ({ calories: { gte: "x" } }), 27_000) }),
    ),
  ],
  [
    "find",
    "batch of 100 `foods_find` (2025-03-26)",
    mcpAt(
      app.mcpUrl,
      batchOk,
      batchVersion,
    )(() => batch(() => ({ method: "tools/call", params: { name: "foods_find", arguments: FIND_INPUT } }))),
  ],
  [
    "find",
    "cursor of 262,144 characters (refused)",
    demoMcp(toolError("cursor"))(call("foods_find", { cursor: "A".repeat(262_144) })),
  ],
  [
    "insert",
    "`foods_insert` (2 columns)",
    demoMcp()(() => call("foods_insert", { title: `worst ${++inserted}`, calories: 1 })()),
  ],
  [
    "insert",
    `\`wide_insert\`, ${WIDE_COLUMNS} text columns ≈ 1 MiB`,
    demoMcp()(() =>
      call(
        "wide_insert",
        Object.fromEntries(
          Array.from({ length: WIDE_COLUMNS }, (_, i) => [`c${i}`, pad(10_300, ++inserted)]),
        ),
      )(),
    ),
  ],
  [
    "aggregate",
    "`foods_aggregate` count",
    demoMcp()(call("foods_aggregate", { metrics: [{ fn: "count" }] })),
  ],
  [
    "aggregate",
    "1,000 groups × 20 metrics",
    demoMcp()(call("foods_aggregate", { metrics, group_by: ["calories"] })),
  ],
  [
    "find_nearest",
    "`vec3_find_nearest`, 3 dimensions, 10 rows",
    userMcp(call("vec3_find_nearest", { vector: [0.5, 0.5, 0.1], limit: 10 })),
  ],
  [
    "find_nearest",
    `${DIMENSIONS} dimensions, 100 rows`,
    userMcp(call("vecs_find_nearest", { vector: vector(DIMENSIONS), limit: 100 })),
  ],
  ["oauth register", "1 redirect URI", registration(1)],
  ["oauth register", "8 KiB of metadata (190 redirect URIs)", registration(190)],
];

interface Row extends CpuCase {
  type: string;
}
const cases: Row[] = [];
const appInspector = await Inspector.connect(BENCH_HOST, inspectorPortOf(APP_PORT));
const baseInspector = await Inspector.connect(BENCH_HOST, inspectorPortOf(BASE_PORT));
const appProcesses = workerdOf(rig.wranglerPid(APP_PORT), APP_PORT);
const baseProcesses = workerdOf(rig.wranglerPid(BASE_PORT), BASE_PORT);
cases.push({
  type: "floor",
  worker: "baseline",
  root,
  name: "hello-world Worker `/hello`",
  inspector: baseInspector,
  ...baseProcesses,
  run: request(
    `${baseline}/hello`,
    () => ({}),
    (s) => s === 200,
  ),
});
for (const [type, name, run, prepare] of appCases) {
  if (ONLY && !ONLY.split(",").some((only) => type.includes(only) || name.includes(only))) continue;
  cases.push({ type, worker: "app", root, name, inspector: appInspector, ...appProcesses, run, prepare });
}

// Check every case once (a wrong answer stops the run before anything is measured), warm up.
for (const c of cases) {
  for (let i = 0; i < WARM_UP; i++) {
    await c.prepare?.();
    await c.run();
  }
}
const n4 = Math.max(1, Math.round(N / 4));
const small = new Map<Row, Cpu>();
const full = new Map<Row, Cpu>();
const profiles = new Map<Row, CpuTimes>();
for (const c of cases) small.set(c, await measureCpu(c, n4));
for (const c of cases) full.set(c, await measureCpu(c, N));
for (const c of cases) profiles.set(c, await profileCase(c, N, SAMPLE_US));
load.push(loadavg());
appInspector.close();
baseInspector.close();

const ms = (n: number) => n.toFixed(2);
const floor = full.get(cases[0] as Row) as Cpu;
console.log(
  `\nload average ${load.map((l) => l.map((n) => n.toFixed(1)).join(" / ")).join(" → ")} (1/5/15 min, start → end)`,
);
console.log(
  `N = ${N} sequential requests per type (N/4 = ${n4}); workerd CPU = run time of the isolate's workerd (/proc schedstat) per request, − the hello-world floor; JS = sampled in the isolate; × = against the type's ordinary request (first of the type), same run\n`,
);
console.log(
  "| type | request | workerd CPU ms/req − floor | at N/4 | × ordinary | JS ms/req | × ordinary | wall ms/req |",
);
console.log("|---|---|---|---|---|---|---|---|");
const ordinary = new Map<string, Row>();
for (const c of cases) {
  if (!ordinary.has(c.type)) ordinary.set(c.type, c);
  const base = ordinary.get(c.type) as Row;
  const [t, s, p] = [full.get(c), small.get(c), profiles.get(c)] as [Cpu, Cpu, CpuTimes];
  const [bt, bp] = [full.get(base), profiles.get(base)] as [Cpu, CpuTimes];
  const over = t.runtimeMs - floor.runtimeMs;
  const ratio = (a: number, b: number) => (b > 0 ? `${(a / b).toFixed(1)}×` : "—");
  console.log(
    `| ${c.type} | ${c.name} | ${ms(over)} | ${ms(s.runtimeMs - floor.runtimeMs)} | ${ratio(over, bt.runtimeMs - floor.runtimeMs)} | ${ms(p.jsMs / N)} | ${ratio(p.jsMs, bp.jsMs)} | ${ms(t.wallMs)} |`,
  );
}
console.log(`\nTop self time (ms/req) of the requests whose JS is above 1 ms:`);
for (const c of cases) {
  const t = profiles.get(c) as CpuTimes;
  if (t.jsMs / N < 1) continue;
  console.log(
    `\n${c.type} — ${c.name}: JS ${ms(t.jsMs / N)}, (program) ${ms(t.programMs / N)}, GC ${ms(t.gcMs / N)}`,
  );
  for (const [name, self] of [...t.self].sort((a, b) => b[1] - a[1]).slice(0, TOP))
    console.log(`  ${(self / N).toFixed(3).padStart(7)}  ${name}`);
  for (const [name, total] of [...t.total].sort((a, b) => b[1] - a[1]).slice(0, TOP))
    console.log(`  ${(total / N).toFixed(3).padStart(7)}  ${name} (inclusive)`);
}

await rig.close();
process.exit(0);
