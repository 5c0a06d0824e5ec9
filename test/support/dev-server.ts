/**
 * A real Worker for Node tests, started the way a user starts it: `scripts/dev.ts` (`npm run dev`)
 * on a free port with its own data directory (embedded database, seeded demo app). One per test
 * file; `stop()` signals it like Ctrl-C and removes the data.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { migrationsHash } from "../../src/dev/migrate.ts";

const root = join(import.meta.dirname, "../..");
const node = join(root, "node_modules/.bin/node");

export interface DevServer {
  base: string;
  port: number;
  /** The banner `npm run dev` printed. */
  output: () => string;
  demo: { projectId: string; developerToken: string };
  stop: () => Promise<void>;
}

/** A free loopback port. */
export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** A running `scripts/dev.ts` whose banner has been printed. */
export interface LaunchedDev {
  child: ChildProcess;
  /** Everything it printed so far (stdout and stderr). */
  output: () => string;
}

/** Spawn `scripts/dev.ts` on `port` with its own data folder and wait for the banner. */
export async function launchDev(port: number, dataDir: string, databaseUrl = ""): Promise<LaunchedDev> {
  const child = spawn(node, ["scripts/dev.ts"], {
    cwd: root,
    env: { ...process.env, PORT: String(port), AMBA_DATA_DIR: dataDir, DATABASE_URL: databaseUrl },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (d) => {
    out += d;
  });
  child.stderr!.on("data", (d) => {
    out += d;
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setInterval(() => {
      if (out.includes("Ctrl-C to stop")) {
        clearInterval(timer);
        resolve();
      } else if (child.exitCode !== null) {
        clearInterval(timer);
        reject(new Error(`npm run dev exited early:\n${out}`));
      }
    }, 100);
  });
  return { child, output: () => out };
}

/**
 * Puts the migrated database snapshot that the Worker suite's global setup caches
 * (`.amba/snapshot-<migrations hash>.tar.gz`, PGDATA as a tarball) into `dataDir/pgdata`, when there
 * is one: `npm run dev` then opens a migrated database instead of creating a cluster and migrating
 * it (about 10 s of CPU of its 20). Without a current snapshot the start is a fresh one. A first
 * start on an empty folder is test/dev/dev-server.test.ts's subject, which does not use this.
 */
function seedDatabase(dataDir: string): void {
  const snapshot = join(root, ".amba", `snapshot-${migrationsHash()}.tar.gz`);
  if (!existsSync(snapshot)) return;
  const pgdata = join(dataDir, "pgdata");
  mkdirSync(pgdata);
  // stderr piped: tar notes that it strips the archive's leading "/" (an error still throws).
  execFileSync("tar", ["-xzf", snapshot, "-C", pgdata], { stdio: ["ignore", "ignore", "pipe"] });
}

/** Start `scripts/dev.ts` on a free port with a throw-away data folder (database already migrated). */
export async function startDevServer(): Promise<DevServer> {
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), "amba-dev-"));
  seedDatabase(dataDir);
  const { child, output } = await launchDev(port, dataDir);
  const out = output();
  const field = (label: string) => new RegExp(`${label}\\s+(\\S+)`).exec(out)?.[1] ?? "";
  return {
    base: `http://127.0.0.1:${port}`,
    port,
    output,
    demo: { projectId: field("project id"), developerToken: field("developer token") },
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGINT");
        await exited;
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** What undici reports when the server had closed a reused keep-alive socket before the request got through. */
const CLOSED_UNDER_IT = new Set(["UND_ERR_SOCKET", "EPIPE"]);

/**
 * `fetch`, retried once when the socket was closed under it: wrangler dev drops idle keep-alive
 * connections, and undici may pick one up for the next request of a long test (seen as a socket
 * error, or as EPIPE when the request was being written into the closed socket).
 */
export async function request(url: string, init?: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (err) {
    if (!CLOSED_UNDER_IT.has((err as { cause?: { code?: string } }).cause?.code ?? "")) throw err;
    return fetch(url, init);
  }
}

/** A new developer (token + first project) through the public sign-up route. */
export async function signupDeveloper(base: string): Promise<{ token: string; projectId: string }> {
  const res = await request(`${base}/v1/developers/signup`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: `dev-${crypto.randomUUID()}@example.com`, project_name: "Cookbook" }),
  });
  if (res.status !== 201) throw new Error(`signup failed: ${res.status} ${await res.text()}`);
  const body = (await res.json()) as { token: string; project: { id: string } };
  return { token: body.token, projectId: body.project.id };
}
