/**
 * The authorization server attacked the way a pentester would: every request written by an
 * attacker — a malicious registered client, another tenant, anyone on the network. Complements
 * refusals.test.ts (audience binding, revocations, PKCE, code reuse, CSRF of the form), with what
 * that file and web-red.test.ts do not try: stolen refresh tokens replayed after a rotation, names
 * chosen by others (a registered client's, another tenant's app) on the consent page, an anonymous
 * caller registering clients from every address of its IPv6 /64, and a grant outliving the
 * principal it acts as.
 */

import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import {
  apiJson,
  signupDeveloper,
  signupUser,
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
  openAuthorizePage,
  pkce,
  postForm,
  REDIRECT_URI,
  rawToolsList,
  registerClient,
  type SignIn,
  setupApp,
  tokenRequest,
} from "./oauth-client.ts";

const refresh = (clientId: string, refreshToken: string) =>
  tokenRequest({ grant_type: "refresh_token", refresh_token: refreshToken, client_id: clientId });

describe("the authorization server under attack", () => {
  let dev: TestDeveloper;
  let alice: TestUser;
  let url: string;
  let aliceSignIn: SignIn;

  beforeAll(async () => {
    ({ dev, alice, url } = await setupApp());
    aliceSignIn = { mode: "end_user", email: alice.email, password: alice.password };
  });

  it("lets a rotated-out refresh token retry once, then takes its reuse for theft and revokes the grant", async () => {
    const { clientId, refresh_token: r1 } = await authorized(url, aliceSignIn);
    expect((await refresh(clientId, r1)).status).toBe(200);
    // The client's answer was lost in transit: it retries with the token it still has.
    const retried = await refresh(clientId, r1);
    expect(retried.status).toBe(200);
    expect((await rawToolsList(url, retried.body.access_token)).status).toBe(200);
    // A third use of r1 is no retry: one of its two holders is not the client.
    const replayed = await refresh(clientId, r1);
    expect(replayed.status).toBe(400);
    expect(replayed.body.error).toBe("invalid_grant");
    // Both lose what the grant issued.
    expect((await rawToolsList(url, retried.body.access_token)).status).toBe(401);
    expect((await refresh(clientId, retried.body.refresh_token)).body.error).toBe("invalid_grant");
  });

  it("revokes the grant when a refresh token older than the previous one comes back", async () => {
    const { clientId, refresh_token: r1 } = await authorized(url, aliceSignIn);
    const r2 = await refresh(clientId, r1);
    const r3 = await refresh(clientId, r2.body.refresh_token);
    expect(r3.status).toBe(200);
    const stolen = await refresh(clientId, r1);
    expect(stolen.status).toBe(400);
    expect(stolen.body.error).toBe("invalid_grant");
    expect((await rawToolsList(url, r3.body.access_token)).status).toBe(401);
    expect((await refresh(clientId, r3.body.refresh_token)).body.error).toBe("invalid_grant");
  });

  it("does not let a client that failed to authenticate revoke a grant by replaying its token", async () => {
    const { clientId, refresh_token: r1 } = await authorized(url, aliceSignIn);
    const r2 = await refresh(clientId, r1);
    const r3 = await refresh(clientId, r2.body.refresh_token);
    const unknownClient = await refresh("no-such-client", r1);
    expect(unknownClient.status).toBe(401);
    expect(unknownClient.body.error).toBe("invalid_client");
    expect((await rawToolsList(url, r3.body.access_token)).status).toBe(200);
  });

  it("shows a hostile client name and app name inert on the consent page: no bidi or control characters, bounded", async () => {
    const spoof = `Claude\u202egnp.exe\u0007\u2066<b>x</b>${"x".repeat(3000)}`;
    const registered = await call("/oauth/register", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        client_name: spoof,
        redirect_uris: [REDIRECT_URI],
        token_endpoint_auth_method: "none",
      }),
    });
    expect(registered.status).toBe(201);
    const { client_id } = (await registered.json()) as { client_id: string };
    const renamed = await apiJson(`/v1/admin/projects/${dev.projectId}`, {
      method: "PATCH",
      token: dev.token,
      json: { name: "Shop\u202eecnaniF" },
    });
    expect(renamed.status).toBe(200);
    const page = await openAuthorizePage(
      authorizeUrl({ client_id, code_challenge: (await pkce()).challenge, resource: url }),
    );
    expect(page.res.status).toBe(200);
    // Reordering and control characters are shown as their escapes, never acted on.
    expect(page.html).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/);
    expect(page.html).toContain("Claude\\u202egnp.exe\\u0007\\u2066&lt;b&gt;x&lt;/b&gt;");
    expect(page.html).toContain("Shop\\u202eecnaniF");
    // A name cannot push the page's own words (where the browser goes back to) out of view.
    expect(page.html).not.toContain("x".repeat(100));
    expect(page.html).toContain("127.0.0.1");
    // The grant keeps the name as shown.
    await codeFrom(await postForm(page.cookie, { tx: page.tx, action: "allow", ...aliceSignIn }));
    const listed = await apiJson(`/v1/admin/projects/${dev.projectId}/oauth/grants`, { token: dev.token });
    const grant = (listed.body.grants as { client_id: string; client_name: string }[]).find(
      (g) => g.client_id === client_id,
    );
    expect(grant?.client_name).toMatch(/^Claude\\u202egnp\.exe\\u0007\\u2066<b>x<\/b>x+…$/);
    expect(grant?.client_name.length).toBeLessThanOrEqual(100);
  });

  it("counts one IPv6 /64 as one address: rotating addresses in it does not multiply the registration budget", async () => {
    // AUTH_IP_RATE_LIMITER allows 60 a minute per address. 121 registrations from 121 addresses of
    // one /64: however the minute's boundary falls, one window holds at least 61 of them.
    const prefix = `2001:db8:${Array.from(crypto.getRandomValues(new Uint16Array(2)), (n) => n.toString(16)).join(":")}`;
    const register = (i: number) =>
      call("/oauth/register", {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "cf-connecting-ip": `${prefix}:0:0:${(i + 1).toString(16)}:1`,
        },
        body: JSON.stringify({ redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: "none" }),
      });
    const statuses: number[] = [];
    for (let wave = 0; wave < 11; wave++) {
      const answers = await Promise.all(Array.from({ length: 11 }, (_, i) => register(wave * 11 + i)));
      statuses.push(...answers.map((r) => r.status));
      await Promise.all(answers.map((r) => r.body?.cancel()));
    }
    expect(statuses.filter((s) => s !== 201 && s !== 429)).toEqual([]);
    expect(statuses).toContain(429);
  });

  it("held: grant type confusion and garbage at the token endpoint get an OAuth error body, never a 500", async () => {
    const clientId = await registerClient();
    const form = { "content-type": "application/x-www-form-urlencoded" };
    const cases: [RequestInit, number][] = [
      ...[
        "password",
        "client_credentials",
        "implicit",
        "urn:ietf:params:oauth:grant-type:token-exchange",
        "urn:ietf:params:oauth:grant-type:jwt-bearer",
        "urn:ietf:params:oauth:grant-type:device_code",
        "",
      ].map((grant_type): [RequestInit, number] => [
        {
          method: "POST",
          headers: form,
          body: new URLSearchParams({ grant_type, client_id: clientId, username: "a", password: "b" }),
        },
        400,
      ]),
      [{ method: "POST", headers: { "content-type": "application/json" }, body: "{}" }, 400],
      [{ method: "POST", body: "grant_type=refresh_token" }, 400],
      [{ method: "POST", headers: form, body: "%%%&&==\u0000" }, 400],
      [{ method: "POST", headers: { ...form, authorization: "Basic %%%" }, body: "grant_type=x" }, 401],
      [
        {
          method: "POST",
          headers: form,
          body: `grant_type=refresh_token&refresh_token=a:b:c&client_id=${clientId}`,
        },
        400,
      ],
      [{ method: "GET" }, 405],
      [{ method: "PUT", body: "x" }, 405],
    ];
    for (const [init, status] of cases) {
      const res = await call("/oauth/token", init);
      const what = `${init.method} ${String(init.body)}`;
      expect(res.status, what).toBe(status);
      expect(res.headers.get("cache-control"), what).toBe("no-store");
      expect(typeof ((await res.json()) as { error: unknown }).error, what).toBe("string");
    }
    const registration = await call("/oauth/register", { method: "GET" });
    expect(registration.status).toBe(405);
    expect(typeof ((await registration.json()) as { error: unknown }).error).toBe("string");
  });

  it("ends a grant at its next refresh once its developer token is revoked or its project deleted", async () => {
    const owner = await signupDeveloper();
    const user = await signupUser(owner.projectId, owner.clientKey);
    const appUrl = `${BASE}/app/${owner.projectId}/mcp`;
    const asDeveloper = await authorized(`${BASE}/mcp`, { mode: "developer", developer_token: owner.token });
    const asUser = await authorized(appUrl, { mode: "end_user", email: user.email, password: user.password });
    const live = await refresh(asDeveloper.clientId, asDeveloper.refresh_token);
    expect(live.status).toBe(200);
    // A paused app (or another auth_mode) is no end: it can be undone, and its endpoint refuses meanwhile.
    const config = `/v1/admin/projects/${owner.projectId}/app-mcp/config`;
    expect(
      (await apiJson(config, { method: "PATCH", token: owner.token, json: { enabled: false } })).status,
    ).toBe(200);
    const paused = await refresh(asUser.clientId, asUser.refresh_token);
    expect(paused.status).toBe(200);
    expect((await rawToolsList(appUrl, paused.body.access_token)).status).toBe(403);

    expect(
      (await apiJson(`/v1/admin/projects/${owner.projectId}`, { method: "DELETE", token: owner.token }))
        .status,
    ).toBe(200);
    const orphan = await refresh(asUser.clientId, paused.body.refresh_token);
    expect(orphan.status).toBe(400);
    expect(orphan.body.error).toBe("invalid_grant");

    await testDb().execute(
      sql`UPDATE developer_tokens SET revoked_at = now() WHERE developer_id = ${owner.developerId}`,
    );
    const revoked = await refresh(asDeveloper.clientId, live.body.refresh_token);
    expect(revoked.status).toBe(400);
    expect(revoked.body.error).toBe("invalid_grant");
    // The grant is gone, not only refused once: its latest refresh token is refused too.
    expect((await refresh(asDeveloper.clientId, live.body.refresh_token)).body.error_description).toMatch(
      /not found/i,
    );
  });
});
