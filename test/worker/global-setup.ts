/**
 * Starts, once per run, the database behind the local Neon endpoint (with a fresh secret), a faulty
 * endpoint in front of it and a loopback echo server; hands their URLs to the Worker tests. The
 * database is the embedded one (from a migrated snapshot), or with `AMBA_TEST_PG=1` a throw-away
 * PostgreSQL server (a real multi-connection database), or the Postgres at `DATABASE_URL`.
 * `hasVector` tells the vector tests whether pgvector is there.
 */
import type { TestProject } from "vitest/node";
import type { SqlBackend } from "../../src/dev/backends.ts";
import {
  hasPgvector,
  openConfigured,
  openFromSnapshot,
  openMigratedPostgres,
} from "../../src/dev/embedded.ts";
import { startNeonEndpoint } from "../../src/dev/neon-endpoint.ts";
import { startTestPostgres, type TestPostgres } from "../postgres-server.ts";
import { startEchoServer } from "./echo-server.ts";
import { startFaultEndpoint } from "./fault-endpoint.ts";

declare module "vitest" {
  export interface ProvidedContext {
    localDbUrl: string;
    /** The Worker's `DATABASE_URL`: its password is the endpoint's secret, fresh per run. */
    databaseUrl: string;
    echoUrl: string;
    /** A faulty database in front of the endpoint (`fault-endpoint.ts`): `/hang` and `/sql` paths. */
    faultDbUrl: string;
    hasVector: boolean;
  }
}

export default async function setup(project: TestProject) {
  let server: TestPostgres | undefined;
  let backend: SqlBackend;
  if (process.env.AMBA_TEST_PG) {
    server = await startTestPostgres();
    backend = await openMigratedPostgres(server.url).catch(async (err) => {
      await server?.close();
      throw err;
    });
  } else {
    backend = await openConfigured(() => openFromSnapshot());
  }
  const endpoint = await startNeonEndpoint(backend);
  const echo = await startEchoServer();
  const fault = await startFaultEndpoint(endpoint.url);
  project.provide("localDbUrl", endpoint.url);
  project.provide("databaseUrl", endpoint.connectionString);
  project.provide("echoUrl", echo.url);
  project.provide("faultDbUrl", fault.url);
  const hasVector = await hasPgvector(backend);
  if (!hasVector) console.warn("pgvector is not installed on the test database: vector tests are skipped");
  project.provide("hasVector", hasVector);
  return async () => {
    await fault.close();
    await echo.close();
    await endpoint.close();
    await backend.close();
    await server?.close();
  };
}
