/**
 * A throw-away PostgreSQL cluster for the second Worker test run (`AMBA_TEST_PG=1`) and the
 * dev-server test on a plain Postgres: `initdb` into a temporary directory, a server on a free
 * loopback port, one database, removed again on close.
 * PostgreSQL refuses to run as root, so as root the cluster belongs to a system user made for it.
 * The binaries come from `AMBA_PG_BIN`, else the newest `/usr/lib/postgresql/<major>/bin`.
 */
import { spawn } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";

/** The system user owning the cluster when the tests run as root. */
const CLUSTER_USER = "amba-pgtest";

export interface TestPostgres {
  /** Connection string of the test database. */
  url: string;
  close(): Promise<void>;
}

/** The directory holding `initdb` and `pg_ctl`, or null when PostgreSQL is not installed. */
export function findPostgres(): string | null {
  if (process.env.AMBA_PG_BIN) return process.env.AMBA_PG_BIN;
  const root = "/usr/lib/postgresql";
  const majors = existsSync(root) ? readdirSync(root).filter((d) => /^\d+$/.test(d)) : [];
  const newest = majors.sort((a, b) => Number(b) - Number(a))[0];
  return newest && existsSync(join(root, newest, "bin/initdb")) ? join(root, newest, "bin") : null;
}

/** Run a command to completion (as `user` when given); rejects with its output on failure. */
function run(command: string, args: string[], user?: string): Promise<void> {
  const [file, argv] = user ? ["runuser", ["-u", user, "--", command, ...args]] : [command, args];
  return new Promise((resolve, reject) => {
    // stdout is ignored: a daemonized postmaster would otherwise hold the pipe open.
    const child = spawn(file, argv, { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0 ? resolve() : reject(new Error(`${command} exited with ${code}: ${stderr.trim()}`)),
    );
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** As root: the cluster user (created on first use) and its uid/gid; otherwise undefined. */
async function clusterOwner(): Promise<{ name: string; uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const find = () =>
    readFileSync("/etc/passwd", "utf8").match(new RegExp(`^${CLUSTER_USER}:[^:]*:(\\d+):(\\d+):`, "m"));
  if (!find()) {
    await run("useradd", [
      "--system",
      "--no-create-home",
      "--shell",
      "/usr/sbin/nologin",
      CLUSTER_USER,
    ]).catch((err) => {
      if (!find()) throw err; // a parallel run may have created it meanwhile
    });
  }
  const [, uid, gid] = find() as RegExpMatchArray;
  return { name: CLUSTER_USER, uid: Number(uid), gid: Number(gid) };
}

/** Start a fresh cluster with an empty database `amba`. */
export async function startTestPostgres(): Promise<TestPostgres> {
  const bin = findPostgres();
  if (!bin) throw new Error("no PostgreSQL server found: install postgresql or set AMBA_PG_BIN");
  const owner = await clusterOwner();
  const dir = mkdtempSync(join(tmpdir(), "amba-pg-"));
  if (owner) chownSync(dir, owner.uid, owner.gid);
  const data = join(dir, "data");
  const port = await freePort();
  const as = owner?.name;
  try {
    await run(
      join(bin, "initdb"),
      ["-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"],
      as,
    );
    const options = [
      "-c listen_addresses=127.0.0.1",
      `-p ${port}`,
      `-k ${dir}`,
      "-c max_connections=64",
      // A throw-away cluster: durability buys nothing here.
      "-c fsync=off",
      "-c synchronous_commit=off",
      "-c full_page_writes=off",
    ].join(" ");
    await run(
      join(bin, "pg_ctl"),
      ["-D", data, "-l", join(dir, "server.log"), "-o", options, "-w", "start"],
      as,
    );
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const admin = new pg.Client({ connectionString: `postgresql://postgres@127.0.0.1:${port}/postgres` });
  await admin.connect();
  await admin.query("CREATE DATABASE amba");
  await admin.end();
  return {
    url: `postgresql://postgres@127.0.0.1:${port}/amba`,
    async close() {
      await run(join(bin, "pg_ctl"), ["-D", data, "-m", "immediate", "-w", "stop"], as).catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
