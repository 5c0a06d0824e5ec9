/**
 * `npm run dev`: the whole platform on this machine, offline. Embedded Postgres (PGlite + pgvector,
 * persisted in `.amba/pgdata`) or `DATABASE_URL`, migrations, the local Neon endpoint, `wrangler
 * dev`, a seeded demo app — then the URLs, tokens and a paste-ready MCP client config.
 * The endpoint's secret is fresh per start and reaches the Worker only as the password of its
 * `DATABASE_URL`, through an env file readable by this user alone (never on a command line).
 * Ctrl-C stops every child (wrangler runs in its own process group and is signalled as a group).
 */
import type { ChildProcess } from "node:child_process";
import { mkdirSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import type { SqlBackend } from "../src/dev/backends.ts";
import { AMBA_DIR, hasPgvector, openConfigured, openPersisted } from "../src/dev/embedded.ts";
import { type NeonEndpoint, startNeonEndpoint } from "../src/dev/neon-endpoint.ts";
import { spawnWranglerDev } from "./lib/wrangler-dev.ts";
import { seedDemo } from "./seed.ts";

const PORT = Number(process.env.PORT ?? 8787);
const HOST = "127.0.0.1";
const BASE = `http://${HOST}:${PORT}`;
const started = performance.now();

let backend: SqlBackend | undefined;
let endpoint: NeonEndpoint | undefined;
let wrangler: ChildProcess | undefined;
let stopping = false;

function fail(message: string): never {
  process.stderr.write(`error: ${message}\n`);
  void stop(1);
  throw new Error(message);
}

async function stop(code = 0) {
  if (stopping) return;
  stopping = true;
  if (wrangler?.pid && wrangler.exitCode === null) {
    try {
      process.kill(-wrangler.pid, "SIGTERM");
    } catch {}
  }
  await endpoint?.close().catch(() => {});
  await backend?.close().catch(() => {});
  process.exit(code);
}

process.on("SIGINT", () => void stop(0));
process.on("SIGTERM", () => void stop(0));
// If whoever started us goes away without signalling (e.g. `npm` killed), stop the children too.
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) void stop(0);
}, 1000).unref();

/** True when something already listens on HOST:PORT (another `npm run dev`?). */
function portInUse(): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer()
      .once("error", () => resolve(true))
      .once("listening", () => probe.close(() => resolve(false)))
      .listen(PORT, HOST);
  });
}

async function waitForHealth(timeoutMs: number): Promise<unknown> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (wrangler?.exitCode !== null) fail("wrangler dev exited before the Worker became ready (see above)");
    try {
      const res = await fetch(`${BASE}/healthz`);
      if (res.ok) return res.json();
    } catch {}
    await new Promise((r) => setTimeout(r, 150));
  }
  fail(`the Worker did not answer ${BASE}/healthz within ${timeoutMs / 1000}s`);
}

async function main() {
  if (await portInUse())
    fail(`port ${PORT} on ${HOST} is in use (another npm run dev?); stop it or set PORT`);
  mkdirSync(AMBA_DIR, { recursive: true });
  try {
    backend = await openConfigured(() => openPersisted());
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    fail(`cannot open the database${process.env.DATABASE_URL ? " at DATABASE_URL" : ""}: ${reason}`);
  }
  endpoint = await startNeonEndpoint(backend);
  wrangler = spawnWranglerDev({
    host: HOST,
    port: PORT,
    endpoint,
    stateDir: AMBA_DIR,
    vars: {
      PUBLIC_BASE_URL: BASE,
      FUNCTION_URL_POLICY: "dev",
      // Per-app hostnames locally: <slug>.mcp.localhost (wrangler.toml keeps production's suffix).
      APP_MCP_HOST_SUFFIX: "mcp.localhost",
      // …and production's: a `Host: <slug>.mcp.amba.host` (DESIGN.md's address) reaches that app too.
      APP_MCP_HOST_ALIAS: "mcp.amba.host",
    },
  });
  wrangler.on("exit", (code) => {
    if (!stopping) {
      process.stderr.write(`error: wrangler dev exited (code ${code})\n`);
      void stop(1);
    }
  });

  const health = await waitForHealth(60_000);
  const ready = ((performance.now() - started) / 1000).toFixed(1);
  const vectors = await hasPgvector(backend);
  const demo = await seedDemo(BASE, join(AMBA_DIR, "demo.json"), { vectors });
  const mcpUrl = `${BASE}/app/${demo.projectId}/mcp`;
  const config = {
    mcpServers: {
      "amba-demo": { type: "http", url: mcpUrl, headers: { Authorization: `Bearer ${demo.developerToken}` } },
      "amba-demo-user": {
        type: "http",
        url: mcpUrl,
        headers: { "X-Api-Key": demo.clientKey, Authorization: `Bearer ${demo.sessionToken}` },
      },
    },
  };
  process.stdout.write(
    [
      "",
      `Amba app MCP is running (ready in ${ready}s; database: ${backend.kind}).`,
      ...(vectors ? [] : ["  (no pgvector on this database: the demo recipes have no embedding column)"]),
      `  health          ${BASE}/healthz  ${JSON.stringify(health)}`,
      `  app MCP         ${mcpUrl}`,
      `  hostname MCP    ${demo.hostnameUrl ?? "(no slug)"}`,
      `  OAuth           paste ${mcpUrl} into a spec-following MCP client, no headers: it signs in in the browser`,
      `  platform MCP    ${BASE}/mcp`,
      `  console         ${BASE}/console   API reference ${BASE}/docs`,
      `  project id      ${demo.projectId}`,
      `  developer token ${demo.developerToken}`,
      `  client key      ${demo.clientKey}`,
      `  end user        ${demo.userEmail} / ${demo.userPassword}`,
      `  session token   ${demo.sessionToken}`,
      "",
      "MCP client config (developer scope, then end-user scope):",
      JSON.stringify(config, null, 2),
      "",
      "Ctrl-C to stop.",
      "",
    ].join("\n"),
  );
}

main().catch((err) => {
  if (!stopping) {
    process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    void stop(1);
  }
});
