/**
 * Starts, once per run, the embedded database (from a migrated snapshot) behind the local Neon
 * endpoint (with a fresh secret), a faulty endpoint in front of it and a loopback echo server; hands
 * their URLs to the Worker tests.
 */
import type { TestProject } from "vitest/node";
import { openConfigured, openFromSnapshot } from "../../src/dev/embedded.ts";
import { startNeonEndpoint } from "../../src/dev/neon-endpoint.ts";
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
  }
}

export default async function setup(project: TestProject) {
  const backend = await openConfigured(() => openFromSnapshot());
  const endpoint = await startNeonEndpoint(backend);
  const echo = await startEchoServer();
  const fault = await startFaultEndpoint(endpoint.url);
  project.provide("localDbUrl", endpoint.url);
  project.provide("databaseUrl", endpoint.connectionString);
  project.provide("echoUrl", echo.url);
  project.provide("faultDbUrl", fault.url);
  return async () => {
    await fault.close();
    await echo.close();
    await endpoint.close();
    await backend.close();
  };
}
