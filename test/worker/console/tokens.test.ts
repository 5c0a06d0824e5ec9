/**
 * The console's tokens page in workerd, posted like a browser posts it (session cookie, the page's
 * CSRF token): the list carries no secret or digest, a create shows the new secret once (and it works
 * on REST), a revoke without this session's CSRF token is refused with nothing revoked, and a
 * revoke of the session's own token signs the console out.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { api, apiJson, signupDeveloper, type TestDeveloper } from "../helpers.ts";
import { consoleLogin, csrfOf } from "./console-session.ts";

let dev: TestDeveloper;
let cookie: string;
let csrf: string;

/** Sign the console in with `token`; the session cookie. */
async function signIn(token: string): Promise<string> {
  const { res, cookie } = await consoleLogin(token);
  expect(res.status).toBe(303);
  return cookie;
}

const page = async (withCookie = cookie) => api("/console/tokens", { headers: { cookie: withCookie } });

function post(path: string, fields: Record<string, string>, withCookie = cookie) {
  return api(path, {
    method: "POST",
    redirect: "manual",
    headers: { cookie: withCookie, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(fields).toString(),
  });
}

/** The developer's tokens by REST, as the service lists them. */
const restTokens = async (token = dev.token) =>
  (await apiJson("/v1/admin/tokens", { token })).body.tokens as {
    id: string;
    name: string;
    revoked: boolean;
  }[];

const status = async (token: string) => (await api("/v1/admin/tokens", { token })).status;

beforeAll(async () => {
  dev = await signupDeveloper();
  cookie = await signIn(dev.token);
  const res = await page();
  expect(res.status).toBe(200);
  csrf = csrfOf(await res.text());
  expect(csrf).toBeTruthy();
});

describe("console: tokens page", () => {
  it("is linked from the navigation and lists the tokens without any secret or digest", async () => {
    const projects = await (await api("/console", { headers: { cookie } })).text();
    expect(projects).toContain('<a href="/console/tokens">Tokens</a>');

    const res = await page();
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.headers.get("content-security-policy")).toMatch(
      /script-src 'nonce-[^']+'.*trusted-types 'none'/,
    );
    const html = await res.text();
    const [own] = await restTokens();
    expect(html).toContain(`<tr data-token="${own?.id}">`);
    expect(html).toContain("this session's token");
    expect(html).toContain("Revoking this token signs the console out.");
    expect(html).toContain(`action="/console/tokens/${own?.id}/revoke"`);
    // The session's token (its secret part) never appears, nor anything shaped like a digest.
    expect(html).not.toContain(dev.token);
    expect(html).not.toContain(dev.token.replace(/^amba_dev_[0-9a-f]{32}_/, ""));
    expect(html).not.toMatch(/amba_dev_/);
    expect(html).not.toMatch(/[0-9a-f]{64}/); // a SHA-256 hex digest
  });

  it("creates a token, shows its secret once, and the token works on REST", async () => {
    const res = await post("/console/tokens", { csrf, name: "laptop" });
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const html = await res.text();
    expect(html).toContain("shown only this once");
    const secret = /<pre id="new-token">([^<]+)<\/pre>/.exec(html)?.[1] as string;
    expect(secret).toMatch(/^amba_dev_/);
    expect(await status(secret)).toBe(200);
    expect((await restTokens()).map((t) => t.name)).toContain("laptop");
    // Listed afterwards, never shown again.
    const later = await (await page()).text();
    expect(later).toContain("laptop");
    expect(later).not.toContain(secret);
  });

  it("creates without a name (default), and answers a bad name with the service's message", async () => {
    const res = await post("/console/tokens", { csrf, name: "" });
    expect(res.status).toBe(200);
    expect(await res.text()).toMatch(/<h2>New token default<\/h2>/);
    const bad = await post("/console/tokens", { csrf, name: "x".repeat(101) });
    expect(bad.status).toBe(400);
    const html = await bad.text();
    expect(html).toContain("must be at most 100 characters");
    expect(html).not.toContain('id="new-token"');
  });

  it("escapes a hostile token name", async () => {
    const hostile = `<script>alert(1)</script>"><img src=x onerror=alert(2)>`;
    await apiJson("/v1/admin/tokens", { method: "POST", token: dev.token, json: { name: hostile } });
    const html = await (await page()).text();
    expect(html).not.toContain("<script>alert(1)");
    expect(html).not.toContain("<img src=x");
    expect(html).toContain(
      "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&gt;&lt;img src=x onerror=alert(2)&gt;",
    );
  });

  it("refuses a revoke without this session's CSRF token (403, nothing revoked)", async () => {
    const created = await apiJson("/v1/admin/tokens", {
      method: "POST",
      token: dev.token,
      json: { name: "victim" },
    });
    const path = `/console/tokens/${created.body.id}/revoke`;
    expect((await post(path, {})).status).toBe(403);
    expect((await post(path, { csrf: "not-the-token" })).status).toBe(403);
    // Another session's CSRF token does not do either.
    const other = await signupDeveloper();
    const otherCsrf = csrfOf(await (await page(await signIn(other.token))).text());
    expect((await post(path, { csrf: otherCsrf })).status).toBe(403);
    expect(await status(created.body.token)).toBe(200);
    expect((await restTokens()).find((t) => t.id === created.body.id)?.revoked).toBe(false);
  });

  it("revokes with the CSRF token: the revoked token gets 401 on REST", async () => {
    const created = await apiJson("/v1/admin/tokens", {
      method: "POST",
      token: dev.token,
      json: { name: "leaked" },
    });
    const res = await post(`/console/tokens/${created.body.id}/revoke`, { csrf });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/console/tokens#tokens");
    expect(await status(created.body.token)).toBe(401);
    const html = await (await page()).text();
    expect(html).toMatch(new RegExp(`<tr data-token="${created.body.id}">.*<td>revoked</td><td></td></tr>`));
    expect(await status(dev.token)).toBe(200);
  });

  it("revoking the session's own token signs the console out", async () => {
    const created = await apiJson("/v1/admin/tokens", {
      method: "POST",
      token: dev.token,
      json: { name: "session" },
    });
    const session = await signIn(created.body.token);
    const sessionCsrf = csrfOf(await (await page(session)).text());
    const res = await post(`/console/tokens/${created.body.id}/revoke`, { csrf: sessionCsrf }, session);
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/console");
    // The next request finds the cookie's token revoked: the tokens page sends it to sign-in.
    const next = await page(session);
    expect(next.status).toBe(200);
    expect(await next.text()).toContain("<title>Sign in — Amba console</title>");
    expect(await status(created.body.token)).toBe(401);
  });

  it("refuses to revoke the developer's last live token, with the reason on the page", async () => {
    const lone = await signupDeveloper();
    const session = await signIn(lone.token);
    const html = await (await page(session)).text();
    const sessionCsrf = csrfOf(html);
    const [own] = await restTokens(lone.token);
    const res = await post(`/console/tokens/${own?.id}/revoke`, { csrf: sessionCsrf }, session);
    expect(res.status).toBe(409);
    expect(await res.text()).toContain("last live developer token");
    expect(await status(lone.token)).toBe(200);
  });
});
