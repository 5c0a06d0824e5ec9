/**
 * The rig the Worker benchmarks share (`npm run bench -- hotpath`, `… cpu`): the configured database
 * (`pg` with `DATABASE_URL`, else the embedded PGlite) behind the local Neon endpoint, the app under
 * `wrangler dev` wired as `npm run dev` wires it (from a copy of wrangler.toml whose `RATE_LIMITER`
 * limit is out of reach: the limiter is still called on every request, it just never says no;
 * `BENCH_LIMITER=off` drops that binding instead), the
 * demo app seeded through the API plus an exposed `foods` collection of `rows` rows, and the minimal
 * Worker (scripts/bench/workers/baseline-worker.ts) running the exact SQL the app sent for a find.
 * Every `wrangler dev` gets the inspector port `port + 1000`.
 */
import type { ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { projectSchemaName } from "../../src/data/sql.ts";
import type { RawQuery, SqlBackend } from "../../src/dev/backends.ts";
import { openConfigured, openFromSnapshot } from "../../src/dev/embedded.ts";
import { type NeonEndpoint, startNeonEndpoint } from "../../src/dev/neon-endpoint.ts";
import { type DemoCredentials, seedDemo } from "../seed.ts";
import { spawnWranglerDev } from "./wrangler-dev.ts";

export const BENCH_HOST = "127.0.0.1";

/**
 * `toml` (a copy of wrangler.toml) serving `entry`, the TypeScript sources of a checkout, bundled by
 * wrangler (minified, names kept) instead of the code-split build in `dist/edge`: the copy lives in
 * a temporary folder and may serve another checkout, older than scripts/build-worker.ts. A warm
 * isolate runs the same code either way; start-up is `npm run bench -- startup`'s business.
 */
export function sourceBuilt(toml: string, entry: string): string {
  const out = toml
    .replace(/^(base_dir|no_bundle|find_additional_modules|rules|minify|keep_names) = .*\n/gm, "")
    .replace(/^\[build\]\n(?:\w+ = .*\n)*/m, "")
    .replace(/^main = .*$/m, `main = ${JSON.stringify(entry)}\nminify = true\nkeep_names = true`);
  if (/^(no_bundle|base_dir) =|^\[build\]/m.test(out))
    throw new Error("could not drop the edge build from the copy");
  return out;
}
/** The find every Worker benchmark measures (21 rows fetched: 20 plus one for the next cursor). */
export const FIND_INPUT = { where: { calories: { lt: 200 } }, limit: 20 };
/** `wrangler dev`'s inspector port for a Worker served on `port`. */
export const inspectorPortOf = (port: number) => port + 1000;

const root = join(import.meta.dirname, "../..");

/** Whether `port` is free on the bench host. */
export function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer()
      .once("error", () => resolve(false))
      .once("listening", () => probe.close(() => resolve(true)))
      .listen(port, BENCH_HOST);
  });
}

/**
 * `fetch`, retried once when a kept-alive connection turns out closed (workerd closes idle ones;
 * undici may pick one in that instant: "other side closed"). Any other failure is thrown.
 */
export async function benchFetch(url: string, init?: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (err) {
    const code = (err as { cause?: { code?: string } }).cause?.code;
    if (code !== "UND_ERR_SOCKET") throw err;
    return fetch(url, init);
  }
}

