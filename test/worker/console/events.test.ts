/**
 * The console's read-only "Events" page of a project in workerd: it is linked from the project's
 * page, lists what the REST listing (`GET /v1/admin/projects/:id/events`, the same `listEvents`)
 * lists — newest first, name, time, user id, properties as truncated JSON — filters by name, pages
 * with the listing's cursor, shows a refused filter or cursor as a notice on the page, and renders
 * properties (written by whoever holds the public client key) as inert text.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { api, apiJson, signupDeveloper, signupUser, type TestDeveloper, type TestUser } from "../helpers.ts";

/** Markup that would run script if a property key or value reached the page unescaped. */
const HOSTILE = `</td></tr></table><script>alert(1)</script>"><img src=x onerror=alert(2)>`;

let dev: TestDeveloper;
let user: TestUser;
let cookie: string;

const eventsPath = (projectId = dev.projectId) => `/console/projects/${projectId}/events`;
const page = (path = eventsPath(), withCookie = cookie) => api(path, { headers: { cookie: withCookie } });

/** Sign the console in with `token`; the session cookie. */
async function signIn(token: string): Promise<string> {
  const login = await api("/console/login", {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ token }).toString(),
  });
  expect(login.status).toBe(303);
  return (login.headers.get("set-cookie") ?? "").split(";")[0] as string;
}

/** The event ids of a rendered page, in page order. */
const rowIds = (html: string) => [...html.matchAll(/<tr data-event="([^"]+)"/g)].map((m) => m[1] as string);

/** The REST listing's event ids (one page of up to 100). */
const restIds = async (query = "") =>
  (
    await apiJson(`/v1/admin/projects/${dev.projectId}/events?limit=100${query}`, { token: dev.token })
  ).body.events.map((e: { id: string }) => e.id) as string[];

beforeAll(async () => {
  dev = await signupDeveloper();
  user = await signupUser(dev.projectId, dev.clientKey);
  const batch = await apiJson("/v1/events", {
    apiKey: dev.clientKey,
    json: {
      events: [
        { name: "app.opened", properties: { i: 0 } },
        { name: "signup", properties: { i: 1, [HOSTILE]: HOSTILE } },
        { name: "app.opened", properties: { i: 2, long: "x".repeat(2000) } },
        { name: "signup", properties: { i: 3 }, timestamp: "2026-01-02T03:04:05.678Z" },
      ],
    },
  });
  expect(batch.status, JSON.stringify(batch.body)).toBe(201);
  // The newest: sent with an end user's session, so it carries their id.
  const mine = await apiJson("/v1/events", {
    headers: { "x-api-key": dev.clientKey, authorization: `Bearer ${user.sessionToken}` },
    json: { name: "recipe_viewed", properties: { recipe: "cake" } },
  });
  expect(mine.status, JSON.stringify(mine.body)).toBe(201);
  cookie = await signIn(dev.token);
});

