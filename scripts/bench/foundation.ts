/**
 * Foundation figures: `npm run dev` start-up (first start on an empty data dir, second start reusing
 * it) against bare `wrangler dev` of the same Worker (baseline, measured in this run), and the
 * Worker bundle size (raw / gzip) against a Hono hello-world built the same way. Set
 * `BENCH_TESTS=1` to also time `npm test`.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { gzipSync } from "node:zlib";

const root = join(import.meta.dirname, "../..");
const wrangler = join(
  dirname(createRequire(import.meta.url).resolve("wrangler/package.json")),
  "bin/wrangler.js",
);
const quiet = { WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false" };

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

async function untilAnswered(url: string, child: ChildProcess): Promise<void> {
  for (;;) {
    if (child.exitCode !== null) throw new Error(`process exited before ${url} answered`);
    try {
      await fetch(url);
      return;
    } catch {}
    await new Promise((r) => setTimeout(r, 50));
  }
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    child.once("exit", () => resolve());
    try {
      process.kill(-child.pid!, "SIGINT");
    } catch {
      child.kill("SIGINT");
    }
  });
}

/** Seconds from spawn until `url` answers (then the process group is stopped). */
async function timeStart(args: string[], env: Record<string, string>, url: string, waitFor?: RegExp) {
  const started = performance.now();
  const child = spawn(process.execPath, args, {
    cwd: root,
    env: { ...process.env, ...quiet, ...env },
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (d) => {
    out += d;
  });
  await untilAnswered(url, child);
  while (waitFor && !waitFor.test(out)) await new Promise((r) => setTimeout(r, 50));
  const seconds = (performance.now() - started) / 1000;
  await stop(child);
  return seconds;
}

const fmt = (n: number) => n.toFixed(2);

async function startup() {
  const port = await freePort();
  const health = `http://127.0.0.1:${port}/healthz`;
  const baseline = await timeStart(
    [wrangler, "dev", "--ip", "127.0.0.1", "--port", String(port)],
    {},
    health,
  );
  const dataDir = mkdtempSync(join(tmpdir(), "amba-bench-"));
  const env = { PORT: String(port), AMBA_DATA_DIR: dataDir, DATABASE_URL: "" };
  const ready = /Ctrl-C to stop/;
  const first = await timeStart(["scripts/dev.ts"], env, health, ready);
  const second = await timeStart(["scripts/dev.ts"], env, health, ready);
  rmSync(dataDir, { recursive: true, force: true });
  console.log("dev start-up (to healthy + seeded)       seconds   × bare wrangler dev");
  console.log(`  bare wrangler dev (baseline)           ${fmt(baseline)}     1.00`);
  console.log(`  npm run dev, first start (empty dir)   ${fmt(first)}     ${fmt(first / baseline)}`);
  console.log(`  npm run dev, second start (reuse)      ${fmt(second)}     ${fmt(second / baseline)}`);
}

function bundleSize(dir: string) {
  const file = readdirSync(dir).find((f) => f.endsWith(".js"))!;
  const bytes = readFileSync(join(dir, file));
  return { raw: bytes.length, gz: gzipSync(bytes).length };
}

function bundles() {
  const out = mkdtempSync(join(tmpdir(), "amba-bundle-"));
  const run = (args: string[], cwd = root) => {
    const r = spawnSync(process.execPath, [wrangler, ...args], {
      cwd,
      env: { ...process.env, ...quiet },
      encoding: "utf8",
    });
    if (r.status !== 0) throw new Error(r.stderr || r.stdout);
  };
  run(["deploy", "--dry-run", "--outdir", join(out, "app")]);
  run(["deploy", "--dry-run", "--minify", "--outdir", join(out, "app-min")]);
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
  run(["deploy", "--dry-run", "--outdir", join(hello, "dist")], hello);
  const app = bundleSize(join(out, "app"));
  const min = bundleSize(join(out, "app-min"));
  const base = bundleSize(join(hello, "dist"));
  rmSync(out, { recursive: true, force: true });
  const kib = (n: number) => (n / 1024).toFixed(1);
  console.log("\nWorker bundle                    raw KiB   gz KiB   gz × hono hello-world");
  console.log(`  hono hello-world (baseline)    ${kib(base.raw)}      ${kib(base.gz)}     1.00`);
  console.log(
    `  amba worker                    ${kib(app.raw)}    ${kib(app.gz)}    ${fmt(app.gz / base.gz)}`,
  );
  console.log(
    `  amba worker --minify           ${kib(min.raw)}    ${kib(min.gz)}    ${fmt(min.gz / base.gz)}`,
  );
}

function tests() {
  const started = performance.now();
  const r = spawnSync("npm", ["test"], { cwd: root, stdio: "ignore" });
  console.log(`\nnpm test wall time: ${fmt((performance.now() - started) / 1000)} s (exit ${r.status})`);
}

await startup();
bundles();
if (process.env.BENCH_TESTS === "1") tests();
