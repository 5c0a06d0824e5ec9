/**
 * Starts, once per run, the embedded database (from a migrated snapshot) behind the local Neon
 * endpoint, plus a loopback echo server; hands their URLs to the Worker tests.
 */
import type { TestProject } from "vitest/node";
import { openConfigured, openFromSnapshot } from "../../src/dev/embedded.ts";
import { startNeonEndpoint } from "../../src/dev/neon-endpoint.ts";
import { startEchoServer } from "./echo-server.ts";

declare module "vitest" {
  export interface ProvidedContext {
    localDbUrl: string;
    echoUrl: string;
  }
}

export default async function setup(project: TestProject) {
  const backend = await openConfigured(() => openFromSnapshot());
  const endpoint = await startNeonEndpoint(backend);
  const echo = await startEchoServer();
  project.provide("localDbUrl", endpoint.url);
  project.provide("echoUrl", echo.url);
  return async () => {
    await echo.close();
    await endpoint.close();
    await backend.close();
  };
}
