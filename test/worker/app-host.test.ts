/**
 * An app's hostname (`<slug>.<suffix>`) serves its MCP endpoint, the discovery documents and the
 * authorization server's endpoints — not the platform's own pages and API: the slug is the tenant's
 * choice, and `login.mcp.amba.host/console` must not show the platform's sign-in page.
 */
import { describe, expect, it } from "vitest";
import { apiJson, expectError, signupDeveloper } from "./helpers.ts";

const host = (slug: string) => `https://${slug}.mcp.amba.host`;

describe("an app's hostname", () => {
  it("refuses the console, the API reference, the admin, account and data API and the path-addressed MCP", async () => {
    const dev = await signupDeveloper();
    for (const [method, path] of [
      ["GET", "/console"],
      ["GET", "/console/login"],
      ["GET", "/docs"],
      ["GET", "/openapi.json"],
      ["GET", "/v1/admin/projects"],
      ["POST", "/v1/developers/signup"],
      ["GET", "/v1/auth/me"],
      ["GET", `/v1/projects/${dev.projectId}/collections/x/rows`],
      ["POST", `/app/${dev.projectId}/mcp`],
      ["GET", "/"],
    ] as const) {
      const res = await apiJson(`${host("login")}${path}`, { method, token: dev.token });
      expectError(res, 404, "on an app's hostname");
      // The same path on the platform's own host is served (whatever it answers, not this 404).
      const own = await apiJson(`http://local${path}`, { method, token: dev.token }).catch(() => null);
      expect(own?.body?.error?.message ?? "", path).not.toContain("on an app's hostname");
    }
  });

  it("serves the MCP endpoint, its resource metadata and /healthz, and lets the authorization server's paths through", async () => {
    const dev = await signupDeveloper();
    const slug = `host-${crypto.randomUUID().slice(0, 8)}`;
    const config = await apiJson(`/v1/admin/projects/${dev.projectId}/app-mcp/config`, {
      method: "PATCH",
      token: dev.token,
      json: { slug },
    });
    expect(config.status).toBe(200);
    const prm = await apiJson(`${host(slug)}/.well-known/oauth-protected-resource/mcp`);
    expect(prm.status, JSON.stringify(prm.body)).toBe(200);
    expect(prm.body.resource).toBe(`${host(slug)}/mcp`);
    const health = await apiJson(`${host(slug)}/healthz`);
    expect(health.status, JSON.stringify(health.body)).toBe(200);
    const mcp = await apiJson(`${host(slug)}/mcp`, {
      token: dev.token,
      headers: { accept: "application/json, text/event-stream" },
      json: { jsonrpc: "2.0", id: 1, method: "ping" },
    });
    expect(mcp.body).toEqual({ jsonrpc: "2.0", id: 1, result: {} });
    // The authorization server's paths pass the host rule (the provider answers them on the issuer).
    for (const path of [
      "/.well-known/oauth-authorization-server",
      "/oauth/register",
      "/oauth/token",
      "/authorize",
    ]) {
      const res = await apiJson(`${host(slug)}${path}`, { method: "POST", body: "" }).catch(() => null);
      expect(res?.body?.error?.message ?? "", path).not.toContain("on an app's hostname");
    }
  });
});
