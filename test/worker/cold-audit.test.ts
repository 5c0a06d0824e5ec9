/**
 * Red-team pass over the cold surfaces (OAuth server and sign-in page, console, admin REST, platform
 * MCP), every request written by an attacker. One regression test per finding (each failed before
 * its fix) plus cheap checks of what held:
 * - the control plane had no per-developer rate limit: one developer's loop over the admin API,
 *   the platform MCP (a JSON-RPC batch is 100 calls) or the console could keep the shared
 *   database busy without bound;
 * - `/authorize` redirected a malformed request (plain PKCE, no PKCE, another response type) to the
 *   redirect URI of whoever registered the client (registration is open): an open redirector;
 * - a console cookie or sign-in token with a control character, a multipart body without its
 *   boundary (console and `/authorize`), an OAuth-shaped Bearer or a client id / code / token
 *   longer than a KV key, and a Client ID Metadata Document URL that cannot be fetched all
 *   answered 500;
 * - `/docs` (which takes a developer token into its "Try it" form) could be framed by any site.
 * One app (developer, exposed collection, end user, an OAuth grant) is shared by every case.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { developerRateLimitKey } from "../../src/worker/rate-limit.ts";
import { apiJson, signupDeveloper, type TestDeveloper, withinOneRateLimitWindow } from "./helpers.ts";
import {
  authorizeUrl,
  BASE,
  call,
  listedGrantId,
  openAuthorizePage,
  pkce,
  rawToolsList,
  registerClient,
  setupApp,
  signedInCode,
  tokenRequest,
} from "./oauth/oauth-client.ts";

type App = Awaited<ReturnType<typeof setupApp>>;

/** `ADMIN_RATE_LIMITER` in the tests (vitest.config.ts; 1,200 in wrangler.toml). */
const ADMIN_LIMIT = 400;
const HOSTILE_NAME = `<script>alert(1)</script>"'><img src=x onerror=alert(2)>`;

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
const FORM = { "content-type": "application/x-www-form-urlencoded" };
const JSON_RPC = {
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
  "mcp-protocol-version": "2025-06-18",
};

/** A platform MCP tools/call (or a batch of them) with this Bearer: the parsed JSON-RPC answer. */
async function platformCalls(token: string, calls: { name: string; arguments?: object }[]) {
  const res = await call("/mcp", {
    method: "POST",
    headers: { ...JSON_RPC, authorization: `Bearer ${token}`, "mcp-protocol-version": "2025-03-26" },
    body: JSON.stringify(
      calls.map((params, i) => ({ jsonrpc: "2.0", id: i + 1, method: "tools/call", params })),
    ),
  });
  expect(res.status).toBe(200);
  // biome-ignore lint/suspicious/noExplicitAny: JSON-RPC results asserted by shape
  return (await res.json()) as any[];
}

/** Sign into the console as `dev`: the session cookie. */
async function consoleCookie(dev: TestDeveloper): Promise<string> {
  const login = await call("/console/login", {
    method: "POST",
    redirect: "manual",
    headers: FORM,
    body: form({ token: dev.token }),
  });
  expect(login.status).toBe(303);
  return (login.headers.get("set-cookie") ?? "").split(";")[0] as string;
}

