/**
 * Builds the `amber` CLI with esbuild: `dist/cli/amber.mjs` (the bin, with a node shebang), the
 * sandboxed `tool-host.mjs` it forks, and `amber-mcp.mjs` (what `amber:mcp` resolves to in tool
 * files). Targets Node 20. Run by `npm run build:cli` and `prepare`; tests call `buildCli()`.
 * Also the `amba` developer CLI, `dist/cli/amba.mjs`, with the platform MCP catalogue
 * (`platformToolDefinitions()`) inlined as `__AMBA_CATALOGUE__`.
 */
import { chmodSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";
import { platformToolDefinitions } from "../src/platform-mcp/tools.ts";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** Builds the CLI into `outdir` (default `dist/cli`) and returns the path of the bin. */
export async function buildCli(outdir = join(ROOT, "dist/cli")): Promise<string> {
  const { version } = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string };
  const common: esbuild.BuildOptions = {
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    logLevel: "warning",
    legalComments: "none",
    external: ["esbuild", "typescript"],
    define: { __AMBER_VERSION__: JSON.stringify(version) },
  };
  await Promise.all([
    esbuild.build({
      ...common,
      entryPoints: [join(ROOT, "src/cli/main.ts")],
      outfile: join(outdir, "amber.mjs"),
      banner: { js: "#!/usr/bin/env node" },
    }),
    esbuild.build({
      ...common,
      entryPoints: [join(ROOT, "src/cli/sandbox/tool-host.ts")],
      outfile: join(outdir, "tool-host.mjs"),
    }),
    esbuild.build({
      ...common,
      entryPoints: [join(ROOT, "src/cli/amber-mcp.ts")],
      outfile: join(outdir, "amber-mcp.mjs"),
    }),
    esbuild.build({
      ...common,
      entryPoints: [join(ROOT, "src/cli/amba/main.ts")],
      outfile: join(outdir, "amba.mjs"),
      banner: { js: "#!/usr/bin/env node" },
      define: { __AMBA_CATALOGUE__: JSON.stringify(platformToolDefinitions()) },
    }),
  ]);
  const bin = join(outdir, "amber.mjs");
  chmodSync(bin, 0o755);
  chmodSync(join(outdir, "amba.mjs"), 0o755);
  return bin;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const bin = await buildCli(process.argv[2] ? resolve(process.argv[2]) : undefined);
  process.stdout.write(`built ${bin}\n`);
}