describe("console: events", () => {
  it("is linked from the project page and lists the events newest first, as the REST listing does", async () => {
    const project = await (await page(`/console/projects/${dev.projectId}`)).text();
    expect(project).toContain(`href="${eventsPath()}"`);

    const res = await page();
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.headers.get("content-security-policy")).toMatch(/script-src 'nonce-[^']+'/);
    const html = await res.text();
    expect(html).toContain("<h2>Events");
    const ids = await restIds();
    expect(ids).toHaveLength(5);
    expect(rowIds(html)).toEqual(ids);

    const row = (id: string) =>
      new RegExp(`<tr data-event="${id}">(.*?)</tr>`, "s").exec(html)?.[1] ?? "not rendered";
    const [viewed, backdated, long] = ids as [string, string, string];
    expect(row(viewed)).toContain("recipe_viewed");
    expect(row(viewed)).toContain(user.userId);
    expect(row(viewed)).toContain("{&quot;recipe&quot;:&quot;cake&quot;}");
    // Listed in the order received: a client's own earlier timestamp shows with when it arrived.
    expect(row(backdated)).toMatch(/2026-01-02T03:04:05\.678Z<br><span class="muted">received \d{4}-/);
    expect(row(viewed)).not.toContain("received");
    // Long properties are cut short (the full JSON is the listing's: REST, amba_events_list).
    expect(row(long)).toContain("x".repeat(100));
    expect(row(long)).not.toContain("x".repeat(1000));
    expect(row(long)).toContain("…");
    expect(html).not.toContain(dev.token);
  });

  it("renders hostile property keys and values as inert text", async () => {
    const res = await page();
    const html = await res.text();
    const nonce = /script-src 'nonce-([^']+)'/.exec(res.headers.get("content-security-policy") ?? "")?.[1];
    // The page's one script is its own; no injected tag or attribute survives.
    expect(html.match(/<script/g)).toEqual(["<script"]);
    expect(html).toContain(`<script nonce="${nonce}">`);
    expect(html).not.toMatch(/<img|<\/table><script/);
    expect(html).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(html).toContain("&lt;img src=x onerror=alert(2)&gt;");
  });

  it("filters by name and pages with the listing's cursor, keeping the filter", async () => {
    const signups = await page(`${eventsPath()}?name=signup`);
    const signupsHtml = await signups.text();
    expect(rowIds(signupsHtml)).toEqual(await restIds("&name=signup"));
    expect(rowIds(signupsHtml)).toHaveLength(2);
    expect(signupsHtml).toMatch(/<input[^>]*name="name"[^>]*value="signup"/);

    // Follow the "Next page" links to the end: every event once, in the REST listing's order.
    const first = await (await page(`${eventsPath()}?limit=2`)).text();
    const seen = rowIds(first);
    expect(seen).toHaveLength(2);
    expect(first).not.toContain('id="first-page"');
    let next = /<a id="next-page" href="([^"]+)"/.exec(first)?.[1];
    expect(next).toBeDefined();
    for (let i = 0; next && i < 10; i++) {
      const html = await (await page(next.replaceAll("&amp;", "&"))).text();
      expect(html).toContain('id="first-page"');
      seen.push(...rowIds(html));
      next = /<a id="next-page" href="([^"]+)"/.exec(html)?.[1];
    }
    expect(seen).toEqual(await restIds());

    const byName = await (await page(`${eventsPath()}?name=app.opened&limit=1`)).text();
    const link = /<a id="next-page" href="([^"]+)"/.exec(byName)?.[1]?.replaceAll("&amp;", "&") ?? "";
    expect(new URL(link, "http://x").searchParams.get("name")).toBe("app.opened");
    const rest = await (await page(link)).text();
    expect(rowIds(rest)).toEqual((await restIds("&name=app.opened")).slice(1));
    expect(rest).not.toContain('id="next-page"');
  });

  it("shows a refused name, limit or cursor as the listing's message on the page (400), echoed inertly", async () => {
    for (const [query, field] of [
      [`?name=${encodeURIComponent(HOSTILE)}`, "name"],
      ["?limit=0", "limit"],
      ["?cursor=nonsense", "cursor"],
    ] as const) {
      const res = await page(`${eventsPath()}${query}`);
      expect(res.status, query).toBe(400);
      expect(res.headers.get("content-type")).toMatch(/^text\/html/);
      const html = await res.text();
      expect(html).toMatch(new RegExp(`<p class="notice error" role="alert">${field}: `));
      expect(rowIds(html)).toEqual([]);
      expect(html).not.toMatch(/<img|<\/table><script/);
    }
    const echoed = await (await page(`${eventsPath()}?name=${encodeURIComponent(HOSTILE)}`)).text();
    expect(echoed).toContain("&quot;&gt;&lt;img src=x onerror=alert(2)&gt;");
  });

  it("is another developer's 404, and sends a signed-out browser to sign in", async () => {
    const other = await signupDeveloper();
    const theirs = await signIn(other.token);
    const foreign = await page(eventsPath(), theirs);
    expect(foreign.status).toBe(404);
    expect(await foreign.json()).toEqual({ error: { code: "not_found", message: "project not found" } });
    const own = await (await page(eventsPath(other.projectId), theirs)).text();
    expect(own).toContain("No events yet");
    expect(rowIds(own)).toEqual([]);
    const signedOut = await api(eventsPath(), { redirect: "manual" });
    expect(signedOut.status).toBe(303);
    expect(signedOut.headers.get("location")).toBe("/console");
  });
});
