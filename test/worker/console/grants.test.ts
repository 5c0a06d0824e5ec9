/**
 * The console's "Connected apps" page (a project's OAuth grants) in workerd, posted like a browser
 * posts it (session cookie, the page's CSRF token): it lists what the REST listing lists, pages with
 * its cursor, revokes through the same path as `DELETE …/oauth/grants/:grantId` (the grant's tokens
 * stop working, and it is recorded in `revoked_oauth_grants`), refuses a revoke without this
 * session's CSRF token and another developer's grant id (404, the grant lives), and escapes a
 * client's self-chosen name.
 */
import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { api, apiJson, type TestDeveloper, type TestUser, testDb } from "../helpers.ts";
import {
  type Authorized,
  authorized,
  listedGrantId,
  REDIRECT_URI,
  rawToolsList,
  registerClient,
  type SignIn,
  setupApp,
} from "../oauth/oauth-client.ts";
import { consoleLogin, csrfOf, postForm } from "./console-session.ts";

const HOSTILE = `<script>alert(1)</script>"><img src=x onerror=alert(2)>`;

let p: { dev: TestDeveloper; alice: TestUser; bob: TestUser; url: string };
let q: { dev: TestDeveloper; alice: TestUser; bob: TestUser; url: string };
let cookie: string;
let csrf: string;
/** Grants of p: alice through a client with a hostile name, bob, and the developer. */
let alice: Authorized;
let bob: Authorized;
let developer: Authorized;
/** A grant of another developer's project. */
let carol: Authorized;

const endUser = (u: TestUser): SignIn => ({ mode: "end_user", email: u.email, password: u.password });

/** A client registered under `name` (RFC 7591: the name is the client's own choice). */
const clientNamed = (name: string) => registerClient([REDIRECT_URI], name);

const grantsPath = (projectId = p.dev.projectId) => `/console/projects/${projectId}/grants`;

const page = (path = grantsPath(), withCookie = cookie) => api(path, { headers: { cookie: withCookie } });

function post(path: string, fields: Record<string, string>, headers: Record<string, string> = {}) {
  return postForm(path, cookie, fields, headers);
}

const revokePath = (grantId: string, projectId = p.dev.projectId) =>
  `${grantsPath(projectId)}/${encodeURIComponent(grantId)}/revoke`;

/** The listed ids of a project's grants, by REST. */
const restIds = async (dev: TestDeveloper) =>
  (await apiJson(`/v1/admin/projects/${dev.projectId}/oauth/grants`, { token: dev.token })).body.grants.map(
    (g: { id: string }) => g.id,
  ) as string[];

beforeAll(async () => {
  [p, q] = await Promise.all([setupApp(), setupApp()]);
  [alice, bob, developer, carol] = await Promise.all([
    clientNamed(HOSTILE).then((client) => authorized(p.url, endUser(p.alice), client)),
    authorized(p.url, endUser(p.bob)),
    authorized(p.url, { mode: "developer", developer_token: p.dev.token }),
    authorized(q.url, endUser(q.alice)),
  ]);
  const login = await consoleLogin(p.dev.token);
  expect(login.res.status).toBe(303);
  cookie = login.cookie;
  const res = await page();
  expect(res.status).toBe(200);
  csrf = csrfOf(await res.text());
  expect(csrf).toBeTruthy();
});

