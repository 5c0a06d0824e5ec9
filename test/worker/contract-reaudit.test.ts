/**
 * Sixth contract audit (docs/contract-audit.md, "Sixth audit"): what a black-box test written from
 * DESIGN.md and seed 004 alone met against `npm run dev` and the earlier suites did not pin down.
 * A developer and project of its own, from a client address of its own.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/worker/app.ts";
import type { Env } from "../../src/worker/env.ts";
import { apiJson, developerWithNotes, freshIp, uniqueEmail } from "./helpers.ts";

const IP = { "cf-connecting-ip": freshIp() };
const MCP_HEADERS = {
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
  ...IP,
};
const toolsList = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" });

let token: string;
let projectId: string;
let slug: string;

beforeAll(async () => {
  ({ token, projectId } = await developerWithNotes(IP, {
    email: uniqueEmail("reaudit-dev"),
    project_name: "Reaudit",
  }));
  slug = `reaudit-${crypto.randomUUID().slice(0, 8)}`;
  const config = await apiJson(`/v1/admin/projects/${projectId}/app-mcp/config`, {
    method: "PATCH",
    token,
    headers: IP,
    json: { slug },
  });
  expect(config.status, JSON.stringify(config.body)).toBe(200);
});

/**
 * `npm run dev` serves per-app hostnames under `mcp.localhost` (a name that resolves locally), so a
 * test written from DESIGN.md — `POST https://<slug>.mcp.amba.host/mcp`, sent to the dev server with
 * that `Host` — got the platform MCP's tools. The dev server names the production suffix as an alias
 * (`APP_MCP_HOST_ALIAS`): a host under it is served as `<slug>.<APP_MCP_HOST_SUFFIX>`.
 */
describe("the production hostname on a Worker whose suffix is another (npm run dev)", () => {
  const app = createApp();
  const devEnv = (alias?: string): Env => ({
    ...(env as unknown as Env),
    PUBLIC_BASE_URL: "http://127.0.0.1:8787",
    APP_MCP_HOST_SUFFIX: "mcp.localhost",
    ...(alias === undefined ? {} : { APP_MCP_HOST_ALIAS: alias }),
  });
  async function send(url: string, host: string | undefined, bindings: Env, withToken = true) {
    const headers: Record<string, string> = { ...MCP_HEADERS };
    if (host !== undefined) headers.host = host;
    if (withToken) headers.authorization = `Bearer ${token}`;
    const ctx = createExecutionContext();
    const res = await app.fetch(
      new Request(url, { method: "POST", headers, body: toolsList }),
      bindings,
      ctx,
    );
    await waitOnExecutionContext(ctx);
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
  }
  const names = (body: { result?: { tools?: { name: string }[] } }) =>
    (body.result?.tools ?? []).map((t) => t.name);

  it("serves the app on <slug>.mcp.amba.host, by URL or by Host header, as on <slug>.mcp.localhost", async () => {
    const bindings = devEnv("mcp.amba.host");
    const expected = names((await send(`http://${slug}.mcp.localhost:8787/mcp`, undefined, bindings)).body);
    expect(expected).toContain("notes_insert");
    for (const [url, host] of [
      [`http://${slug}.mcp.amba.host/mcp`, undefined],
      ["http://127.0.0.1:8787/mcp", `${slug}.mcp.amba.host`],
      ["http://127.0.0.1:8787/mcp", `${slug.toUpperCase()}.MCP.AMBA.HOST:443`],
    ] as const) {
      const res = await send(url, host, bindings);
      expect(res.status, `${url} ${host}: ${JSON.stringify(res.body)}`).toBe(200);
      expect(names(res.body), `${url} ${host}`).toEqual(expected);
    }
    // Its 401 challenge names the hostname's resource metadata, an unknown slug is 404.
    const anonymous = await send("http://127.0.0.1:8787/mcp", `${slug}.mcp.amba.host`, bindings, false);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("www-authenticate")).toContain(
      `resource_metadata="http://${slug}.mcp.localhost:8787/.well-known/oauth-protected-resource/mcp"`,
    );
    const unknown = await send("http://127.0.0.1:8787/mcp", "no-such-app-here.mcp.amba.host", bindings);
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ error: { code: "not_found" } });
  });

  it("answers any other name under the alias as production does under its suffix: 404, not the platform", async () => {
    // README "Per-app hostnames locally": `login.mcp.amba.host.` and `x.login.mcp.amba.host` serve
    // nothing at all; under the dev alias they were left as they came, and got the platform's console.
    const bindings = devEnv("mcp.amba.host");
    for (const host of ["x.login.mcp.amba.host", "login.mcp.amba.host.", "X.LOGIN.MCP.AMBA.HOST:8787"]) {
      const ctx = createExecutionContext();
      const res = await app.fetch(
        new Request("http://127.0.0.1:8787/console", { headers: { host, ...IP } }),
        bindings,
        ctx,
      );
      await waitOnExecutionContext(ctx);
      expect(res.status, host).toBe(404);
      expect(await res.json(), host).toMatchObject({
        error: {
          code: "not_found",
          message: expect.stringContaining("this hostname is not an app's hostname"),
        },
      });
    }
    // The platform's own host, and a name that only contains the alias, stay the platform's.
    for (const host of ["127.0.0.1:8787", "mcp.amba.host.example.com"]) {
      const ctx = createExecutionContext();
      const res = await app.fetch(
        new Request("http://127.0.0.1:8787/console", { headers: { host, ...IP } }),
        bindings,
        ctx,
      );
      await waitOnExecutionContext(ctx);
      expect(res.status, host).toBe(200);
      await res.body?.cancel();
    }
  });

  it("without the alias a host under mcp.amba.host stays the platform's (production: the suffix itself)", async () => {
    const res = await send("http://127.0.0.1:8787/mcp", `${slug}.mcp.amba.host`, devEnv());
    expect(names(res.body)).toContain("amba_developer_signup");
  });
});

/**
 * `npm run dev` (wrangler dev) sets `cf-connecting-ip` to the loopback address of every local
 * client, so one machine's test suite shared the per-IP budgets: the 11th developer sign-up in a
 * minute — a suite written from DESIGN.md signs up one per test — was a 429. Loopback is no
 * per-IP caller (Cloudflare never reports one); other addresses keep their budgets.
 */
describe("per-IP limits and the local machine", () => {
  it("signs up more than 10 developers a minute from 127.0.0.1, and still 10 from another address", async () => {
    const from = async (ip: string, n: number) => {
      const statuses: number[] = [];
      for (let i = 0; i < n; i++) {
        const res = await apiJson("/v1/developers/signup", {
          headers: { "cf-connecting-ip": ip },
          json: { email: uniqueEmail(`loopback-${i}`) },
        });
        statuses.push(res.status);
      }
      return statuses;
    };
    expect(await from("127.0.0.1", 12)).toEqual(Array(12).fill(201));
    expect(await from("::1", 2)).toEqual([201, 201]);
    const elsewhere = await from(freshIp(), 11);
    expect(elsewhere.slice(0, 10)).toEqual(Array(10).fill(201));
    expect(elsewhere[10]).toBe(429);
  });
});
