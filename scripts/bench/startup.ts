/**
 * `npm run bench -- startup`: Worker start-up CPU (`wrangler check startup`: runs the `[build]`
 * command, scripts/build-worker.ts, and profiles the start-up of the uploaded modules in workerd) and
 * module sizes, for the app as wrangler.toml builds it (code-split, minified), the same build
 * unminified (`AMBA_EDGE_MINIFY=0`), and a Hono hello-world bundled by wrangler (baseline). Each
 * variant runs `STARTUP_RUNS` times (default 5), interleaved; the table shows the median and the
 * minimum active CPU (a profile samples every ~10 ms and counts time the thread lost to other
 * processes, so on a busy machine single runs are coarse and the minimum is the closest to the CPU
 * cost). Sizes: every uploaded module, and the start-up closure (the entry plus the chunks it imports
 * statically: what start-up compiles). Then, for the app, self time by source file summed over the
 * unminified runs' profiles (the chunks' `// path` markers map lines to files).
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { loadavg, tmpdir } from "node:os";
import { basename, delimiter, dirname, join } from "node:path";
import type { Metafile } from "esbuild";
import { buildWorker, EDGE_DIR, startupClosure } from "../build-worker.ts";

const RUNS = Number(process.env.STARTUP_RUNS ?? 5);
const root = join(import.meta.dirname, "../..");
const wrangler = join(
  dirname(createRequire(import.meta.url).resolve("wrangler/package.json")),
  "bin/wrangler.js",
);
const quiet = { WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false" };
const out = mkdtempSync(join(tmpdir(), "amba-startup-"));
const load = [loadavg()];

interface Profile {
  nodes: { id: number; callFrame: { url: string; lineNumber: number; functionName: string } }[];
  samples: number[];
  timeDeltas: number[];
}

const hello = join(out, "hello");
mkdirSync(hello);
writeFileSync(
  join(hello, "index.ts"),
  `import { Hono } from "${join(root, "node_modules/hono/dist/index.js")}";\nexport default new Hono().get("/", (c) => c.text("hi"));\n`,
);
writeFileSync(
  join(hello, "wrangler.toml"),
  `name = "hello"\nmain = "index.ts"\ncompatibility_date = "2026-11-01"\n`,
);

const VARIANTS: { name: string; cwd: string; env: Record<string, string> }[] = [
  { name: "Hono hello-world (baseline)", cwd: hello, env: {} },
  { name: "amba Worker, as wrangler.toml builds it", cwd: root, env: {} },
  { name: "amba Worker, unminified (`AMBA_EDGE_MINIFY=0`)", cwd: root, env: { AMBA_EDGE_MINIFY: "0" } },
];
const UNMINIFIED = 2;

function checkStartup(cwd: string, env: Record<string, string>, outfile: string) {
  const r = spawnSync(process.execPath, [wrangler, "check", "startup", "--outfile", outfile], {
    cwd,
    // The build command is `node …`: this Node first on the PATH.
    env: {
      ...process.env,
      ...quiet,
      ...env,
      PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH}`,
    },
    encoding: "utf8",
  });
  const text = (r.stdout ?? "") + (r.stderr ?? "");
  const active = /Active: ([\d.]+) ms/.exec(text);
  const bundle = /Bundle: ([\d.]+) KiB \/ gzip: ([\d.]+) KiB/.exec(text);
  if (r.status !== 0 || !active || !bundle) throw new Error(`wrangler check startup failed:\n${text}`);
  return { active: Number(active[1]), raw: Number(bundle[1]), gz: Number(bundle[2]) };
}

const runs = new Map<string, { active: number; raw: number; gz: number }[]>(
  VARIANTS.map((v) => [v.name, []]),
);
const appProfiles: string[] = [];
for (let run = 0; run < RUNS; run++) {
  for (const [i, variant] of VARIANTS.entries()) {
    const outfile = join(out, `${i}-${run}.cpuprofile`);
    runs.get(variant.name)?.push(checkStartup(variant.cwd, variant.env, outfile));
    if (i === UNMINIFIED) appProfiles.push(outfile);
  }
}
load.push(loadavg());

/** KiB of the modules start-up compiles: the entry of a build and the chunks it imports statically. */
const startupClosureKiB = (meta: Metafile): number =>
  startupClosure(meta).reduce((sum, path) => sum + (meta.outputs[path]?.bytes ?? 0), 0) / 1024;

