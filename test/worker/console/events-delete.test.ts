/**
 * The console's "Delete events received before <date>" form on a project's Events page, in workerd:
 * a CSRF-checked POST that calls the REST delete's own `deleteEvents`
 * (`DELETE /v1/admin/projects/:id/events?before=&name=`) and shows what it answered — how many were
 * deleted, and whether more match (with a button to go on). A date is its UTC midnight; a full
 * ISO date-time is taken as given. Refusals: no or another session's CSRF token, a foreign `Origin`
 * (403), a bad `before` (the service's message on the page, 400), another developer's project (404).
 */
import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { EVENT_ROW_OVERHEAD_BYTES, MAX_EVENTS_DELETED } from "../../../src/events/service.ts";
import { api, apiJson, signupDeveloper, type TestDeveloper, testDb } from "../helpers.ts";
import { consoleLogin, csrfOf, postForm } from "./console-session.ts";

/** Markup that would run script if `before` were echoed unescaped. */
const HOSTILE = `"><script>alert(1)</script><img src=x onerror=alert(2)>`;

let dev: TestDeveloper;
let cookie: string;
let csrf: string;

const eventsPath = (projectId = dev.projectId) => `/console/projects/${projectId}/events`;
const deletePath = (projectId = dev.projectId) => `${eventsPath(projectId)}/delete`;

/** Sign the console in with `token`; the session cookie. */
async function signIn(token: string): Promise<string> {
  const { res, cookie } = await consoleLogin(token);
  expect(res.status).toBe(303);
  return cookie;
}

/** The CSRF token the events page of `projectId` carries for the session `withCookie`. */
async function sessionCsrf(withCookie: string, projectId: string): Promise<string> {
  const res = await api(eventsPath(projectId), { headers: { cookie: withCookie } });
  expect(res.status).toBe(200);
  const token = csrfOf(await res.text());
  expect(token).toBeTruthy();
  return token;
}

function post(path: string, fields: Record<string, string>, headers: Record<string, string> = {}) {
  return postForm(path, cookie, fields, headers);
}

/** The names of a project's events by the REST listing, newest first. */
const restNames = async (as = dev) =>
  (await apiJson(`/v1/admin/projects/${as.projectId}/events?limit=100`, { token: as.token })).body.events.map(
    (e: { name: string }) => e.name,
  ) as string[];

async function send(as: TestDeveloper, names: string[]): Promise<void> {
  const sent = await apiJson("/v1/events", {
    apiKey: as.clientKey,
    json: { events: names.map((name) => ({ name })) },
  });
  expect(sent.status, JSON.stringify(sent.body)).toBe(201);
}

/** A UTC day as YYYY-MM-DD, `days` from today. */
const utcDay = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10);

/** The delete result a page shows (`Deleted N event(s) …`), or null. */
const result = (html: string) =>
  /<p class="notice ok" role="status" id="deleted">([^<]*)<\/p>/.exec(html)?.[1] ?? null;

beforeAll(async () => {
  dev = await signupDeveloper();
  cookie = await signIn(dev.token);
  csrf = await sessionCsrf(cookie, dev.projectId);
});

