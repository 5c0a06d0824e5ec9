/**
 * Builds the Worker into `dist/edge` with esbuild code splitting: `index.mjs` (the entry: the hot
 * app) plus one chunk per dynamically imported part (the cold app, the OAuth provider, the Neon
 * driver). wrangler bundles into a single module, where an `import()` becomes a lazy initialiser in
 * the same file: evaluation is deferred but the whole file is still compiled at start-up. Separate
 * modules that are only `import()`ed are not (README "Decisions", BENCHMARKS.md "Start-up and
 * bundle"). wrangler.toml runs this as its `[build] command` and uploads the output as is
 * (`no_bundle`, `find_additional_modules`).
 *
 * The options mirror wrangler's own Worker build (wrangler-dist/cli.js, `bundleWorker` and
 * `COMMON_ESBUILD_OPTIONS`): its resolve conditions, es2024 target, `cloudflare:*` left to the
 * runtime, `process.env.NODE_ENV` defined, minified with names kept (error names and stack frames
 * rely on them), source maps for `upload_source_maps`. `AMBA_EDGE_MINIFY=0` builds it unminified
 * (the start-up bench's per-file profile reads esbuild's `// path` markers).
 */
import { mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** Where the built Worker goes (wrangler.toml's `main` and `base_dir` point here). */
export const EDGE_DIR = join(ROOT, "dist/edge");

/** Builds the Worker into `outdir`; returns esbuild's metafile (inputs and outputs by module). */
export async function buildWorker(outdir = EDGE_DIR, minify = true): Promise<esbuild.Metafile> {
  const nodeEnv = JSON.stringify(process.env.NODE_ENV || "production");
  const result = await esbuild.build({
    entryPoints: { index: join(ROOT, "src/worker/index.ts") },
    outdir,
    bundle: true,
    splitting: true,
    format: "esm",
    // wrangler leaves esbuild's platform at its default, "browser" (main fields browser, module, main).
    platform: "browser",
    target: "es2024",
    supported: { "import-source": true, using: true },
    conditions: ["workerd", "worker", "browser"],
    external: ["cloudflare:*"],
    define: {
      "process.env.NODE_ENV": nodeEnv,
      "global.process.env.NODE_ENV": nodeEnv,
      "globalThis.process.env.NODE_ENV": nodeEnv,
    },
    chunkNames: "chunks/[name]-[hash]",
    // `.mjs`, matched by wrangler.toml's module rule: a `**/*.js` rule would also reach the vitest
    // pool (it reads wrangler.toml) and force its own `.js` helpers to ES modules, which breaks it.
    outExtension: { ".js": ".mjs" },
    minify,
    keepNames: true,
    sourcemap: true,
    legalComments: "none",
    metafile: true,
    write: false,
    logLevel: "warning",
  });
  replaceOutput(outdir, result.outputFiles);
  return result.metafile;
}

/**
 * The output files start-up compiles (paths as in the metafile): the entry and the chunks it imports
 * statically, transitively. A module reached only through `import()` is not among them: it is
 * compiled and evaluated when first imported (README "Decisions").
 */
export function startupClosure(meta: esbuild.Metafile): string[] {
  // Every `import()` target is an entry point of its own in the metafile: start from the Worker's.
  const entry = Object.keys(meta.outputs).find((path) =>
    meta.outputs[path]?.entryPoint?.endsWith("src/worker/index.ts"),
  );
  const seen = new Set<string>();
  const todo = entry ? [entry] : [];
  for (let path = todo.pop(); path !== undefined; path = todo.pop()) {
    if (seen.has(path)) continue;
    seen.add(path);
    for (const i of meta.outputs[path]?.imports ?? [])
      if (i.kind === "import-statement" && !i.external) todo.push(i.path);
  }
  return [...seen];
}

/**
 * Writes `files` into `outdir` and removes what else is there. Chunk names carry content hashes, so
 * stale chunks of an earlier build must go (wrangler uploads every module it finds). Each file is
 * renamed into place and the entry written last, so a `wrangler dev` started alongside (the test
 * suites start several) never reads a half-written folder: two builds of the same sources write the
 * same names with the same bytes.
 */
function replaceOutput(outdir: string, files: esbuild.OutputFile[]): void {
  const entry = join(outdir, "index.mjs");
  const ordered = [...files].sort((a, b) => Number(a.path === entry) - Number(b.path === entry));
  for (const file of ordered) {
    mkdirSync(dirname(file.path), { recursive: true });
    const temporary = `${file.path}.${process.pid}.tmp`;
    writeFileSync(temporary, file.contents);
    renameSync(temporary, file.path);
  }
  const kept = new Set(files.map((file) => file.path));
  for (const name of readdirSync(outdir, { recursive: true, encoding: "utf8" })) {
    const path = join(outdir, name);
    if (kept.has(path) || path.endsWith(".tmp")) continue; // .tmp: a concurrent build's, about to be renamed
    if (statSync(path, { throwIfNoEntry: false })?.isFile()) rmSync(path, { force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await buildWorker(EDGE_DIR, process.env.AMBA_EDGE_MINIFY !== "0");
}
