/**
 * The Worker under `wrangler dev`, wired to a local Neon-protocol endpoint exactly as `npm run dev`
 * does: the endpoint's secret travels in an env file (mode 0600), never on a command line. Shared by
 * `npm run dev`, the conformance run, benchmarks and black-box tests.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { delimiter, dirname, join } from "node:path";
import type { NeonEndpoint } from "../../src/dev/neon-endpoint.ts";

export interface WranglerDevOptions {
  host: string;
  port: number;
  endpoint: Pick<NeonEndpoint, "url" | "connectionString">;
  /** Folder for wrangler's local state (KV); the env file is written next to it. */
  stateDir: string;
  /** Extra `--var NAME:value` pairs (PUBLIC_BASE_URL, FUNCTION_URL_POLICY, …). */
  vars?: Record<string, string>;
  logLevel?: "error" | "warn" | "info";
  /** Where wrangler's stdout goes (its stderr is always inherited). */
  stdout?: "inherit" | "ignore";
  /** Another wrangler config than the project's `wrangler.toml` (benchmarks). */
  config?: string;
  /** DevTools inspector port (wrangler's default is shared: set it when running two at once). */
  inspectorPort?: number;
}

/** Spawn `wrangler dev` in its own process group (stop it with `process.kill(-child.pid)`). */
export function spawnWranglerDev(options: WranglerDevOptions): ChildProcess {
  mkdirSync(options.stateDir, { recursive: true });
  const secrets = join(options.stateDir, "worker.env");
  writeFileSync(secrets, `DATABASE_URL=${options.endpoint.connectionString}\n`, { mode: 0o600 });
  const vars = { LOCAL_DB_URL: options.endpoint.url, ...options.vars };
  const wranglerPkg = createRequire(import.meta.url).resolve("wrangler/package.json");
  return spawn(
    process.execPath,
    [
      join(dirname(wranglerPkg), "bin/wrangler.js"),
      "dev",
      ...(options.config ? ["--config", options.config] : []),
      ...(options.inspectorPort ? ["--inspector-port", String(options.inspectorPort)] : []),
      "--ip",
      options.host,
      "--port",
      String(options.port),
      "--persist-to",
      join(options.stateDir, "wrangler"),
      "--show-interactive-dev-session=false",
      "--log-level",
      options.logLevel ?? "warn",
      "--env-file",
      secrets,
      ...Object.entries(vars).flatMap(([name, value]) => ["--var", `${name}:${value}`]),
    ],
    {
      detached: true,
      stdio: ["ignore", options.stdout ?? "inherit", "inherit"],
      env: {
        // Without DATABASE_URL: wrangler.toml declares it a required secret, and wrangler would then
        // take the shell's value (a real Postgres for `npm run dev`) over the env file's endpoint URL.
        ...withoutDatabaseUrl(process.env),
        WRANGLER_SEND_METRICS: "false",
        CLOUDFLARE_CF_FETCH_ENABLED: "false",
        // wrangler.toml's build command is `node …` (TypeScript): this Node first on the PATH.
        PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH}`,
      },
    },
  );
}

function withoutDatabaseUrl(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { DATABASE_URL: _, ...rest } = env;
  return rest;
}
