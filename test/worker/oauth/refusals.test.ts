/**
 * MCP authorization: what is refused. Tokens bound to one endpoint, expiry and every kind of
 * revocation, PKCE, code reuse, redirect URIs, resources, auth modes, and the sign-in form's
 * CSRF binding. The protocol steps are driven by hand here (same Worker, same KV).
 */
import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { connectClient } from "../app-mcp/mcp-client.ts";
import {
  apiJson,
  endUserHeaders,
  mcpPostHeaders,
  signupDeveloper,
  type TestDeveloper,
  type TestUser,
  testDb,
} from "../helpers.ts";
import {
  authorized,
  authorizeUrl,
  BASE,
  call,
  codeFrom,
  connectWithOAuth,
  listedGrantId,
  openAuthorizePage,
  pkce,
  postForm,
  rawToolsList,
  registerClient,
  resultJson,
  type SignIn,
  setupApp,
  signedInCode,
  submitSignIn,
  tokenRequest,
} from "./oauth-client.ts";

/** Sign in on the page for `resource` and exchange the code, naming the redirect URI and resource again. */
const tokensFor = (resource: string, signIn: SignIn) =>
  authorized(resource, signIn, undefined, { redirect_uri: "http://127.0.0.1:33418/callback", resource });

/** A JSON-RPC tools/call by hand with a Bearer. */
const rawToolCall = (url: string, token: string, name: string, args: Record<string, unknown> = {}) =>
  call(url, {
    method: "POST",
    headers: mcpPostHeaders(token),
    body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name, arguments: args } }),
  });

const configure = (dev: TestDeveloper, json: unknown) =>
  apiJson(`/v1/admin/projects/${dev.projectId}/app-mcp/config`, { method: "PATCH", token: dev.token, json });