describe("cold audit", () => {
  let app: App;
  let clientId: string;

  beforeAll(async () => {
    app = await setupApp();
    clientId = await registerClient(["https://client.example/cb", "http://127.0.0.1:33418/callback"]);
  });

  it("limits each developer's admin API, platform MCP and console requests (one budget, 429 rate_limited)", async () => {
    const dev = await signupDeveloper();
    const other = await signupDeveloper();
    const cookie = await consoleCookie(dev);
    await withinOneRateLimitWindow(60, 5_000);
    // Spend all but three of the developer's budget in this window, the way its own requests would.
    const key = developerRateLimitKey(dev.developerId);
    for (let spent = 0; spent < ADMIN_LIMIT - 3; spent += 16) {
      const n = Math.min(16, ADMIN_LIMIT - 3 - spent);
      await Promise.all(Array.from({ length: n }, () => env.ADMIN_RATE_LIMITER.limit({ key })));
    }
    // A batch pays per tool call: three of five run, two are refused.
    const batch = await platformCalls(
      dev.token,
      Array.from({ length: 5 }, () => ({ name: "amba_projects_list" })),
    );
    const refused = batch.filter((m) => m.result.isError);
    expect(refused).toHaveLength(2);
    expect(
      refused[0].result.structuredContent?.error ?? JSON.parse(refused[0].result.content[0].text).error,
    ).toMatchObject({ code: "rate_limited" });

    const rest = await call(`/v1/admin/projects/${dev.projectId}/collections`, {
      headers: { authorization: `Bearer ${dev.token}` },
    });
    expect(rest.status).toBe(429);
    expect(rest.headers.get("retry-after")).toBe("60");
    expect(((await rest.json()) as { error: { code: string } }).error.code).toBe("rate_limited");
    expect((await call("/console", { headers: { cookie } })).status).toBe(429);

    // Another developer, and the app MCP's callers, keep their own budgets.
    expect((await apiJson("/v1/admin/projects", { token: other.token })).status).toBe(200);
    const [own] = await platformCalls(other.token, [{ name: "amba_whoami" }]);
    expect(own.result.isError).toBeFalsy();
    expect((await rawToolsList(`${BASE}/app/${dev.projectId}/mcp`, dev.token)).status).toBe(200);
  });

  it("never redirects a malformed authorization request to a self-registered redirect URI", async () => {
    const { challenge } = await pkce();
    const base = { client_id: clientId, code_challenge: challenge, resource: app.url };
    const cases: Record<string, string | null>[] = [
      { redirect_uri: "https://client.example/cb", code_challenge_method: "plain" },
      { redirect_uri: "https://client.example/cb", response_type: "token" },
      { redirect_uri: "https://client.example/cb", code_challenge: null, code_challenge_method: null },
      // These held already: only the exact registered URI (any port on loopback, RFC 8252).
      { redirect_uri: "https://client.example/cb/extra" },
      { redirect_uri: "https://client.example/cb?x=1" },
      { redirect_uri: "https://CLIENT.example/cb" },
      { redirect_uri: "https://client.example:444/cb" },
      { redirect_uri: "https://client.example/cb#x" },
      { redirect_uri: "https://user@client.example/cb" },
      { redirect_uri: "https://client.example/%63b" },
      { redirect_uri: "http://client.example/cb" },
      { redirect_uri: "javascript:alert(1)//https://client.example/cb" },
      { redirect_uri: "http://localhost:33418/callback" },
    ];
    for (const params of cases) {
      const res = await call(authorizeUrl({ ...base, ...params }), { redirect: "manual" });
      expect(res.status, JSON.stringify(params)).toBe(400);
      expect(res.headers.get("location")).toBeNull();
      expect(res.headers.get("x-frame-options")).toBe("DENY");
      expect(await res.text()).toContain("This sign-in request is not valid");
    }
    const page = await openAuthorizePage(
      authorizeUrl({ ...base, redirect_uri: "https://client.example/cb" }),
    );
    expect(page.res.status).toBe(200);
    expect(page.res.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    expect(page.res.headers.get("x-content-type-options")).toBe("nosniff");
  });

  it("answers 4xx, never 500, to OAuth identifiers longer than a KV key and to unfetchable client metadata", async () => {
    const long = `u_${"0".repeat(32)}:${"g".repeat(600)}:secret`;
    for (const url of [app.url, `${BASE}/mcp`]) {
      const res = await call(url, {
        method: "POST",
        headers: { ...JSON_RPC, authorization: `Bearer ${long}` },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
      });
      expect(res.status, url).toBe(401);
    }
    for (const [fields, headers] of [
      [{ grant_type: "authorization_code", code: long, client_id: clientId }, {}],
      [{ grant_type: "refresh_token", refresh_token: long, client_id: clientId }, {}],
      [{ token: long, client_id: clientId }, {}],
      [{ grant_type: "authorization_code", code: "a:b:c", client_id: "c".repeat(600) }, {}],
      [
        { grant_type: "authorization_code", code: "a:b:c" },
        { authorization: `Basic ${btoa(`${"c".repeat(600)}:s`)}` },
      ],
    ] as const) {
      const res = await call("/oauth/token", {
        method: "POST",
        headers: { ...FORM, ...headers },
        body: form(fields),
      });
      expect(res.status, JSON.stringify(fields)).toBe(400);
      expect(await res.json()).toMatchObject({ error: "invalid_request" });
    }
    const { challenge } = await pkce();
    for (const client_id of ["c".repeat(600), "https://127.0.0.1:1/client-metadata.json"]) {
      const res = await call(
        authorizeUrl({
          client_id,
          code_challenge: challenge,
          resource: app.url,
          redirect_uri: "https://client.example/cb",
        }),
        { redirect: "manual" },
      );
      expect(res.status, client_id.slice(0, 40)).toBe(400);
      expect(await res.text()).toContain("This sign-in request is not valid");
    }
  });

  it("answers a hostile console cookie, sign-in token or form body with 4xx, never 500", async () => {
    for (const cookie of ["amba_console=a%0Ab", "amba_console=amba_dev_%00x"]) {
      const res = await call("/console", { headers: { cookie } });
      expect(res.status, cookie).toBe(200);
      expect(await res.text()).toContain('action="/console/login"');
      expect(res.headers.get("set-cookie")).toMatch(/^amba_console=; Max-Age=0/);
    }
    for (const token of ["amba_dev_x\ny", "a\u0000b"]) {
      const res = await call("/console/login", { method: "POST", headers: FORM, body: form({ token }) });
      expect(res.status).toBe(401);
      expect(await res.text()).toContain("That developer token is not valid.");
    }
    const cookie = await consoleCookie(app.dev);
    const multipart = { "content-type": "multipart/form-data; boundary=zz" };
    for (const [path, headers] of [
      [`/console/projects/${app.dev.projectId}/config`, { ...multipart, cookie }],
      ["/console/login", multipart],
      ["/authorize", multipart],
    ] as const) {
      const res = await call(path, { method: "POST", headers, body: "no boundary here" });
      expect(res.status, path).toBe(400);
      expect(await res.json()).toMatchObject({ error: { code: "invalid_input" } });
    }
  });

  it("escapes developer- and client-chosen names on the console and the sign-in page", async () => {
    const dev = await signupDeveloper();
    const admin = `/v1/admin/projects/${dev.projectId}`;
    expect(
      (await apiJson(admin, { method: "PATCH", token: dev.token, json: { name: HOSTILE_NAME } })).status,
    ).toBe(200);
    const made = await apiJson(`${admin}/collections`, {
      token: dev.token,
      json: { name: "notes", columns: [{ name: "body", type: "text", description: HOSTILE_NAME }] },
    });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const cookie = await consoleCookie(dev);
    for (const path of ["/console", `/console/projects/${dev.projectId}`]) {
      const page = await (await call(path, { headers: { cookie } })).text();
      expect(page, path).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
      expect(page).not.toContain("<script>alert(1)");
      expect(page).not.toContain("<img src=x");
    }
    const hostileClient = await call("/oauth/register", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        client_name: HOSTILE_NAME,
        redirect_uris: ["http://127.0.0.1:33418/callback"],
        token_endpoint_auth_method: "none",
      }),
    });
    const { client_id } = (await hostileClient.json()) as { client_id: string };
    const { challenge } = await pkce();
    const page = await openAuthorizePage(
      authorizeUrl({ client_id, code_challenge: challenge, resource: `${BASE}/app/${dev.projectId}/mcp` }),
    );
    expect(page.res.status).toBe(200);
    expect(page.html).not.toContain("<script>alert(1)");
    expect(page.html).not.toContain("<img src=x");
  });

  it("keeps a project's OAuth grants out of another developer's reach", async () => {
    const { verifier, challenge } = await pkce();
    const code = await signedInCode(
      { client_id: clientId, code_challenge: challenge, resource: app.url },
      {
        mode: "end_user",
        email: app.alice.email,
        password: app.alice.password,
      },
    );
    const { body } = await tokenRequest({
      grant_type: "authorization_code",
      code,
      code_verifier: verifier,
      client_id: clientId,
    });
    const grantId = listedGrantId(body.access_token as string);
    const intruder = await signupDeveloper();
    const own = `/v1/admin/projects/${intruder.projectId}/oauth/grants`;
    expect((await apiJson(own, { token: intruder.token })).body.grants).toEqual([]);
    expect((await apiJson(`${own}/${grantId}`, { method: "DELETE", token: intruder.token })).status).toBe(
      404,
    );
    const theirs = `/v1/admin/projects/${app.dev.projectId}/oauth/grants`;
    expect((await apiJson(theirs, { token: intruder.token })).status).toBe(404);
    const [tool] = await platformCalls(intruder.token, [
      { name: "amba_oauth_grants_revoke", arguments: { project_id: app.dev.projectId, grant_id: grantId } },
    ]);
    expect(tool.result.isError).toBe(true);
    expect((await rawToolsList(app.url, body.access_token)).status).toBe(200);
    // A code is redeemable by its own client only, and a refresh token too.
    const otherClient = await registerClient();
    const refreshed = await tokenRequest({
      grant_type: "refresh_token",
      refresh_token: body.refresh_token,
      client_id: otherClient,
    });
    expect(refreshed.body.error).toBe("invalid_grant");
  });

  it("forbids framing /docs, whose form takes a developer token", async () => {
    const res = await call("/docs");
    expect(res.status).toBe(200);
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(res.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
  });
});
