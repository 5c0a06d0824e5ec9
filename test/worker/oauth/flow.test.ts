/**
 * MCP authorization end to end through the official SDK client's OAuth support: the 401 challenge,
 * metadata discovery, dynamic registration, the sign-in page, code → token, then the app MCP as
 * that end user (same surface, policy, ownership and metering as X-Api-Key + session).
 */
import { beforeAll, describe, expect, it, vi } from "vitest";
import { connectClient } from "../app-mcp/mcp-client.ts";
import { apiJson, endUserHeaders, type TestDeveloper, type TestUser } from "../helpers.ts";
import { BASE, call, connectWithOAuth, rawToolsList, resultJson, setupApp } from "./oauth-client.ts";

describe("MCP authorization (OAuth 2.1) on the app MCP", () => {
  let dev: TestDeveloper;
  let alice: TestUser;
  let bob: TestUser;
  let url: string;

  beforeAll(async () => {
    ({ dev, alice, bob, url } = await setupApp());
  });

  it("answers a credential-less request with 401 and a challenge naming the resource metadata", async () => {
    const res = await call(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(res.status).toBe(401);
    const metadataUrl = `${BASE}/.well-known/oauth-protected-resource/app/${dev.projectId}/mcp`;
    expect(res.headers.get("www-authenticate")).toBe(
      `Bearer realm="amba", resource_metadata="${metadataUrl}"`,
    );

    const prm = await call(metadataUrl);
    expect(await prm.json()).toEqual({
      resource: url,
      authorization_servers: [BASE],
      bearer_methods_supported: ["header"],
      resource_name: "Amba app MCP",
    });
    const preflight = await call(metadataUrl, {
      method: "OPTIONS",
      headers: {
        origin: "https://app.example.com",
        "access-control-request-headers": "mcp-protocol-version",
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-headers")).toContain("mcp-protocol-version");
    const platformPrm = await (await call("/.well-known/oauth-protected-resource/mcp")).json();
    expect(platformPrm).toMatchObject({ resource: `${BASE}/mcp`, authorization_servers: [BASE] });
    const as = (await (await call("/.well-known/oauth-authorization-server")).json()) as Record<
      string,
      unknown
    >;
    expect(as).toMatchObject({
      issuer: BASE,
      authorization_endpoint: `${BASE}/authorize`,
      token_endpoint: `${BASE}/oauth/token`,
      registration_endpoint: `${BASE}/oauth/register`,
      code_challenge_methods_supported: ["S256"],
      // global_fetch_strictly_public is on (wrangler.toml), so Client ID Metadata Documents are too.
      client_id_metadata_document_supported: true,
    });
  });

  it("signs an end user in through the SDK client: their surface, their rows, metered like headers", async () => {
    const { client } = await connectWithOAuth(url, {
      mode: "end_user",
      email: alice.email,
      password: alice.password,
    });
    const viaHeaders = await connectClient(url, endUserHeaders(dev.clientKey, alice.sessionToken));
    const expected = (await viaHeaders.listTools()).tools.map((t) => t.name);
    await viaHeaders.close();
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(expected);
    expect(expected).toContain("recipes_insert");

    const before = (await apiJson(`/v1/admin/projects/${dev.projectId}/billing`, { token: dev.token })).body;
    const whoami = resultJson(await client.callTool({ name: "my_first_project_whoami", arguments: {} }));
    expect(whoami).toMatchObject({ scope: "end_user" });
    expect(JSON.stringify(whoami)).toContain(alice.userId);

    const inserted = resultJson(
      await client.callTool({ name: "recipes_insert", arguments: { title: "Alice's soup", calories: 120 } }),
    );
    expect(inserted).toMatchObject({ title: "Alice's soup", owner_id: alice.userId });
    // Metering is batched per isolate and written after the response (src/usage/metering.ts).
    await vi.waitFor(async () => {
      const after = (await apiJson(`/v1/admin/projects/${dev.projectId}/billing`, { token: dev.token })).body;
      expect(after.usage.agent_tool_calls).toBe(before.usage.agent_tool_calls + 2);
    });
    await client.close();

    const asBob = await connectWithOAuth(url, { mode: "end_user", email: bob.email, password: bob.password });
    const bobs = resultJson(await asBob.client.callTool({ name: "recipes_list", arguments: {} }));
    expect(bobs.rows).toEqual([]);
    const got = await asBob.client.callTool({ name: "recipes_get", arguments: { id: inserted.id } });
    expect(got.isError).toBe(true);
    await asBob.client.close();
  });

  it("keeps header credentials working next to OAuth", async () => {
    const viaDeveloper = await connectClient(url, { authorization: `Bearer ${dev.token}` });
    expect((await viaDeveloper.listTools()).tools.length).toBeGreaterThan(2);
    await viaDeveloper.close();
    const res = await call(url, {
      method: "POST",
      headers: {
        authorization: "Bearer amba_dev_not_a_token",
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toContain('error="invalid_token"');
    expect(res.headers.get("www-authenticate")).toContain("resource_metadata=");
  });

  it("refreshes: a refreshed access token works, the old refresh token is rotated", async () => {
    const { client, provider } = await connectWithOAuth(url, {
      mode: "end_user",
      email: alice.email,
      password: alice.password,
    });
    await client.close();
    const tokens = provider.saved!;
    expect(tokens.refresh_token).toEqual(expect.any(String));
    expect(tokens.expires_in).toBeLessThanOrEqual(3600);
    const refreshed = await call("/oauth/token", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "refresh_token",
        refresh_token: tokens.refresh_token!,
        client_id: (provider.client as { client_id: string }).client_id,
      }),
    });
    expect(refreshed.status).toBe(200);
    const body = (await refreshed.json()) as { access_token: string; refresh_token: string };
    expect(body.refresh_token).not.toBe(tokens.refresh_token);
    expect((await rawToolsList(url, body.access_token)).status).toBe(200);
  });
});