/** The body of a 2xx answer as JSON (throws with the status and text otherwise). */
export async function json<T>(res: Response, what: string): Promise<T> {
  const text = await res.text();
  if (!res.ok) throw new Error(`${what} → ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as T;
}

/** The backend, recording the statements it is sent while `capture` runs. */
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

/** The seeded app under `wrangler dev`, and what its requests need. */
export interface BenchApp {
  url: string;
  demo: DemoCredentials;
  /** Developer credentials + JSON content type. */
  dev: Record<string, string>;
  mcpUrl: string;
  mcpHeaders: Record<string, string>;
  /** REST `POST …/collections/foods/find`. */
  restFind: string;
}

/**
 * A seeded shuffle for the case order of each round (deterministic across runs, so no case always
 * follows the same other case, and two runs shuffle alike).
 */
export function seededShuffler(seed: number): <T>(items: T[]) => void {
  let state = seed;
  const random = () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state / 2 ** 31;
  };
  return (items) => {
    for (let i = items.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [items[i], items[j]] = [items[j], items[i]] as [(typeof items)[number], (typeof items)[number]];
    }
  };
}

/** One JSON-RPC request body. */
export const mcpBody = (method: string, params?: unknown) =>
  JSON.stringify({ jsonrpc: "2.0", id: 1, method, ...(params ? { params } : {}) });

/**
 * A running rig: the database, the Neon endpoint and the `wrangler dev` children it started (all
 * stopped on exit, the temporary folder removed).
 */
export async function openBenchRig(name: string, ports: number[]) {
  for (const port of ports) {
    if (!(await portFree(port))) throw new Error(`port ${port} is in use; set BENCH_PORT`);
  }
  const children: ChildProcess[] = [];
  /** The `wrangler dev` process serving each port. */
  const pids = new Map<number, number>();
  const tmp = mkdtempSync(join(tmpdir(), `amba-${name}-`));
  const stopAll = () => {
    for (const child of children) {
      if (child.pid && child.exitCode === null) {
        try {
          process.kill(-child.pid, "SIGTERM");
        } catch {}
      }
    }
  };
  process.on("exit", () => {
    stopAll();
    rmSync(tmp, { recursive: true, force: true });
  });
  process.on("SIGINT", () => process.exit(130));
  process.on("SIGTERM", () => process.exit(143));

  const backend = await openConfigured(() => openFromSnapshot());
  const recorder = recorded(backend);
  const endpoint: NeonEndpoint = await startNeonEndpoint(recorder.wrapped);
  const devVars = { FUNCTION_URL_POLICY: "dev" };
  // The app callers', the apps' and the developers' (control plane: the benches seed through the
  // admin API) limits.
  let raised = readFileSync(join(root, "wrangler.toml"), "utf8");
  for (const name of ["RATE_LIMITER", "PROJECT_RATE_LIMITER", "ADMIN_RATE_LIMITER"]) {
    const pattern = new RegExp(`(name = "${name}"[^[]*?simple = \\{ limit = )\\d+`);
    if (!pattern.test(raised)) throw new Error(`could not raise ${name} in the copy`);
    raised = raised.replace(pattern, "$11000000000");
  }
  // `BENCH_LIMITER=off`: no `RATE_LIMITER` and `PROJECT_RATE_LIMITER` bindings at all (the app then
  // limits nothing), to measure what the local bindings — a Durable Object behind a fetch in
  // miniflare — cost per call.
  const appToml =
    process.env.BENCH_LIMITER === "off"
      ? raised.replace(/\[\[ratelimits\]\]\nname = "(PROJECT_)?RATE_LIMITER"\n[^[]*/g, "")
      : raised;
  if (process.env.BENCH_LIMITER === "off" && /name = "(PROJECT_)?RATE_LIMITER"\n/.test(appToml))
    throw new Error("could not drop RATE_LIMITER and PROJECT_RATE_LIMITER from the copy");

  /** `wrangler dev` of `config` on `port`, waited for until `readyPath` answers. */
  async function wranglerDev(config: string, port: number, readyPath: string, vars: Record<string, string>) {
    const child = spawnWranglerDev({
      host: BENCH_HOST,
      port,
      endpoint,
      stateDir: join(tmp, `state-${port}`),
      vars: { ...devVars, ...vars },
      config,
      inspectorPort: inspectorPortOf(port),
    });
    children.push(child);
    pids.set(port, child.pid as number);
    const deadline = Date.now() + 180_000;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`wrangler dev (${config}) exited`);
      try {
        if ((await benchFetch(`http://${BENCH_HOST}:${port}${readyPath}`)).ok) return;
      } catch {}
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`wrangler dev (${config}) did not answer ${readyPath} within 180 s`);
  }

  /** The app of `checkout` under `wrangler dev` on `port`; its URL. */
  async function launchApp(checkout: string, port: number): Promise<string> {
    const url = `http://${BENCH_HOST}:${port}`;
    const dir = join(tmp, `app-${port}`);
    mkdirSync(dir);
    writeFileSync(join(dir, "wrangler.toml"), sourceBuilt(appToml, join(checkout, "src/worker/index.ts")));
    const started = performance.now();
    await wranglerDev(join(dir, "wrangler.toml"), port, "/healthz", { PUBLIC_BASE_URL: url });
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    console.log(`app (${checkout}) under wrangler dev on ${port} ready in ${seconds} s`);
    return url;
  }

  return {
    backend,
    recorder,
    /** The rig's temporary folder (removed on close and on exit). */
    tmp,
    /** The app of this checkout under `wrangler dev` on `port`, nothing seeded; its URL. */
    startBareApp: (port: number): Promise<string> => launchApp(root, port),
    /** The pid of the `wrangler dev` serving `port` (the root of its process tree). */
    wranglerPid(port: number): number {
      const pid = pids.get(port);
      if (pid === undefined) throw new Error(`nothing started on port ${port}`);
      return pid;
    },
    /** The app on `port`, with the demo app and `foods` (`rows` rows, exposed) seeded. */
    async startApp(port: number, rows: number): Promise<BenchApp> {
      const url = await launchApp(root, port);
      // The demo developer and project (the path `npm run dev` takes), then `foods`.
      const demo = await seedDemo(url, join(tmp, "demo.json"));
      const dev = { authorization: `Bearer ${demo.developerToken}`, "content-type": "application/json" };
      const admin = `${url}/v1/admin/projects/${demo.projectId}`;
      await json(
        await benchFetch(`${admin}/collections`, {
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
        await benchFetch(`${admin}/app-mcp/exposure`, {
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
        FROM generate_series(1, ${rows}) AS i;
        ANALYZE ${foods};`);
      console.log(`seeded ${rows} rows into foods`);
      return {
        url,
        demo,
        dev,
        mcpUrl: `${url}/app/${demo.projectId}/mcp`,
        mcpHeaders: {
          ...dev,
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2025-06-18",
        },
        restFind: `${url}/v1/projects/${demo.projectId}/collections/foods/find`,
      };
    },
    /**
     * The app of another checkout (`checkout`: a project folder with its own node_modules) on
     * `port`, on the same database as `app` (its credentials and collections work unchanged).
     */
    async startCheckout(checkout: string, port: number, app: BenchApp): Promise<BenchApp> {
      const url = await launchApp(checkout, port);
      const rebase = (address: string) => url + address.slice(app.url.length);
      return { ...app, url, mcpUrl: rebase(app.mcpUrl), restFind: rebase(app.restFind) };
    },
    /** The minimal Worker on `port`, its `/find` running `find` (the app's statement). */
    async startBaseline(port: number, find: RawQuery): Promise<string> {
      const baseToml = [
        'name = "amba-bench-baseline"',
        `main = ${JSON.stringify(join(root, "scripts/bench/workers/baseline-worker.ts"))}`,
        `compatibility_date = ${JSON.stringify(/^compatibility_date = "(.*)"$/m.exec(appToml)?.[1])}`,
        `compatibility_flags = ${/^compatibility_flags = (.*)$/m.exec(appToml)?.[1] ?? "[]"}`,
        "minify = true",
        "[vars]",
        `BENCH_SQL = ${JSON.stringify(find.query)}`,
        `BENCH_PARAMS = ${JSON.stringify(JSON.stringify(find.params))}`,
        "",
      ].join("\n");
      mkdirSync(join(tmp, "baseline"));
      writeFileSync(join(tmp, "baseline/wrangler.toml"), baseToml);
      await wranglerDev(join(tmp, "baseline/wrangler.toml"), port, "/hello", {});
      return `http://${BENCH_HOST}:${port}`;
    },
    async close() {
      stopAll();
      await endpoint.close();
      await backend.close();
      rmSync(tmp, { recursive: true, force: true });
    },
  };
}

/**
 * The app's find (MCP `tools/call foods_find`) once, with the statement it sent to the database as
 * captured at the endpoint, and the rows it answered.
 */
export async function captureFind(
  rig: Awaited<ReturnType<typeof openBenchRig>>,
  app: BenchApp,
): Promise<{ sent: RawQuery[]; find: RawQuery; rows: unknown[] }> {
  let rows: unknown[] = [];
  const sent = await rig.recorder.capture(async () => {
    const reply = await json<{ result: { structuredContent?: { rows: unknown[] }; isError?: boolean } }>(
      await benchFetch(app.mcpUrl, {
        method: "POST",
        headers: app.mcpHeaders,
        body: mcpBody("tools/call", { name: "foods_find", arguments: FIND_INPUT }),
      }),
      "tools/call foods_find",
    );
    if (reply.result.isError || !reply.result.structuredContent) throw new Error(JSON.stringify(reply));
    rows = reply.result.structuredContent.rows;
  });
  const find = sent.find((q) => q.query.includes('"foods"'));
  if (!find) throw new Error("the app's find statement was not seen at the endpoint");
  return { sent, find, rows };
}