describe("console: delete events", () => {
  it("offers a CSRF-carrying form on the Events page", async () => {
    const html = await (await api(eventsPath(), { headers: { cookie } })).text();
    const form = new RegExp(`<form method="post" action="${deletePath()}">(.*?)</form>`, "s").exec(html)?.[1];
    expect(form).toBeDefined();
    expect(form).toContain(`<input type="hidden" name="csrf" value="${csrf}">`);
    expect(form).toMatch(/<input type="date" name="before" required/);
    expect(form).toMatch(/<input name="name"/);
    expect(html).toContain("Delete events received before");
  });

  it("refuses a post without this session's CSRF token or from another origin (403), deleting nothing", async () => {
    await send(dev, ["csrf.kept"]);
    const before = await restNames();
    const tomorrow = utcDay(1);
    expect((await post(deletePath(), { before: tomorrow })).status).toBe(403);
    expect((await post(deletePath(), { before: tomorrow, csrf: "not-the-token" })).status).toBe(403);
    const other = await signupDeveloper();
    const theirCsrf = await sessionCsrf(await signIn(other.token), other.projectId);
    expect((await post(deletePath(), { before: tomorrow, csrf: theirCsrf })).status).toBe(403);
    expect(
      (await post(deletePath(), { before: tomorrow, csrf }, { origin: "https://evil.example" })).status,
    ).toBe(403);
    expect(await restNames()).toEqual(before);
  });

  it("deletes with the token, by date (its UTC midnight) or date-time and name, and shows the result", async () => {
    await send(dev, ["a", "b", "a"]);
    // Today's midnight: everything here was received after it.
    const none = await post(deletePath(), { csrf, before: utcDay(0) });
    expect(none.status).toBe(200);
    expect(none.headers.get("content-type")).toMatch(/^text\/html/);
    expect(result(await none.text())).toBe(`Deleted 0 events received before ${utcDay(0)}T00:00:00Z.`);
    expect(await restNames()).toEqual(["a", "b", "a", "csrf.kept"]);

    // Tomorrow's midnight, only "a": the page lists what is left.
    const named = await post(deletePath(), { csrf, before: utcDay(1), name: "a" });
    expect(named.status).toBe(200);
    const html = await named.text();
    expect(result(html)).toBe(`Deleted 2 events named a received before ${utcDay(1)}T00:00:00Z.`);
    expect(html).not.toContain('id="delete-more"');
    expect(await restNames()).toEqual(["b", "csrf.kept"]);
    expect([...html.matchAll(/<tr data-event="[^"]+"><td><code>([^<]+)</g)].map((m) => m[1])).toEqual([
      "b",
      "csrf.kept",
    ]);

    // A full date-time is taken as given; one event is "1 event".
    const one = await post(deletePath(), { csrf, before: "2999-01-01T00:00:00Z", name: "b" });
    expect(result(await one.text())).toBe("Deleted 1 event named b received before 2999-01-01T00:00:00Z.");
    expect(await restNames()).toEqual(["csrf.kept"]);
  });

  it(`says when more than ${MAX_EVENTS_DELETED} match, and its "Delete more" goes on`, async () => {
    const bulk = await signupDeveloper();
    // 10,001 events of 1970 (ids of millisecond 0), written directly with their counter row.
    await testDb().execute(sql`
      insert into app_events (id, project_id, name, properties, occurred_at, size_bytes)
      select ('00000000-0000-7000-8000-' || lpad(to_hex(i), 12, '0'))::uuid, ${bulk.projectId}::uuid,
        'bulk', '{}'::jsonb, now(), ${"bulk".length + 2 + EVENT_ROW_OVERHEAD_BYTES}::int
      from generate_series(1, ${MAX_EVENTS_DELETED + 1}::int) as i`);
    await testDb().execute(sql`
      insert into app_event_bytes (project_id, shard, bytes)
      select project_id, 0, sum(size_bytes) from app_events where project_id = ${bulk.projectId}::uuid
      group by project_id`);
    const session = await signIn(bulk.token);
    const token = await sessionCsrf(session, bulk.projectId);
    const first = await post(
      deletePath(bulk.projectId),
      { csrf: token, before: "2000-01-01" },
      { cookie: session },
    );
    expect(first.status).toBe(200);
    const html = await first.text();
    expect(result(html)).toBe(
      `Deleted ${MAX_EVENTS_DELETED} events received before 2000-01-01T00:00:00Z. More match: delete more to go on.`,
    );
    const more = /<form id="delete-more" method="post" action="([^"]+)">(.*?)<\/form>/s.exec(html);
    expect(more?.[1]).toBe(deletePath(bulk.projectId));
    const fields = Object.fromEntries(
      [...(more?.[2] ?? "").matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [
        m[1],
        m[2],
      ]),
    );
    expect(fields).toEqual({ csrf: token, before: "2000-01-01T00:00:00Z" });
    const second = await post(deletePath(bulk.projectId), fields, { cookie: session });
    const rest = await second.text();
    expect(result(rest)).toBe("Deleted 1 event received before 2000-01-01T00:00:00Z.");
    expect(rest).not.toContain('id="delete-more"');
    expect(await restNames(bulk)).toEqual([]);
  }, 60_000);

  it("shows a refused before or name as the service's message on the page (400), echoed inertly", async () => {
    await send(dev, ["refusal.kept"]);
    const before = await restNames();
    for (const [fields, message] of [
      [{ before: "yesterday" }, "before: required, an ISO-8601 date-time with a time zone"],
      [{ before: "2026-01-02T03:04:05" }, "before: required, an ISO-8601 date-time with a time zone"],
      [{ before: "2026-02-30" }, "before: required, an ISO-8601 date-time with a time zone"],
      [{ before: HOSTILE }, "before: required, an ISO-8601 date-time with a time zone"],
      [{ before: utcDay(1), name: HOSTILE }, "name: must be 1–128 characters"],
    ] as const) {
      const res = await post(deletePath(), { csrf, ...fields });
      expect(res.status, JSON.stringify(fields)).toBe(400);
      expect(res.headers.get("content-type")).toMatch(/^text\/html/);
      const html = await res.text();
      expect(html).toContain(`<p class="notice error" role="alert">${message}`);
      expect(result(html)).toBeNull();
      expect(html.match(/<script/g)).toEqual(["<script"]);
      expect(html).not.toMatch(/<img/);
    }
    expect(await restNames()).toEqual(before);
  });

  it("is another developer's 404, deleting nothing; a signed-out post goes to sign in", async () => {
    await send(dev, ["foreign.kept"]);
    const before = await restNames();
    const other = await signupDeveloper();
    const theirs = await signIn(other.token);
    const theirCsrf = await sessionCsrf(theirs, other.projectId);
    const foreign = await post(deletePath(), { csrf: theirCsrf, before: utcDay(1) }, { cookie: theirs });
    expect(foreign.status).toBe(404);
    expect(await foreign.json()).toEqual({ error: { code: "not_found", message: "project not found" } });
    expect(await restNames()).toEqual(before);
    const signedOut = await post(deletePath(), { csrf, before: utcDay(1) }, { cookie: "" });
    expect(signedOut.status).toBe(303);
    expect(signedOut.headers.get("location")).toBe("/console");
    expect(await restNames()).toEqual(before);
  });
});
