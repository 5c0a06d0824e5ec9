/**
 * The authorization server and its sign-in page attacked once more, with what refusals.test.ts,
 * red-team.test.ts and web-red.test.ts do not try: redirect URI look-alikes (prefix, suffix, case,
 * encoding, userinfo, another loopback host), PKCE downgrades at the token endpoint, `resource`
 * spellings, tokens presented as the wrong kind, scope widening on refresh, two client
 * authentications at once, Client ID Metadata Documents that claim another identity, the sign-in
 * page on a tenant-named hostname, brute force on the page, and the page's headers and cookie.
 * One regression test per hole found (each failed before its fix), the rest as "held".
 */
import { beforeAll, describe, expect, it } from "vitest";
import { CIMD_CACHE_NAME } from "../../../src/oauth/cimd.ts";
import { apiJson, freshIp, type TestUser, withinOneRateLimitWindow } from "../helpers.ts";
import {
  authorized,
  authorizeUrl,
  BASE,
  call,
  codeFrom,
  openAuthorizePage,
  pkce,
  postForm,
  REDIRECT_URI,
  rawToolsList,
  registerClient,
  type SignIn,
  setupApp,
  signedInCode,
  tokenRequest,
} from "./oauth-client.ts";

const FORM = { "content-type": "application/x-www-form-urlencoded" };
const HTTPS_REDIRECT = "https://client.example/cb";

/** GET /authorize without following redirects: status, Location and the page. */
async function authorize(url: string, headers: Record<string, string> = {}) {
  const res = await call(url, { redirect: "manual", headers });
  return { status: res.status, location: res.headers.get("location"), html: await res.text(), res };
}

/** Put a Client ID Metadata Document for `clientId` in the provider's cache (no fetch happens). */
async function cacheDocument(clientId: string, document: Record<string, unknown>): Promise<void> {
  const cache = await caches.open(CIMD_CACHE_NAME);
  await cache.put(
    clientId,
    new Response(JSON.stringify(document), {
      headers: { "content-type": "application/json", "cache-control": "public, max-age=600" },
    }),
  );
}

