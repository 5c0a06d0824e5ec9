/**
 * A warm isolate's requests load no module. In this pool every `import()` the Worker runs is a
 * round trip to the test runner, made in the I/O context of the request that runs it, and the
 * runner hands concurrent imports of one module the same pending promise: a request then waited
 * on another request's I/O, which workerd cancels as hung ("Cannot perform I/O on behalf of a
 * different request (I/O type: RefcountedFulfiller)"). Each module the Worker loads on first use
 * (src/lazy-module.ts) is imported once per isolate and kept.
 */
import { describe, expect, it } from "vitest";
import { createCollection, data, dataProject, insert } from "./data/fixtures.ts";
import { apiJson, freshIp, mcpPostHeaders } from "./helpers.ts";

interface Transport {
  invoke: (...args: unknown[]) => Promise<unknown>;
}
const runner = (globalThis as unknown as { __vitest_mocker__: { moduleRunner: { transport: Transport } } })
  .__vitest_mocker__.moduleRunner;

/**
 * The modules the Worker asked the test runner for while `run` ran. The pool's own import of the
 * Worker's entry, once per request, is left out: it runs in the runner's context, not a request's.
 */
async function modulesLoadedDuring(run: () => Promise<unknown>): Promise<string[]> {
  const { transport } = runner;
  const invoke = transport.invoke;
  const asked: string[] = [];
  transport.invoke = (...args: unknown[]) => {
    const [, [url]] = args as [string, [string]];
    if (!url.endsWith("/src/worker/index.ts")) asked.push(url);
    return invoke.apply(transport, args);
  };
  try {
    await run();
  } finally {
    transport.invoke = invoke;
  }
  return asked;
}

describe("module loads", () => {
  it("a warm isolate's concurrent requests import nothing (each import was a round trip they shared)", async () => {
    const p = await dataProject();
    await createCollection(p, {
      name: "notes",
      columns: [{ name: "title", type: "text" }],
      access: { read: "owner", write: "owner" },
    });
    const requests = () =>
      Promise.all([
        apiJson("/healthz"),
        apiJson("/healthz"),
        insert(p, p.userA, "notes", { title: "a" }),
        data(p, p.userA, "notes", "rows", { method: "GET" }),
        apiJson(`/app/${p.dev.projectId}/mcp`, {
          method: "POST",
          headers: mcpPostHeaders(p.dev.token),
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
        }),
        apiJson("/v1/admin/projects", { token: p.dev.token }),
        apiJson("/v1/events", {
          json: { name: "warm" },
          apiKey: p.dev.clientKey,
          headers: { "cf-connecting-ip": freshIp() },
        }),
        apiJson(`/v1/admin/projects/${p.dev.projectId}/events`, { token: p.dev.token }),
        // A made-up OAuth access token: the OAuth provider is loaded to refuse it.
        apiJson(`/app/${p.dev.projectId}/mcp`, {
          method: "POST",
          headers: mcpPostHeaders(`u_${"0".repeat(32)}:${crypto.randomUUID()}:made-up`),
          body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "ping" }),
        }),
      ]);
    await requests(); // every module loaded once
    const asked = await modulesLoadedDuring(requests);
    expect(asked).toEqual([]);
  });
});
