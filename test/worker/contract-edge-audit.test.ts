/**
 * Fifth contract audit (docs/contract-audit.md, "Fifth audit"): the edge service's wire details a
 * test written from DESIGN.md and seed 004 alone would assert and the earlier suites did not.
 * A developer and project of its own, from a client address of its own.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { api, apiJson, developerWithNotes, freshIp, uniqueEmail } from "./helpers.ts";

const IP = { "cf-connecting-ip": freshIp() };

let token: string;
let projectId: string;
let slug: string;
const admin = (path = "") => `/v1/admin/projects/${projectId}${path}`;
const MCP_HEADERS = { accept: "application/json, text/event-stream", ...IP };
const toolsList = { jsonrpc: "2.0", id: 1, method: "tools/list" };

beforeAll(async () => {
  ({ token, projectId } = await developerWithNotes(IP, {
    email: uniqueEmail("edge-audit-dev"),
    project_name: "Edge Audit",
  }));
  slug = `edge-${crypto.randomUUID().slice(0, 8)}`;
  const config = await apiJson(admin("/app-mcp/config"), {
    method: "PATCH",
    token,
    headers: IP,
    json: { slug },
  });
  expect(config.status, JSON.stringify(config.body)).toBe(200);
  expect(config.body.connection.hostname_url).toBe(`https://${slug}.mcp.amba.host/mcp`);
});

describe("the hostname route, addressed by the Host header (DESIGN: `Host <slug>.<APP_MCP_HOST_SUFFIX>` → /mcp)", () => {
  const names = (body: { result?: { tools?: { name: string }[] } }) =>
    (body.result?.tools ?? []).map((t) => t.name);

  it("serves the app's own surface on /mcp, whatever host the URL was built with", async () => {
    for (const host of [`${slug}.mcp.amba.host`, `${slug.toUpperCase()}.MCP.AMBA.HOST:443`]) {
      const res = await apiJson("/mcp", { token, headers: { ...MCP_HEADERS, host }, json: toolsList });
      expect(res.status, `${host}: ${JSON.stringify(res.body)}`).toBe(200);
      expect(names(res.body), host).toEqual([
        "edge_audit_list_collections",
        "edge_audit_whoami",
        ...["list", "get", "find", "insert", "update", "delete", "aggregate"].map((op) => `notes_${op}`),
      ]);
    }
    // The platform's own host (or none) keeps the platform MCP on /mcp.
    const platform = await apiJson("/mcp", {
      token,
      headers: { ...MCP_HEADERS, host: "mcp.amba.dev" },
      json: toolsList,
    });
    expect(names(platform.body)).toContain("amba_developer_signup");
  });

  it("answers as the hostname endpoint: its 401 challenge, an unknown slug 404, its resource metadata", async () => {
    const host = `${slug}.mcp.amba.host`;
    const anonymous = await api("/mcp", { headers: { ...MCP_HEADERS, host }, json: toolsList });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("www-authenticate")).toBe(
      `Bearer realm="amba", resource_metadata="https://${slug}.mcp.amba.host/.well-known/oauth-protected-resource/mcp"`,
    );
    expect(await anonymous.json()).toMatchObject({
      error: { code: "unauthorized", message: expect.any(String) },
    });

    const unknown = await apiJson("/mcp", {
      token,
      headers: { ...MCP_HEADERS, host: `nobody-${crypto.randomUUID().slice(0, 8)}.mcp.amba.host` },
      json: toolsList,
    });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ error: { code: "not_found" } });

    const metadata = await apiJson("/.well-known/oauth-protected-resource/mcp", { headers: { ...IP, host } });
    expect(metadata.status, JSON.stringify(metadata.body)).toBe(200);
    expect(metadata.body.resource).toBe(`https://${slug}.mcp.amba.host/mcp`);
    // Platform paths stay off an app's hostname.
    const console = await apiJson("/v1/admin/projects", { token, headers: { ...IP, host } });
    expect(console.status).toBe(404);
  });
});

describe("a Host header that does not name an app's hostname", () => {
  it("leaves the request on the URL's host (the platform MCP), never a 500", async () => {
    for (const host of [
      `${slug}.mcp.amba.host@evil.example`,
      `${slug}.mcp.amba.host:99999`,
      `a b.mcp.amba.host`,
      `x.${slug}.mcp.amba.host.evil.example`,
      "mcp.amba.host",
      "-bad-.mcp.amba.host",
    ]) {
      const res = await apiJson("/mcp", { headers: { ...MCP_HEADERS, host }, json: toolsList });
      expect(res.status, `${host}: ${JSON.stringify(res.body)}`).toBe(200);
      expect(
        res.body.result.tools.map((t: { name: string }) => t.name),
        host,
      ).toContain("amba_developer_signup");
    }
  });
});

describe("the authorization server on every host the Worker answers (DESIGN: GET /.well-known/oauth-authorization-server)", () => {
  const ISSUER = "https://mcp.amba.dev"; // PUBLIC_BASE_URL

  it("serves the RFC 8414 metadata, registration and the token endpoint's OAuth errors off the issuer's own origin too", async () => {
    for (const origin of ["http://local", `https://${slug}.mcp.amba.host`, ISSUER]) {
      const metadata = await apiJson(`${origin}/.well-known/oauth-authorization-server`, { headers: IP });
      expect(metadata.status, `${origin}: ${JSON.stringify(metadata.body)}`).toBe(200);
      expect(metadata.body, origin).toMatchObject({
        issuer: ISSUER,
        authorization_endpoint: `${ISSUER}/authorize`,
        token_endpoint: `${ISSUER}/oauth/token`,
        registration_endpoint: `${ISSUER}/oauth/register`,
        code_challenge_methods_supported: ["S256"],
      });

      const registered = await apiJson(`${origin}/oauth/register`, {
        headers: IP,
        json: {
          redirect_uris: ["http://127.0.0.1:33418/callback"],
          client_name: "edge audit",
          token_endpoint_auth_method: "none",
        },
      });
      expect(registered.status, `${origin}: ${JSON.stringify(registered.body)}`).toBe(201);
      expect(registered.body.client_id, origin).toEqual(expect.any(String));

      const token = await apiJson(`${origin}/oauth/token`, {
        method: "POST",
        headers: { ...IP, "content-type": "application/x-www-form-urlencoded" },
        body: `grant_type=authorization_code&code=nope&client_id=${registered.body.client_id}`,
      });
      expect(token.status, `${origin}: ${JSON.stringify(token.body)}`).toBeGreaterThanOrEqual(400);
      expect(token.status, origin).toBeLessThan(500);
      expect(token.status, origin).not.toBe(404);
      expect(token.body, origin).toMatchObject({ error: expect.any(String) });
    }
  });
});

describe("metering a JSON-RPC batch (seed 004: successful calls count; failed calls don't)", () => {
  it("counts each successful tools/call of a batch once, and nothing else in it", async () => {
    const before = (await apiJson(admin("/billing"), { token, headers: IP })).body.usage.agent_tool_calls;
    const call = (id: number, name: string, args: Record<string, unknown>) => ({
      jsonrpc: "2.0",
      id,
      method: "tools/call",
      params: { name, arguments: args },
    });
    const batch = [
      call(1, "edge_audit_whoami", {}),
      call(2, "notes_insert", { body: "from a batch" }),
      call(3, "notes_insert", {}), // invalid: isError
      call(4, "notes_nope", {}), // unknown tool: -32602
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { jsonrpc: "2.0", id: 5, method: "ping" },
      { jsonrpc: "2.0", id: 6, method: "tools/list" },
    ];
    const res = await apiJson(`/app/${projectId}/mcp`, {
      token,
      headers: { ...MCP_HEADERS, "mcp-protocol-version": "2025-03-26" },
      json: batch,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.map((r: { id: number }) => r.id)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(res.body[0].result.isError).toBe(false);
    expect(res.body[1].result.isError).toBe(false);
    expect(res.body[2].result.isError).toBe(true);
    expect(res.body[3].error.code).toBe(-32602);

    const after = (await apiJson(admin("/billing"), { token, headers: IP })).body.usage.agent_tool_calls;
    expect(after - before).toBe(2);
  });
});