describe("MCP authorization refusals", () => {
  let dev: TestDeveloper;
  let alice: TestUser;
  let bob: TestUser;
  let url: string;
  let other: { dev: TestDeveloper; url: string };
  let aliceSignIn: SignIn;

  beforeAll(async () => {
    ({ dev, alice, bob, url } = await setupApp());
    const otherDev = await signupDeveloper();
    other = { dev: otherDev, url: `${BASE}/app/${otherDev.projectId}/mcp` };
    aliceSignIn = { mode: "end_user", email: alice.email, password: alice.password };
  });

  it("binds a token to one endpoint: never app B's, the platform's or the app's hostname endpoint", async () => {
    const { access_token } = await tokensFor(url, aliceSignIn);
    expect((await rawToolsList(url, access_token)).status).toBe(200);
    const onB = await rawToolsList(other.url, access_token);
    expect(onB.status).toBe(401);
    expect(onB.headers.get("www-authenticate")).toContain(
      `resource_metadata="${BASE}/.well-known/oauth-protected-resource/app/${other.dev.projectId}/mcp"`,
    );
    const onPlatform = await rawToolCall(`${BASE}/mcp`, access_token, "amba_whoami");
    expect(onPlatform.status).toBe(401);
    expect(onPlatform.headers.get("www-authenticate")).toContain(
      `resource_metadata="${BASE}/.well-known/oauth-protected-resource/mcp"`,
    );
    const slug = `oauth-${crypto.randomUUID().slice(0, 8)}`;
    expect((await configure(dev, { slug })).status).toBe(200);
    expect((await rawToolsList(`https://${slug}.mcp.amba.host/mcp`, access_token)).status).toBe(401);
  });

  it("keeps a hostname grant with its project when the hostname moves to another project", async () => {
    const slug = `move-${crypto.randomUUID().slice(0, 8)}`;
    const hostUrl = `https://${slug}.mcp.amba.host/mcp`;
    const second = await apiJson("/v1/admin/projects", { token: other.dev.token, json: { name: "Second" } });
    expect(second.status).toBe(201);
    expect((await configure(other.dev, { slug })).status).toBe(200);
    const { access_token } = await tokensFor(hostUrl, {
      mode: "developer",
      developer_token: other.dev.token,
    });
    expect((await rawToolsList(hostUrl, access_token)).status).toBe(200);

    expect((await configure(other.dev, { slug: null })).status).toBe(200);
    // Past the released slug's 30-day cooldown (test/worker/app-mcp-admin/slug-cooldown.test.ts).
    await testDb().execute(
      sql`UPDATE released_slugs SET released_at = now() - interval '31 days' WHERE slug = ${slug}`,
    );
    const moved = await apiJson(`/v1/admin/projects/${second.body.id}/app-mcp/config`, {
      method: "PATCH",
      token: other.dev.token,
      json: { slug },
    });
    expect(moved.status).toBe(200);
    expect((await rawToolsList(hostUrl, access_token)).status).toBe(401);
  });

  it("refuses an expired access token", async () => {
    const { access_token } = await tokensFor(url, aliceSignIn);
    const [subject, grantId] = access_token.split(":");
    const { keys } = await env.OAUTH_KV.list({ prefix: `token:${subject}:${grantId}:` });
    expect(keys.length).toBeGreaterThan(0);
    for (const { name } of keys) {
      const record = await env.OAUTH_KV.get<Record<string, unknown>>(name, { type: "json" });
      await env.OAUTH_KV.put(
        name,
        JSON.stringify({ ...record, expiresAt: Math.floor(Date.now() / 1000) - 60 }),
      );
    }
    expect((await rawToolsList(url, access_token)).status).toBe(401);
  });

  it("refuses a token revoked by its client (RFC 7009)", async () => {
    const clientId = await registerClient();
    const { verifier, challenge } = await pkce();
    const code = await signedInCode(
      { client_id: clientId, code_challenge: challenge, resource: url },
      aliceSignIn,
    );
    const { body } = await tokenRequest({
      grant_type: "authorization_code",
      code,
      code_verifier: verifier,
      client_id: clientId,
    });
    expect((await rawToolsList(url, body.access_token)).status).toBe(200);
    const revoked = await call("/oauth/token", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token: body.access_token, client_id: clientId }),
    });
    expect(revoked.status).toBe(200);
    expect((await rawToolsList(url, body.access_token)).status).toBe(401);
  });

  it("lets the developer list and revoke the project's grants (REST and amba_oauth_grants_*)", async () => {
    const { access_token, refresh_token } = await tokensFor(url, aliceSignIn);
    const grantId = listedGrantId(access_token);
    const admin = `/v1/admin/projects/${dev.projectId}/oauth/grants`;
    const listed = await apiJson(admin, { token: dev.token });
    expect(listed.status).toBe(200);
    expect(listed.body.grants).toContainEqual({
      id: grantId,
      client_id: expect.any(String),
      client_name: "Hand Client",
      scope: "end_user",
      principal_id: alice.userId,
      email: alice.email,
      resource: url,
      created_at: expect.any(String),
      expires_at: expect.any(String),
    });
    expect((await apiJson(admin, { token: other.dev.token })).status).toBe(404);

    const platform = await connectClient(`${BASE}/mcp`, { authorization: `Bearer ${dev.token}` });
    const viaTool = resultJson(
      await platform.callTool({ name: "amba_oauth_grants_list", arguments: { project_id: dev.projectId } }),
    );
    expect(viaTool.grants.map((g: { id: string }) => g.id)).toContain(grantId);
    const revoked = resultJson(
      await platform.callTool({
        name: "amba_oauth_grants_revoke",
        arguments: { project_id: dev.projectId, grant_id: grantId },
      }),
    );
    expect(revoked).toEqual({ id: grantId, revoked: true });
    await platform.close();

    expect((await rawToolsList(url, access_token)).status).toBe(401);
    const refresh = await tokenRequest({
      grant_type: "refresh_token",
      refresh_token,
      client_id: listed.body.grants[0].client_id,
    });
    expect(refresh.status).toBe(400);
    expect((await apiJson(`${admin}/${grantId}`, { method: "DELETE", token: dev.token })).status).toBe(404);
  });

  it("lets an end user list and revoke their own grants", async () => {
    const bobSignIn: SignIn = { mode: "end_user", email: bob.email, password: bob.password };
    const { access_token } = await tokensFor(url, bobSignIn);
    const grantId = listedGrantId(access_token);
    const headers = endUserHeaders(dev.clientKey, bob.sessionToken);
    const mine = await apiJson("/v1/auth/oauth/grants", { headers });
    expect(mine.body.grants.map((g: { id: string }) => g.id)).toEqual([grantId]);
    const aliceView = await apiJson("/v1/auth/oauth/grants", {
      headers: endUserHeaders(dev.clientKey, alice.sessionToken),
    });
    expect(aliceView.body.grants.map((g: { id: string }) => g.id)).not.toContain(grantId);
    expect(
      (
        await apiJson(`/v1/auth/oauth/grants/${grantId}`, {
          method: "DELETE",
          headers: endUserHeaders(dev.clientKey, alice.sessionToken),
        })
      ).status,
    ).toBe(404);
    const res = await apiJson(`/v1/auth/oauth/grants/${grantId}`, { method: "DELETE", headers });
    expect(res.body).toEqual({ id: grantId, revoked: true });
    expect((await rawToolsList(url, access_token)).status).toBe(401);
  });

  it("refuses a wrong PKCE verifier and a reused code (which also revokes what the code gave)", async () => {
    const clientId = await registerClient();
    const first = await pkce();
    const code1 = await signedInCode(
      { client_id: clientId, code_challenge: first.challenge, resource: url },
      aliceSignIn,
    );
    const wrong = await tokenRequest({
      grant_type: "authorization_code",
      code: code1,
      code_verifier: (await pkce()).verifier,
      client_id: clientId,
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toBe("invalid_grant");

    const second = await pkce();
    const code2 = await signedInCode(
      { client_id: clientId, code_challenge: second.challenge, resource: url },
      aliceSignIn,
    );
    const exchange = {
      grant_type: "authorization_code",
      code: code2,
      code_verifier: second.verifier,
      client_id: clientId,
    };
    const ok = await tokenRequest(exchange);
    expect(ok.status).toBe(200);
    const replay = await tokenRequest(exchange);
    expect(replay.status).toBe(400);
    expect(replay.body.error).toBe("invalid_grant");
    expect((await rawToolsList(url, ok.body.access_token)).status).toBe(401);
  });

  it("refuses PKCE plain and a missing challenge", async () => {
    const clientId = await registerClient();
    for (const params of [
      { code_challenge: "a".repeat(43), code_challenge_method: "plain" },
      { code_challenge: null, code_challenge_method: null },
    ]) {
      const res = await call(authorizeUrl({ client_id: clientId, resource: url, ...params }), {
        redirect: "manual",
      });
      const location = res.headers.get("location");
      if (location) expect(new URL(location).searchParams.get("error")).toBe("invalid_request");
      else expect(res.status).toBe(400);
      expect(await res.text()).not.toContain('name="password"');
    }
  });

  it("never redirects to an unregistered redirect URI, and refuses dangerous ones at registration", async () => {
    const clientId = await registerClient();
    const { challenge } = await pkce();
    const res = await call(
      authorizeUrl({
        client_id: clientId,
        code_challenge: challenge,
        resource: url,
        redirect_uri: "https://evil.example/cb",
      }),
      { redirect: "manual" },
    );
    expect(res.status).toBe(400);
    expect(res.headers.get("location")).toBeNull();
    expect(await res.text()).toContain("This sign-in request is not valid");
    await expect(registerClient(["javascript:alert(1)"])).rejects.toThrow(/registration 400/);
  });

  it("refuses a resource that is not one of our endpoints, or one the code was not issued for", async () => {
    const clientId = await registerClient();
    const { verifier, challenge } = await pkce();
    const unknown = await call(
      authorizeUrl({ client_id: clientId, code_challenge: challenge, resource: "https://evil.example/mcp" }),
    );
    expect(unknown.status).toBe(400);
    expect(await unknown.text()).toContain("Unknown MCP endpoint");

    // Alice is no user of app B: its sign-in page does not know her.
    const onB = await openAuthorizePage(
      authorizeUrl({ client_id: clientId, code_challenge: challenge, resource: other.url }),
    );
    const wrongApp = await postForm(onB.cookie, { tx: onB.tx, action: "allow", ...aliceSignIn });
    expect(wrongApp.status).toBe(401);
    expect(await wrongApp.text()).toContain("Invalid email or password.");

    const code = await signedInCode(
      { client_id: clientId, code_challenge: challenge, resource: url },
      aliceSignIn,
    );
    const retarget = await tokenRequest({
      grant_type: "authorization_code",
      code,
      code_verifier: verifier,
      client_id: clientId,
      resource: other.url,
    });
    expect(retarget.status).toBe(400);
    expect(retarget.body.error).toBe("invalid_target");
  });

  it("binds the sign-in form to the browser and uses it once (CSRF)", async () => {
    const clientId = await registerClient();
    const { challenge } = await pkce();
    const target = authorizeUrl({ client_id: clientId, code_challenge: challenge, resource: url });
    const page = await openAuthorizePage(target);
    expect(page.res.headers.get("x-frame-options")).toBe("DENY");
    expect(page.res.headers.get("set-cookie")).toMatch(/HttpOnly/i);
    const noCookie = await postForm("", { tx: page.tx, action: "allow", ...aliceSignIn });
    expect(noCookie.status).toBe(403);
    const another = await openAuthorizePage(target);
    const crossed = await postForm(another.cookie, { tx: page.tx, action: "allow", ...aliceSignIn });
    expect(crossed.status).toBe(403);

    const badPassword = await postForm(page.cookie, {
      tx: page.tx,
      action: "allow",
      ...aliceSignIn,
      password: "wrong password",
    });
    expect(badPassword.status).toBe(401);
    expect(await badPassword.text()).toMatch(/role="alert">Invalid email or password\./);
    const ok = await postForm(page.cookie, { tx: page.tx, action: "allow", ...aliceSignIn });
    await codeFrom(ok);
    expect((await postForm(page.cookie, { tx: page.tx, action: "allow", ...aliceSignIn })).status).toBe(403);
  });

  it("sends Deny back to the client as access_denied with its state", async () => {
    const clientId = await registerClient();
    const { challenge } = await pkce();
    const res = await submitSignIn(
      authorizeUrl({ client_id: clientId, code_challenge: challenge, resource: url }),
      aliceSignIn,
      "deny",
    );
    expect(res.status).toBe(302);
    const location = new URL(res.headers.get("location")!);
    expect(location.origin + location.pathname).toBe("http://127.0.0.1:33418/callback");
    expect(location.searchParams.get("error")).toBe("access_denied");
    expect(location.searchParams.get("state")).toBe("st4te");
    expect(location.searchParams.get("code")).toBeNull();
  });

  it("respects auth_mode: developer_only refuses app accounts with a clear page, client_only refuses developers", async () => {
    const app = await setupApp();
    const alone: SignIn = { mode: "end_user", email: app.alice.email, password: app.alice.password };
    expect((await configure(app.dev, { auth_mode: "developer_only" })).status).toBe(200);
    const clientId = await registerClient();
    const { verifier, challenge } = await pkce();
    const target = authorizeUrl({ client_id: clientId, code_challenge: challenge, resource: app.url });
    const page = await openAuthorizePage(target);
    expect(page.html).toContain("accepts only its developer");
    expect(page.html).not.toContain('name="password"');
    const refused = await postForm(page.cookie, { tx: page.tx, action: "allow", ...alone });
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain("auth mode developer_only");

    const asDeveloper = await postForm(page.cookie, {
      tx: page.tx,
      action: "allow",
      mode: "developer",
      developer_token: app.dev.token,
    });
    const code = await codeFrom(asDeveloper);
    const { body } = await tokenRequest({
      grant_type: "authorization_code",
      code,
      code_verifier: verifier,
      client_id: clientId,
    });
    const whoami = await rawToolCall(app.url, body.access_token, "my_first_project_whoami");
    expect(whoami.status).toBe(200);
    expect(JSON.stringify(await whoami.json())).toContain("developer");

    expect((await configure(app.dev, { auth_mode: "client_only" })).status).toBe(200);
    const devPage = await openAuthorizePage(target);
    expect(devPage.html).not.toContain('name="developer_token"');
    const devRefused = await postForm(devPage.cookie, {
      tx: devPage.tx,
      action: "allow",
      mode: "developer",
      developer_token: app.dev.token,
    });
    expect(devRefused.status).toBe(403);
    // The developer's OAuth token now meets the auth mode like a header token would.
    expect((await rawToolsList(app.url, body.access_token)).status).toBe(403);
  });

  it("authorizes a developer on the platform MCP with their developer token, and only there", async () => {
    const platformUrl = `${BASE}/mcp`;
    const bad = await openAuthorizePage(
      authorizeUrl({
        client_id: await registerClient(),
        code_challenge: (await pkce()).challenge,
        resource: platformUrl,
      }),
    );
    expect(bad.html).not.toContain('name="password"');
    const wrongToken = await postForm(bad.cookie, {
      tx: bad.tx,
      action: "allow",
      mode: "developer",
      developer_token: other.dev.token.slice(0, -2),
    });
    expect(wrongToken.status).toBe(401);

    const { access_token } = await tokensFor(platformUrl, { mode: "developer", developer_token: dev.token });
    const listed = await rawToolCall(platformUrl, access_token, "amba_projects_list");
    expect(listed.status).toBe(200);
    const text = JSON.stringify(await listed.json());
    expect(text).toContain(dev.projectId);
    const exposure = await rawToolCall(platformUrl, access_token, "amba_app_mcp_get_exposure", {
      project_id: dev.projectId,
    });
    expect(JSON.stringify(await exposure.json())).toContain("recipes");
    const foreign = await rawToolCall(platformUrl, access_token, "amba_app_mcp_get_exposure", {
      project_id: other.dev.projectId,
    });
    expect(JSON.stringify(await foreign.json())).toContain("project not found");
    expect((await rawToolsList(url, access_token)).status).toBe(401);
    // The grant's token is the connection's `current` one; no token is minted through a grant.
    const tokens = await rawToolCall(platformUrl, access_token, "amba_tokens_list");
    expect(JSON.stringify(await tokens.json())).toContain('\\"current\\":true');
    const minted = await rawToolCall(platformUrl, access_token, "amba_tokens_create");
    const mintedText = JSON.stringify(await minted.json());
    expect(mintedText).toContain("forbidden");
    expect(mintedText).not.toContain("amba_dev_");
  });

  it("connects through the hostname endpoint with its own resource metadata", async () => {
    const app = await setupApp();
    const slug = `oauth-${crypto.randomUUID().slice(0, 8)}`;
    expect((await configure(app.dev, { slug })).status).toBe(200);
    const hostUrl = `https://${slug}.mcp.amba.host/mcp`;
    const prm = await call(`https://${slug}.mcp.amba.host/.well-known/oauth-protected-resource/mcp`);
    expect(await prm.json()).toMatchObject({ resource: hostUrl, authorization_servers: [BASE] });
    const { client } = await connectWithOAuth(hostUrl, {
      mode: "end_user",
      email: app.alice.email,
      password: app.alice.password,
    });
    const inserted = resultJson(
      await client.callTool({ name: "recipes_insert", arguments: { title: "Host soup" } }),
    );
    expect(inserted.owner_id).toBe(app.alice.userId);
    await client.close();
  });
});