describe("the authorization server, attacked again", () => {
  let url: string;
  let projectId: string;
  let devToken: string;
  let alice: TestUser;
  let bob: TestUser;
  let aliceSignIn: SignIn;
  let other: Awaited<ReturnType<typeof setupApp>>;

  beforeAll(async () => {
    const app = await setupApp();
    ({ url, alice, bob } = app);
    projectId = app.dev.projectId;
    devToken = app.dev.token;
    aliceSignIn = { mode: "end_user", email: alice.email, password: alice.password };
    other = await setupApp();
  });

  it("held: redirect URI look-alikes of a registered one are shown a page, never redirected to", async () => {
    const clientId = await registerClient([REDIRECT_URI, HTTPS_REDIRECT]);
    const { challenge } = await pkce();
    const base = { client_id: clientId, code_challenge: challenge, resource: url };
    for (const redirect_uri of [
      `${HTTPS_REDIRECT}/`,
      `${HTTPS_REDIRECT}x`,
      HTTPS_REDIRECT.slice(0, -1),
      `${HTTPS_REDIRECT}?next=https://evil.example`,
      `${HTTPS_REDIRECT}#x`,
      `${HTTPS_REDIRECT}%2F..%2F..%2Fevil`,
      "https://client.example:8443/cb",
      "https://client.example.evil.example/cb",
      "https://evil.example/client.example/cb",
      "https://client.example@evil.example/cb",
      "https://evil.example\\@client.example/cb",
      "https://CLIENT.EXAMPLE/CB",
      "https://client.example/%63b",
      "http://client.example/cb",
      // RFC 8252 §7.3: any port of the registered loopback host, nothing else about it.
      "http://localhost:33418/callback",
      "http://127.0.0.2:33418/callback",
      "https://127.0.0.1:33418/callback",
      "http://127.0.0.1:33418/callback/x",
      "http://127.0.0.1:33418/Callback",
      "http://127.0.0.1:33418/callback?x=1",
      "http://127.0.0.1:33418/callback#x",
      "http://evil.example@127.0.0.1:33418/callback",
      "http://127.0.0.1.evil.example:33418/callback",
      "javascript://127.0.0.1:33418/callback%0aalert(1)",
      "data:text/html,<script>alert(1)</script>",
      "",
    ]) {
      const res = await authorize(authorizeUrl({ ...base, redirect_uri }));
      expect(res.status, redirect_uri).toBe(400);
      expect(res.location, redirect_uri).toBeNull();
      expect(res.html, redirect_uri).not.toContain('name="password"');
    }
    // An unknown client, or a valid one with a malformed request, is no open redirector either.
    for (const params of [
      { client_id: "no-such-client", redirect_uri: "https://evil.example/cb" } as Record<string, string>,
      { client_id: "https://evil.example/cimd.json", redirect_uri: "https://evil.example/cb" },
      { response_type: "token" },
      { response_type: "code id_token" },
      { code_challenge_method: "S512" },
    ]) {
      const res = await authorize(authorizeUrl({ ...base, ...params }));
      expect(res.status, JSON.stringify(params)).toBe(400);
      expect(res.location, JSON.stringify(params)).toBeNull();
    }
  });

  it("held: PKCE downgrades at the token endpoint (no verifier, the challenge as verifier, another code's verifier)", async () => {
    const clientId = await registerClient();
    const first = await pkce();
    const second = await pkce();
    const codeFor = async (client: string, challenge: string) =>
      signedInCode({ client_id: client, code_challenge: challenge, resource: url }, aliceSignIn);
    // (A second code of the same client would end the first one's grant: another client's.)
    await codeFor(await registerClient(), second.challenge);
    const code1 = await codeFor(clientId, first.challenge);
    const exchange = { grant_type: "authorization_code", code: code1, client_id: clientId };
    for (const [fields, error] of [
      [exchange, "invalid_request"],
      [{ ...exchange, code_verifier: "" }, "invalid_request"],
      [{ ...exchange, code_verifier: first.challenge }, "invalid_grant"],
      [{ ...exchange, code_verifier: second.verifier }, "invalid_grant"],
      [{ ...exchange, code_verifier: `${first.verifier} ` }, "invalid_grant"],
      [{ ...exchange, code_verifier: first.verifier.toUpperCase() }, "invalid_grant"],
    ] as const) {
      const refused = await tokenRequest(fields);
      expect(refused.status, JSON.stringify(fields)).toBe(400);
      expect(refused.body.error, JSON.stringify(fields)).toBe(error);
      expect(refused.body.access_token).toBeUndefined();
    }
    // A challenge without its method is plain (RFC 7636 §4.3): refused like an explicit plain.
    const implicitPlain = await authorize(
      authorizeUrl({
        client_id: clientId,
        code_challenge: first.verifier,
        code_challenge_method: null,
        resource: url,
      }),
    );
    expect(implicitPlain.status).toBe(400);
    expect(implicitPlain.location).toBeNull();
    expect(implicitPlain.html).not.toContain('name="password"');
  });

  it("held: resource spellings: only the canonical one names an endpoint, and a token stays with it", async () => {
    const clientId = await registerClient();
    const { verifier, challenge } = await pkce();
    const upper = url.replace(projectId, projectId.toUpperCase()).replace("mcp.amba.dev", "MCP.amba.DEV");
    for (const resource of [
      // Only the canonical spelling (the one the endpoint's resource metadata gives) is taken.
      upper,
      url.replace("mcp.amba.dev", "mcp.amba.dev:443"),
      `${url}/`,
      url.replace(/\/mcp$/, "/MCP"),
      url.replace(/\/mcp$/, "/mcp/../../mcp"),
      url.replace("mcp.amba.dev", "mcp.amba.dev:8443"),
      url.replace("https:", "http:"),
      `${url}?x=1`,
      `${url}#x`,
      url.replace("https://", "https://user@"),
      url.replace(/\/mcp$/, "%2Fmcp"),
      `${BASE}/mcp/`,
      `${BASE}/app/${projectId}`,
      `${BASE}/app/../mcp`.replace("/app/..", "/app/x/.."),
      "https://x.mcp.amba.host:444/mcp",
      "https://a.b.mcp.amba.host/mcp",
      "https://-x.mcp.amba.host/mcp",
      "https://mcp.amba.host/mcp",
      "https://mcp.amba.dev.evil.example/mcp",
    ]) {
      const res = await authorize(authorizeUrl({ client_id: clientId, code_challenge: challenge, resource }));
      expect(res.status, resource).toBe(400);
      expect(res.location, resource).toBeNull();
    }
    // Two resources (RFC 8707 allows several; a grant here has one audience): refused, not split.
    const two = new URL(authorizeUrl({ client_id: clientId, code_challenge: challenge, resource: url }));
    two.searchParams.append("resource", other.url);
    expect((await authorize(two.toString())).status).toBe(400);

    const code = await signedInCode(
      { client_id: clientId, code_challenge: challenge, resource: url },
      aliceSignIn,
    );
    const tokens = await tokenRequest({
      grant_type: "authorization_code",
      code,
      code_verifier: verifier,
      client_id: clientId,
    });
    expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
    expect((await rawToolsList(url, tokens.body.access_token)).status).toBe(200);
    expect((await rawToolsList(other.url, tokens.body.access_token)).status).toBe(401);
    expect((await rawToolsList(`${BASE}/mcp`, tokens.body.access_token)).status).toBe(401);
    // At the token endpoint a spelling of another endpoint is no way out of the grant's audience.
    for (const resource of [other.url, `${url}/`, `${BASE}/mcp`, "https://x.mcp.amba.host/mcp"]) {
      const refreshed = await tokenRequest({
        grant_type: "refresh_token",
        refresh_token: tokens.body.refresh_token,
        client_id: clientId,
        resource,
      });
      expect(refreshed.status, resource).toBe(400);
      expect(refreshed.body.error, resource).toBe("invalid_target");
    }
  });

  it("held: a token presented as another kind, a scope widened on refresh, two client authentications", async () => {
    const clientId = await registerClient();
    const { verifier, challenge } = await pkce();
    const code = await signedInCode(
      { client_id: clientId, code_challenge: challenge, resource: url, scope: "read" },
      aliceSignIn,
    );
    const exchange = { grant_type: "authorization_code", code, client_id: clientId, code_verifier: verifier };
    // The code is no access token, before or after its exchange.
    expect((await rawToolsList(url, code)).status).toBe(401);
    // Credentials in the header and the body, or a parameter twice: refused without using the code.
    const basic = `Basic ${btoa(`${encodeURIComponent(clientId)}:`)}`;
    for (const [headers, body] of [
      [{ ...FORM, authorization: basic }, new URLSearchParams(exchange).toString()],
      [FORM, `${new URLSearchParams(exchange)}&client_id=${clientId}`],
      [FORM, `${new URLSearchParams(exchange)}&client_id=other`],
      [FORM, `${new URLSearchParams(exchange)}&code_verifier=${verifier}`],
      [{ "content-type": "application/json" }, JSON.stringify(exchange)],
      [{ "content-type": "text/plain" }, new URLSearchParams(exchange).toString()],
    ] as const) {
      const res = await call("/oauth/token", { method: "POST", headers, body });
      expect(res.status, body).toBe(400);
      expect(((await res.json()) as { access_token?: string }).access_token, body).toBeUndefined();
    }
    const issued = await tokenRequest(exchange);
    expect(issued.status, JSON.stringify(issued.body)).toBe(200);
    const { refresh_token } = issued.body as { refresh_token: string };
    expect((await rawToolsList(url, code)).status).toBe(401);
    expect((await rawToolsList(url, refresh_token)).status).toBe(401);
    // (An access token sent as a refresh token: the next test.)
    // A refresh cannot widen what the person allowed.
    const wider = await tokenRequest({
      grant_type: "refresh_token",
      refresh_token,
      client_id: clientId,
      scope: "read write admin",
    });
    expect(wider.status, JSON.stringify(wider.body)).toBe(200);
    expect(String(wider.body.scope ?? "").split(" ")).not.toContain("admin");
    expect(String(wider.body.scope ?? "").split(" ")).not.toContain("write");
    const other = await tokenRequest({
      grant_type: "refresh_token",
      refresh_token: wider.body.refresh_token,
      client_id: clientId,
      scope: "admin",
    });
    expect(other.status).toBe(400);
    expect(other.body.error).toBe("invalid_scope");
    // None of it ended the grant.
    expect((await rawToolsList(url, wider.body.access_token)).status).toBe(200);
  });

  it("ends no grant for a refresh token it never issued: an access token, or one made up from the grant's ids", async () => {
    // Reuse detection revokes a grant when one of its rotated-out refresh tokens comes back. A
    // public client's id is no secret, and a grant's subject and id are in its code, in every
    // access token and in the grant listings: neither an access token (an hour's worth, if stolen)
    // nor a string made up from them is one of its refresh tokens, and must not end a 30-day grant.
    const { clientId, access_token, refresh_token } = await authorized(url, aliceSignIn);
    const [subject, grantId] = access_token.split(":") as [string, string];
    const refresh = (token: string) =>
      tokenRequest({ grant_type: "refresh_token", refresh_token: token, client_id: clientId });
    const r2 = await refresh(refresh_token);
    expect(r2.status).toBe(200);
    for (const token of [
      access_token,
      r2.body.access_token as string,
      `${subject}:${grantId}:${"x".repeat(32)}`,
      `${subject}:${grantId}:${refresh_token.split(":")[2]}x`,
    ]) {
      const refused = await refresh(token);
      expect(refused.status, token).toBe(400);
      expect(refused.body.error, token).toBe("invalid_grant");
      expect(refused.body.error_description, token).not.toMatch(/reused/);
    }
    // Held: the same made-up strings as a code (the provider ends a grant for its own code only, RFC
    // 6749 §4.1.2) or revoked (RFC 7009: answered 200, nothing revoked).
    for (const token of [access_token, `${subject}:${grantId}:${"x".repeat(32)}`]) {
      const code = await tokenRequest({
        grant_type: "authorization_code",
        code: token,
        code_verifier: "v".repeat(43),
        client_id: clientId,
      });
      expect(code.body.error, token).toBe("invalid_grant");
      const revoked = await call("/oauth/token", {
        method: "POST",
        headers: FORM,
        body: new URLSearchParams({
          token: `${token}y`,
          token_type_hint: "refresh_token",
          client_id: clientId,
        }),
      });
      expect(revoked.status, token).toBe(200);
    }
    expect((await rawToolsList(url, r2.body.access_token)).status).toBe(200);
    const r3 = await refresh(r2.body.refresh_token);
    expect(r3.status, JSON.stringify(r3.body)).toBe(200);
    // A real one, rotated out twice, still ends it (the red-team.test.ts cases hold).
    const r4 = await refresh(r3.body.refresh_token);
    expect(r4.status).toBe(200);
    const replayed = await refresh(r2.body.refresh_token);
    expect(replayed.body.error_description).toMatch(/reused/);
    expect((await rawToolsList(url, r4.body.access_token)).status).toBe(401);
  });

  it("held: a client metadata document that names another client, or that is not its URL's, is refused", async () => {
    const { challenge } = await pkce();
    const docUrl = `https://evil.example/${crypto.randomUUID()}/client.json`;
    const registered = await registerClient();
    for (const claimed of [registered, "https://claude.ai/oauth/client.json", `${docUrl}?x`]) {
      const id = `https://evil.example/${crypto.randomUUID()}/client.json`;
      await cacheDocument(id, {
        client_id: claimed,
        client_name: "Claude",
        redirect_uris: [REDIRECT_URI],
        token_endpoint_auth_method: "none",
      });
      const res = await authorize(authorizeUrl({ client_id: id, code_challenge: challenge, resource: url }));
      expect(res.status, claimed).toBe(400);
      expect(res.location, claimed).toBeNull();
      expect(res.html, claimed).not.toContain('name="password"');
    }
    // A document that gives itself a secret, or a dangerous redirect URI: refused too.
    for (const extra of [
      { client_secret: "s3cret" },
      { redirect_uris: ["javascript:alert(1)"] },
      { client_name: "" },
    ]) {
      const id = `https://evil.example/${crypto.randomUUID()}/client.json`;
      await cacheDocument(id, {
        client_id: id,
        client_name: "Claude",
        redirect_uris: [REDIRECT_URI],
        token_endpoint_auth_method: "none",
        ...extra,
      });
      const res = await authorize(authorizeUrl({ client_id: id, code_challenge: challenge, resource: url }));
      expect(res.status, JSON.stringify(extra)).toBe(400);
    }
  });

  it("names the domain that publishes a client metadata document on the consent page, not only the name it claims", async () => {
    // Anyone can publish a document that calls itself "Claude" and lists a redirect URI on a
    // look-alike host: the page must say whose document it is (MCP security best practices).
    const id = `https://assistant-login.example/${crypto.randomUUID()}/client.json`;
    await cacheDocument(id, {
      client_id: id,
      client_name: "Claude",
      redirect_uris: ["https://claude.ai.assistant-login.example/callback"],
      token_endpoint_auth_method: "none",
    });
    const { challenge } = await pkce();
    const page = await openAuthorizePage(
      authorizeUrl({
        client_id: id,
        code_challenge: challenge,
        resource: url,
        redirect_uri: "https://claude.ai.assistant-login.example/callback",
      }),
    );
    expect(page.res.status).toBe(200);
    // The domain stands next to the name wherever the name is shown: title, heading, both forms.
    expect(page.html.split("Claude (assistant-login.example)").length - 1).toBe(4);
    expect(page.html).not.toMatch(/<strong>Claude<\/strong>/);
    expect(page.html).toContain("claude.ai.assistant-login.example");
    // The grant keeps the name as shown, domain included.
    await codeFrom(await postForm(page.cookie, { tx: page.tx, action: "allow", ...aliceSignIn }));
    const listed = await apiJson(`/v1/admin/projects/${projectId}/oauth/grants`, { token: devToken });
    const grant = (listed.body.grants as { client_id: string; client_name: string }[]).find(
      (g) => g.client_id === id,
    );
    expect(grant?.client_name).toBe("Claude (assistant-login.example)");
  });

  it("names where a registered client sends the person back next to its self-chosen name", async () => {
    // Registration is open: anyone can register "Claude" with a redirect URI on a host of theirs.
    // The host that receives the code is the one fact about such a client that is not its own
    // claim, so it stands next to the name, not only in the small print under the forms.
    const lookalike = "https://claude.ai.sign-in.example/callback";
    const clientId = await registerClient([lookalike]);
    const renamed = await call("/oauth/register", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        client_name: `Claude${" ".repeat(200)}`,
        redirect_uris: [lookalike],
        token_endpoint_auth_method: "none",
      }),
    });
    const named = ((await renamed.json()) as { client_id: string }).client_id;
    const { challenge } = await pkce();
    for (const id of [clientId, named]) {
      const page = await openAuthorizePage(
        authorizeUrl({ client_id: id, code_challenge: challenge, resource: url, redirect_uri: lookalike }),
      );
      expect(page.res.status).toBe(200);
      const name = id === named ? "Claude" : "Hand Client";
      expect(page.html.split(`${name} (claude.ai.sign-in.example)`).length - 1, name).toBe(4);
      expect(page.html, name).not.toContain(`<strong>${name}</strong>`);
      if (id !== named) continue;
      // The code goes back with this issuer's name (RFC 9207: no mix-up with another server's code).
      const back = new URL(
        (await postForm(page.cookie, { tx: page.tx, action: "allow", ...aliceSignIn })).headers.get(
          "location",
        ) ?? "",
      );
      expect(back.origin).toBe("https://claude.ai.sign-in.example");
      expect(back.searchParams.get("iss")).toBe(BASE);
    }
    // A loopback redirect (a desktop client's) names no host worth showing: the name stands alone.
    const desktop = await openAuthorizePage(
      authorizeUrl({ client_id: await registerClient(), code_challenge: challenge, resource: url }),
    );
    expect(desktop.html).toContain("<strong>Hand Client</strong>");
  });

  it("refuses a redirect URI on this server's own hosts: a client's code goes back to the client", async () => {
    // A client registered with a redirect URI on the issuer (or an app's hostname) would have the
    // page say "your browser goes back to mcp.amba.dev" — first-party to the person — and park the
    // code in a URL of ours: the query of another sign-in page, say, kept in its transaction.
    const { challenge } = await pkce();
    for (const redirect of [
      `${BASE}/authorize?client_id=x&redirect_uri=https://evil.example/cb&state=`,
      `${BASE}/callback`,
      "https://MCP.AMBA.DEV/cb",
      "https://any-app.mcp.amba.host/cb",
      "https://mcp.amba.host/cb",
      // A trailing dot names the same host (its fully qualified spelling), and a browser goes there.
      "https://mcp.amba.dev./cb",
      "https://any-app.mcp.amba.host./cb",
    ]) {
      const clientId = await registerClient([redirect]);
      const res = await authorize(
        authorizeUrl({
          client_id: clientId,
          code_challenge: challenge,
          resource: url,
          redirect_uri: redirect,
        }),
      );
      expect(res.status, redirect).toBe(400);
      expect(res.location, redirect).toBeNull();
      expect(res.html, redirect).not.toContain('name="password"');
    }
    // A look-alike that is not ours is the client's to pick (and the page names it).
    const elsewhere = "https://mcp.amba.dev.client.example/cb";
    const page = await authorize(
      authorizeUrl({
        client_id: await registerClient([elsewhere]),
        code_challenge: challenge,
        resource: url,
        redirect_uri: elsewhere,
      }),
    );
    expect(page.status).toBe(200);
    expect(page.html).toContain("Hand Client (mcp.amba.dev.client.example)");
  });

  it("held: no sign-in page on an app's hostname, whatever endpoint it names", async () => {
    // The slug is the tenant's choice: `amba-login.mcp.amba.host` must not ask for a developer
    // token for the platform, nor for another tenant's accounts, under a name a tenant picked. The
    // provider answers authorization requests at the issuer's /authorize only.
    const slug = `login-${crypto.randomUUID().slice(0, 8)}`;
    const configured = await apiJson(`/v1/admin/projects/${projectId}/app-mcp/config`, {
      method: "PATCH",
      token: devToken,
      json: { slug },
    });
    expect(configured.status).toBe(200);
    const host = `https://${slug}.mcp.amba.host`;
    const clientId = await registerClient();
    const { challenge } = await pkce();
    const request = (resource: string) =>
      authorizeUrl({ client_id: clientId, code_challenge: challenge, resource });
    for (const resource of [`${BASE}/mcp`, other.url, url, `${host}/mcp`]) {
      const res = await authorize(request(resource).replace(BASE, host));
      expect(res.status, resource).toBe(400);
      expect(res.location, resource).toBeNull();
      expect(res.html, resource).not.toContain('name="developer_token"');
      expect(res.html, resource).not.toContain('name="password"');
    }
    // The issuer's page serves the hostname endpoint.
    expect((await authorize(request(`${host}/mcp`))).status).toBe(200);
  });

  it("held: password guessing on the sign-in page is bounded per account, whatever the address", async () => {
    await withinOneRateLimitWindow(60, 30_000);
    const clientId = await registerClient();
    const { challenge } = await pkce();
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) {
      const ip = freshIp();
      const page = await openAuthorizePage(
        authorizeUrl({ client_id: clientId, code_challenge: challenge, resource: url }),
      );
      const res = await call("/authorize", {
        method: "POST",
        headers: { ...FORM, cookie: page.cookie, "cf-connecting-ip": ip },
        body: new URLSearchParams({
          tx: page.tx,
          action: "allow",
          mode: "end_user",
          email: bob.email.toUpperCase(),
          password: `guess-${i}-password`,
        }),
        redirect: "manual",
      });
      statuses.push(res.status);
      const html = await res.text();
      expect(res.headers.get("location")).toBeNull();
      if (res.status === 429) expect(html).toMatch(/sign-ins with this email/);
    }
    expect(statuses.filter((s) => s !== 401 && s !== 429)).toEqual([]);
    expect(statuses).toContain(429);
    // The right password is refused too until the window passes: guessing learns nothing.
    const page = await openAuthorizePage(
      authorizeUrl({ client_id: clientId, code_challenge: challenge, resource: url }),
    );
    const right = await postForm(page.cookie, {
      tx: page.tx,
      action: "allow",
      mode: "end_user",
      email: bob.email,
      password: bob.password,
    });
    expect(right.status).toBe(429);
  }, 90_000);

  it("cannot be framed, keeps its transaction in a __Host- cookie, and refusal pages carry the same headers", async () => {
    const clientId = await registerClient();
    const { challenge } = await pkce();
    const page = await openAuthorizePage(
      authorizeUrl({ client_id: clientId, code_challenge: challenge, resource: url }),
    );
    const refusal = await call(authorizeUrl({ client_id: "nope", code_challenge: challenge, resource: url }));
    const expired = await postForm("", { tx: "x", action: "allow", ...aliceSignIn });
    for (const res of [page.res, refusal, expired]) {
      expect(res.headers.get("x-frame-options")).toBe("DENY");
      expect(res.headers.get("content-security-policy")).toMatch(/frame-ancestors 'none'/);
      expect(res.headers.get("content-security-policy")).toMatch(/default-src 'none'/);
      expect(res.headers.get("cache-control")).toBe("no-store");
      expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    }
    // `__Host-`: only this origin, over https, can set it, so no sibling subdomain or plain-http
    // attacker can plant one (a form whose transaction the browser was not given stays refused).
    const cookie = page.res.headers.get("set-cookie") ?? "";
    expect(cookie).toMatch(/^__Host-amba_oauth_tx=/);
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/Secure/i);
    expect(cookie).toMatch(/SameSite=Lax/i);
    expect(cookie).toMatch(/Path=\/(;|$)/i);
    expect(cookie).not.toMatch(/Domain=/i);
    // A cookie without the prefix (as a sibling subdomain could plant it) is no transaction.
    const planted = await postForm(`amba_oauth_tx=${page.tx}`, {
      tx: page.tx,
      action: "allow",
      ...aliceSignIn,
    });
    expect(planted.status).toBe(403);
    // A cross-site POST carries no cookie (SameSite): it is refused before anything is checked.
    const crossSite = await call("/authorize", {
      method: "POST",
      headers: { ...FORM, origin: "https://evil.example" },
      body: new URLSearchParams({ tx: page.tx, action: "allow", ...aliceSignIn }),
      redirect: "manual",
    });
    expect(crossSite.status).toBe(403);
    // The grant is still one the person can make.
    await codeFrom(await postForm(page.cookie, { tx: page.tx, action: "allow", ...aliceSignIn }));
    expect((await authorized(url, aliceSignIn)).access_token).toBeTruthy();
  });
});
