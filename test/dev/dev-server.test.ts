/**
 * `npm run dev` as a user runs it: one command, healthy, Ctrl-C stops every child, a second start
 * reuses the data, and a plain PostgreSQL (no pgvector) at `DATABASE_URL` works too. Start-up time
 * is a benchmark (BENCHMARKS.md), not an assertion here: timeouts are only generous limits.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import type { LookupFunction } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, describe, expect, inject, it, vi } from "vitest";
import { findPostgres, startTestPostgres } from "../postgres-server.ts";
import { freePort, type LaunchedDev, launchDev } from "../support/dev-server.ts";

const root = join(import.meta.dirname, "../..");
const dataDir = mkdtempSync(join(tmpdir(), "amba-dev-"));
const node = join(root, "node_modules/.bin/node");

const startDev = (port: number, databaseUrl = "", data = dataDir): Promise<LaunchedDev> =>
  launchDev(port, data, databaseUrl);

async function stopDev({ child }: LaunchedDev): Promise<number | null> {
  child.kill("SIGINT");
  return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
}

const projectIdIn = (output: string) => /project id\s+(\S+)/.exec(output)?.[1];

afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

async function mcpClient(url: string, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: "seed-round-trip", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return client;
}

// biome-ignore lint/suspicious/noExplicitAny: the test reads the JSON the tools return
const json = (result: unknown): any =>
  JSON.parse((result as { content: { text: string }[] }).content[0]!.text);

/**
 * Seed 004's round trip an agent can do, with the official SDK client against `npm run dev`: sign
 * up and provision `recipes` through the platform MCP, expose it, connect to the app's
 * `connection.url`, `recipes_insert` a row and `recipes_find` it back; the two calls are metered.
 */