// The two app builds again, outside wrangler, for their module graphs; the unminified one last and
// into the same folder, so its chunks are the ones the unminified runs profiled (the per-file table
// reads their lines). The minified build is restored at the end.
const minifiedClosure = startupClosureKiB(await buildWorker(EDGE_DIR, true));
const closures = [undefined, minifiedClosure, startupClosureKiB(await buildWorker(EDGE_DIR, false))];

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const base = median((runs.get(VARIANTS[0]?.name as string) ?? []).map((r) => r.active));
console.log(
  `load average ${load.map((l) => l.map((n) => n.toFixed(1)).join(" / ")).join(" → ")}; ${RUNS} runs each\n`,
);
console.log(
  "| Worker | active CPU ms, median | min | runs | median × hello-world | modules KiB | gzip KiB | start-up closure KiB |",
);
console.log("|---|---|---|---|---|---|---|---|");
for (const [i, { name }] of VARIANTS.entries()) {
  const rs = runs.get(name) ?? [];
  const active = median(rs.map((r) => r.active));
  console.log(
    `| ${name} | ${active.toFixed(1)} | ${Math.min(...rs.map((r) => r.active)).toFixed(1)} | ${rs.map((r) => r.active.toFixed(0)).join(", ")} | ${(active / base).toFixed(2)}× | ${rs[0]?.raw.toFixed(1)} | ${rs[0]?.gz.toFixed(1)} | ${closures[i]?.toFixed(1) ?? "(one module)"} |`,
  );
}

// Self time by source file, from the unminified runs (their chunks keep esbuild's `// path` markers;
// minified code runs the same modules).
const markersOf = new Map<string, [number, string][]>();
function markers(chunk: string): [number, string][] {
  let found = markersOf.get(chunk);
  if (!found) {
    const path = [join(EDGE_DIR, chunk), join(EDGE_DIR, "chunks", chunk)].find(existsSync);
    const lines = path ? readFileSync(path, "utf8").split("\n") : [];
    found = [];
    for (const [i, line] of lines.entries()) {
      const m = /^\/\/ ((?:node_modules|src|schema)\/\S+)/.exec(line);
      if (m) found.push([i, m[1] as string]);
    }
    markersOf.set(chunk, found);
  }
  return found;
}
const fileOf = (chunk: string, line: number) => {
  let file = `(${chunk} prelude)`;
  for (const [at, name] of markers(chunk)) {
    if (at > line) break;
    file = name;
  }
  return file;
};
const selfTime = new Map<string, number>();
let total = 0;
for (const file of appProfiles) {
  const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;
  const nodes = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  for (const [i, id] of profile.samples.entries()) {
    const frame = nodes.get(id);
    const us = profile.timeDeltas[i] ?? 0;
    const where =
      frame?.url.endsWith(".mjs") && frame.lineNumber >= 0
        ? fileOf(basename(frame.url), frame.lineNumber)
        : frame?.url || frame?.functionName || "(unknown)";
    selfTime.set(where, (selfTime.get(where) ?? 0) + us);
    total += us;
  }
}
console.log(`\nUnminified app start-up, self time by file (${RUNS} profiles, share of sampled time):\n`);
console.log("| file | ms per run | share |\n|---|---|---|");
for (const [file, us] of [...selfTime].sort((a, b) => b[1] - a[1]).slice(0, 12)) {
  console.log(`| ${file} | ${(us / 1000 / RUNS).toFixed(1)} | ${((100 * us) / total).toFixed(0)} % |`);
}
rmSync(out, { recursive: true, force: true });
await buildWorker(EDGE_DIR, true);