describe("console: connected apps (OAuth grants)", () => {
  it("is linked from the project page and lists every grant the REST listing lists", async () => {
    const project = await (await page(`/console/projects/${p.dev.projectId}`)).text();
    expect(project).toContain(`href="/console/projects/${p.dev.projectId}/grants"`);

    const res = await page();
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.headers.get("content-security-policy")).toMatch(/script-src 'nonce-[^']+'/);
    const html = await res.text();
    expect(html).toContain("<h2>Connected apps");
    const ids = await restIds(p.dev);
    expect(ids).toHaveLength(3);
    for (const id of ids) {
      expect(html).toContain(`<tr data-grant="${id}">`);
      expect(html).toContain(`action="${revokePath(id)}"`);
    }
    // Who, which client, which resource, when.
    const row = (grant: Authorized) =>
      new RegExp(`<tr data-grant="${listedGrantId(grant.access_token)}">(.*?)</tr>`, "s").exec(html)?.[1] ??
      "";
    expect(row(bob)).toContain("Hand Client");
    expect(row(bob)).toContain(bob.clientId);
    expect(row(bob)).toContain("end user");
    expect(row(bob)).toContain(p.bob.email);
    expect(row(bob)).toContain(p.url);
    expect(row(bob)).toMatch(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}/);
    expect(row(developer)).toContain("developer");
    expect(row(developer)).toContain(p.dev.developerId);
    // Another project's grant is not on this page; the warning stands before the buttons.
    expect(html).not.toContain(listedGrantId(carol.access_token));
    expect(html).toMatch(/stop working at once/);
    expect(html).not.toContain(p.dev.token);
  });

  it("escapes a client's hostile name", async () => {
    const html = await (await page()).text();
    expect(html).not.toContain("<script>alert(1)");
    expect(html).not.toContain("<img src=x");
    expect(html).toContain(
      "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&gt;&lt;img src=x onerror=alert(2)&gt;",
    );
  });

  it("pages with the listing's cursor (limit as on REST)", async () => {
    const first = await (await page(`${grantsPath()}?limit=1`)).text();
    const next = /<a id="next-page" href="([^"]+)"/.exec(first)?.[1];
    expect(next).toBeDefined();
    const seen = (first.match(/<tr data-grant="/g) ?? []).length;
    expect(seen).toBe(1);
    // Follow the links to the end: every grant exactly once.
    const ids: string[] = [...first.matchAll(/<tr data-grant="([^"]+)"/g)].map((m) => m[1] as string);
    let href: string | undefined = next;
    for (let i = 0; href && i < 10; i++) {
      const html = await (await page(href.replaceAll("&amp;", "&"))).text();
      ids.push(...[...html.matchAll(/<tr data-grant="([^"]+)"/g)].map((m) => m[1] as string));
      href = /<a id="next-page" href="([^"]+)"/.exec(html)?.[1];
    }
    expect(ids.sort()).toEqual((await restIds(p.dev)).sort());
    // A cursor the listing did not hand out is the listing's 400.
    const bad = await page(`${grantsPath()}?cursor=${encodeURIComponent("<x>")}`);
    expect(bad.status).toBe(400);
  });

  it("refuses a revoke without this session's CSRF token or from another origin (403), the grant lives", async () => {
    const id = listedGrantId(bob.access_token);
    expect((await post(revokePath(id), {})).status).toBe(403);
    expect((await post(revokePath(id), { csrf: "not-the-token" })).status).toBe(403);
    expect((await post(revokePath(id), { csrf }, { origin: "https://evil.example" })).status).toBe(403);
    expect((await rawToolsList(p.url, bob.access_token)).status).toBe(200);
    expect(await restIds(p.dev)).toContain(id);
  });

  it("refuses another developer's grant id (404), under this project or theirs, the grant lives", async () => {
    const theirs = listedGrantId(carol.access_token);
    const mine = await post(revokePath(theirs), { csrf });
    expect(mine.status).toBe(404);
    expect(await mine.json()).toEqual({ error: { code: "not_found", message: "grant not found" } });
    expect((await post(revokePath(theirs, q.dev.projectId), { csrf })).status).toBe(404);
    expect((await page(grantsPath(q.dev.projectId))).status).toBe(404);
    expect((await post(revokePath("not-a-grant"), { csrf })).status).toBe(404);
    expect((await rawToolsList(q.url, carol.access_token)).status).toBe(200);
    expect(await restIds(q.dev)).toContain(theirs);
  });

  it("revokes through the form: the grant's tokens stop working and it leaves the listing", async () => {
    const id = listedGrantId(alice.access_token);
    const res = await post(revokePath(id), { csrf });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe(`${grantsPath()}#grants`);
    expect((await rawToolsList(p.url, alice.access_token)).status).toBe(401);
    expect(await restIds(p.dev)).not.toContain(id);
    // Recorded as revoked in Postgres, as the REST DELETE records it (every location refuses it).
    const recorded = await testDb().execute(
      sql`select 1 from revoked_oauth_grants where grant_id = ${alice.access_token.split(":")[1]}`,
    );
    expect(recorded.rows).toHaveLength(1);
    const html = await (await page()).text();
    expect(html).not.toContain(`data-grant="${id}"`);
    // Again: it is gone (404), not revoked twice.
    expect((await post(revokePath(id), { csrf })).status).toBe(404);
    // The others live on.
    expect((await rawToolsList(p.url, bob.access_token)).status).toBe(200);
  });

  it("says so when no assistant is connected", async () => {
    const lone = await setupApp();
    const { cookie: session } = await consoleLogin(lone.dev.token);
    const html = await (await page(grantsPath(lone.dev.projectId), session)).text();
    expect(html).toContain("No assistant is connected");
    expect(html).not.toContain('id="next-page"');
  });
});