async function seedRoundTrip(base: string) {
  const anonymous = await mcpClient(`${base}/mcp`);
  const signup = json(
    await anonymous.callTool({ name: "amba_developer_signup", arguments: { email: "agent@example.com" } }),
  );
  await anonymous.close();
  const project_id = signup.project.id;
  const platform = await mcpClient(`${base}/mcp`, { authorization: `Bearer ${signup.token}` });
  const created = await platform.callTool({
    name: "amba_collections_create",
    arguments: {
      project_id,
      name: "recipes",
      columns: [
        { name: "title", type: "text", required: true, description: "Dish name" },
        { name: "calories", type: "integer" },
      ],
    },
  });
  expect(created.isError, JSON.stringify(created.content)).toBe(false);
  const exposure = { project_id, collections: ["recipes"] };
  expect(json(await platform.callTool({ name: "amba_app_mcp_set_exposure", arguments: exposure }))).toEqual({
    collections: ["recipes"],
    functions: [],
  });
  const config = json(
    await platform.callTool({ name: "amba_app_mcp_get_config", arguments: { project_id } }),
  );
  expect(config.connection.url).toBe(`${base}/app/${project_id}/mcp`);

  const app = await mcpClient(config.connection.url, { authorization: `Bearer ${signup.token}` });
  const names = (await app.listTools()).tools.map((t) => t.name);
  for (const op of ["list", "get", "find", "insert", "update", "delete", "aggregate"]) {
    expect(names).toContain(`recipes_${op}`);
  }
  const row = json(
    await app.callTool({ name: "recipes_insert", arguments: { title: "Birthday Cake", calories: 540 } }),
  );
  const found = await app.callTool({
    name: "recipes_find",
    arguments: {
      where: { calories: { gt: 500 }, title: { ilike: "%cake%" } },
      order: "created_at desc",
      limit: 20,
    },
  });
  expect(found.structuredContent).toEqual({ rows: [row], next_cursor: null });
  await vi.waitFor(async () => {
    const billing = json(await platform.callTool({ name: "amba_billing_status", arguments: { project_id } }));
    expect(billing.usage.agent_tool_calls).toBe(2);
  });

  // A burst, as an agent host fanning out sends it: separate requests at once, far more than the
  // app's 16 database slots (src/data/app-slots.ts) — the rest wait their turn, none is refused.
  const BURST = 300;
  const inserts = await Promise.all(
    Array.from({ length: BURST }, (_, i) =>
      fetch(config.connection.url, {
        method: "POST",
        headers: {
          authorization: `Bearer ${signup.token}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2025-06-18",
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: i,
          method: "tools/call",
          params: { name: "recipes_insert", arguments: { title: `burst ${i}`, calories: i } },
        }),
      }).then(async (res) => ({ status: res.status, body: await res.text() })),
    ),
  );
  const refused = inserts.filter((r) => r.status !== 200 || r.body.includes('"isError":true'));
  expect(refused.slice(0, 2)).toEqual([]);
  const count = json(
    await app.callTool({ name: "recipes_aggregate", arguments: { metrics: [{ fn: "count" }] } }),
  );
  expect(count.rows).toEqual([{ count: 1 + BURST }]);
  await vi.waitFor(async () => {
    const billing = json(await platform.callTool({ name: "amba_billing_status", arguments: { project_id } }));
    expect(billing.usage.agent_tool_calls).toBe(2 + BURST + 1);
  });
  await app.close();
  await platform.close();
}

const printed = (output: string, label: string) => new RegExp(`${label}\\s+(\\S+)`).exec(output)?.[1] ?? "";

/**
 * `fetch` over node:http with the lookup README "Per-app hostnames locally" gives Node, whose
 * resolver does not know `*.localhost`: every name is 127.0.0.1 and the URL's host is the `Host`.
 */
const loopbackFetch = ((url: string | URL, init: RequestInit = {}) =>
  new Promise<Response>((resolve, reject) => {
    const headers = Object.fromEntries(new Headers(init.headers));
    const lookup: LookupFunction = (_host, options, callback) =>
      options.all ? callback(null, [{ address: "127.0.0.1", family: 4 }]) : callback(null, "127.0.0.1", 4);
    const req = request(new URL(url), { method: init.method ?? "GET", headers, lookup }, (res) => {
      const status = res.statusCode ?? 500;
      const body = status === 204 || status === 304 ? null : (Readable.toWeb(res) as ReadableStream);
      resolve(new Response(body, { status, headers: res.headers as Record<string, string> }));
    });
    req.on("error", reject).end(init.body as string | undefined);
  })) as typeof fetch;

/**
 * The README's examples against the demo app `npm run dev` printed, with the official SDK client:
 * the hostname URL (`http://demo.mcp.localhost:<port>/mcp`) serves the end-user tools and is its
 * own OAuth resource, and "A tool
 * file as an app function": the README's `tools.ts` under `amber serve` with the project's signing
 * secret, deployed and exposed, answers `my_first_project_fn_add {"a":2,"b":40}` with
 * `{"status":200,"body":42}` — the platform's signature checked by amber's verifier.
 */
async function readmeExamples(base: string, output: string) {
  const project = printed(output, "project id");
  const developer = { authorization: `Bearer ${printed(output, "developer token")}` };
  const endUser = {
    "x-api-key": printed(output, "client key"),
    authorization: `Bearer ${printed(output, "session token")}`,
  };
  const hostUrl = printed(output, "hostname MCP");
  expect(hostUrl).toMatch(/^http:\/\/demo\.mcp\.localhost:\d+\/mcp$/);
  // An OAuth client's first step on that URL leads to metadata served there, naming that URL.
  const challenge = await loopbackFetch(hostUrl, { method: "POST", body: "{}" });
  const metadataUrl = `${new URL(hostUrl).origin}/.well-known/oauth-protected-resource/mcp`;
  expect(challenge.headers.get("www-authenticate")).toContain(`resource_metadata="${metadataUrl}"`);
  expect(await (await loopbackFetch(metadataUrl)).json()).toMatchObject({ resource: hostUrl });
  const onHost = new Client({ name: "readme", version: "1.0.0" });
  await onHost.connect(
    new StreamableHTTPClientTransport(new URL(hostUrl), {
      fetch: loopbackFetch,
      requestInit: { headers: endUser },
    }),
  );
  expect((await onHost.listTools()).tools.map((t) => t.name)).toContain("recipes_find_nearest");
  await onHost.close();
  // DESIGN.md's address, `<slug>.mcp.amba.host/mcp`, sent to the dev server as a `Host` header is
  // the same app (APP_MCP_HOST_ALIAS), not the platform MCP.
  const byDesignHost = await loopbackFetch(`${base}/mcp`, {
    method: "POST",
    headers: {
      ...endUser,
      host: "demo.mcp.amba.host",
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
  });
  expect(JSON.stringify(await byDesignHost.json())).toContain('"recipes_find_nearest"');
  // A local test suite signs up a developer per test: more than the per-IP 10 a minute, all 201
  // (wrangler dev reports every local client as a loopback address, which no per-IP limit counts).
  const signups = await Promise.all(
    Array.from({ length: 12 }, (_, i) =>
      fetch(`${base}/v1/developers/signup`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ email: `local-suite-${i}-${Date.now()}@example.com` }),
      }).then((res) => res.status),
    ),
  );
  expect(signups).toEqual(Array(12).fill(201));

  const admin = (path: string, method: string, body?: unknown) =>
    fetch(`${base}/v1/admin/projects/${project}${path}`, {
      method,
      headers: { ...developer, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    }).then(async (res) => ({ status: res.status, body: (await res.json()) as Record<string, unknown> }));
  const secret = (await admin("/functions/signing-secret", "GET")).body.signing_secret;
  const dir = mkdtempSync(join(tmpdir(), "amba-readme-"));
  writeFileSync(
    join(dir, "tools.ts"),
    "/** Add two numbers. */\nexport function add(a: number, b: number) {\n  return a + b;\n}\n",
  );
  const serve = spawn(node, [inject("amberBin"), "serve", "tools.ts", "--port", "0"], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? "", AMBA_FUNCTION_SIGNING_SECRET: String(secret) },
  });
  try {
    const served = await new Promise<string>((resolve, reject) => {
      let err = "";
      serve.stderr.on("data", (d) => {
        err += d;
        const match = /listening on (http:\/\/\S+)/.exec(err);
        if (match) resolve(match[1]!);
      });
      serve.once("exit", () => reject(new Error(`amber serve exited: ${err}`)));
    });
    const schema = {
      type: "object",
      properties: { a: { type: "number" }, b: { type: "number" } },
      required: ["a", "b"],
    };
    const deploy = {
      name: "add",
      url: `${served}/add`,
      mcp: { description: "Add two numbers.", input_schema: schema },
    };
    expect((await admin("/functions/deploy", "POST", deploy)).status).toBe(201);
    expect((await admin("/app-mcp/exposure", "PUT", { functions: ["add"] })).status).toBe(200);
    const app = await mcpClient(`${base}/app/${project}/mcp`, endUser);
    const call = await app.callTool({ name: "my_first_project_fn_add", arguments: { a: 2, b: 40 } });
    expect(json(call)).toEqual({ status: 200, body: 42 });
    await app.close();
    // Straight to the function, unsigned: amber refuses it.
    const unsigned = await fetch(`${served}/add`, { method: "POST", body: '{"a":2,"b":40}' });
    expect(unsigned.status).toBe(401);
  } finally {
    serve.kill("SIGTERM");
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("npm run dev", () => {
  it("serves a healthy Worker on the embedded database, stops cleanly, and keeps the data", async () => {
    const port = await freePort();
    const first = await startDev(port);
    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ ok: true, database: { ok: true } });
    const projectId = projectIdIn(first.output());
    expect(projectId).toMatch(/^[0-9a-f-]{36}$/);
    expect(first.output()).toContain(`"url": "http://127.0.0.1:${port}/app/${projectId}/mcp"`);
    await seedRoundTrip(`http://127.0.0.1:${port}`);
    await readmeExamples(`http://127.0.0.1:${port}`, first.output());

    expect(await stopDev(first)).toBe(0);
    // Nothing is left listening on the port.
    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();

    const second = await startDev(port);
    expect(projectIdIn(second.output())).toBe(projectId);
    const rows = await fetch(`http://127.0.0.1:${port}/v1/projects/${projectId}/collections/recipes/rows`, {
      headers: { authorization: `Bearer ${/developer token\s+(\S+)/.exec(second.output())![1]}` },
    });
    expect(((await rows.json()) as { rows: unknown[] }).rows).toHaveLength(3);
    expect(await stopDev(second)).toBe(0);
  }, 300_000);

  it.skipIf(!findPostgres())(
    "seeds the demo without the vector column on a PostgreSQL without pgvector, and says so",
    async () => {
      const server = await startTestPostgres();
      const data = mkdtempSync(join(tmpdir(), "amba-dev-pg-"));
      try {
        const port = await freePort();
        const dev = await startDev(port, server.url, data);
        const output = dev.output();
        expect(output).toContain("database: postgres");
        expect(output).toContain("no pgvector on this database: the demo recipes have no embedding column");
        const token = /developer token\s+(\S+)/.exec(output)?.[1];
        const collections = await fetch(
          `http://127.0.0.1:${port}/v1/admin/projects/${projectIdIn(output)}/collections`,
          {
            headers: { authorization: `Bearer ${token}` },
          },
        );
        const body = (await collections.json()) as {
          collections: { name: string; columns: { name: string }[] }[];
        };
        expect(body.collections.map((c) => [c.name, c.columns.map((col) => col.name)])).toEqual([
          ["recipes", ["title", "calories", "tags"]],
        ]);
        expect(await stopDev(dev)).toBe(0);
      } finally {
        await server.close();
        rmSync(data, { recursive: true, force: true });
      }
    },
    300_000,
  );

  it("reports an unreachable DATABASE_URL in one line and exits non-zero", async () => {
    const child = spawn(node, ["scripts/dev.ts"], {
      cwd: root,
      env: {
        ...process.env,
        PORT: String(await freePort()),
        AMBA_DATA_DIR: dataDir,
        DATABASE_URL: "postgres://u:p@127.0.0.1:1/none",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr!.on("data", (d) => {
      stderr += d;
    });
    const code = await new Promise((resolve) => child.once("exit", resolve));
    expect(code).toBe(1);
    expect(stderr.trim().split("\n")).toEqual([
      expect.stringMatching(/^error: cannot open the database at DATABASE_URL: .*ECONNREFUSED/),
    ]);
  });
});
