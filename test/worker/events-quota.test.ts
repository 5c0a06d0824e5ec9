/**
 * Events in the storage quota (src/events/service.ts, src/data/storage-quota.ts; 2 MiB in the
 * tests, vitest.config.ts): each stored event's size is added to the project's event-byte counter in
 * the statement that stores it, the billing view's `storage_bytes` and the quota include it, ingest
 * is refused with 403 `quota_exceeded` while the project is over (nothing stored or counted), and
 * `DELETE /v1/admin/projects/:id/events?before=&name=` deletes in bounded batches, subtracting
 * exactly what it deleted in the same statement — the counter always equals the table's sizes.
 */
import { sql } from "drizzle-orm";
import { describe, expect, it, vi } from "vitest";
import { EVENT_ROW_OVERHEAD_BYTES, MAX_EVENTS_DELETED } from "../../src/events/service.ts";
import {
  apiJson,
  billingUsage,
  endUserHeaders,
  expectError,
  freshIp,
  signupDeveloper,
  signupUser,
  type TestDeveloper,
  testDb,
} from "./helpers.ts";

const admin = (dev: TestDeveloper, path = "") => `/v1/admin/projects/${dev.projectId}${path}`;

const usage = billingUsage;

/** `POST /v1/events` with the project's client key, from an address of its own (its own rate-limit bucket). */
const send = (dev: TestDeveloper, json: unknown, session?: string) =>
  apiJson("/v1/events", {
    json,
    headers: {
      "cf-connecting-ip": freshIp(),
      ...(session ? endUserHeaders(dev.clientKey, session) : {}),
    },
    ...(session ? {} : { apiKey: dev.clientKey }),
  });

/** `DELETE …/events?…` with the developer's token. */
const purge = (dev: TestDeveloper, query: string) =>
  apiJson(admin(dev, `/events?${query}`), { token: dev.token, method: "DELETE" });

/**
 * The project's stored events as the table has them (count, and the sizes recomputed with the
 * documented formula) and its event-byte counter (the sum of its shard rows).
 */
async function stored(projectId: string) {
  const { rows } = await testDb().execute(sql`
    select
      (select count(*) from app_events where project_id = ${projectId}::uuid)::int as count,
      (select coalesce(sum(octet_length(name) + octet_length(properties::text) + ${EVENT_ROW_OVERHEAD_BYTES}::int), 0)
        from app_events where project_id = ${projectId}::uuid)::bigint as recomputed,
      (select coalesce(sum(bytes), 0) from app_event_bytes where project_id = ${projectId}::uuid)::bigint as counted`);
  const row = rows[0] as { count: number; recomputed: string | number; counted: string | number };
  return { count: Number(row.count), recomputed: Number(row.recomputed), counted: Number(row.counted) };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// 8,000 characters of properties: stored as jsonb, whose text is `{"blob": "xx…x"}` (8,012 bytes).
const BLOB = "x".repeat(8000);
const BIG_EVENT = { name: "filler", properties: { blob: BLOB } };
const BIG_EVENT_BYTES =
  "filler".length + new TextEncoder().encode(`{"blob": "${BLOB}"}`).byteLength + EVENT_ROW_OVERHEAD_BYTES;

describe("events in the storage quota", () => {
  it("counts stored events in storage_bytes, refuses ingest over the quota (nothing stored or counted), and DELETE frees it", async () => {
    const dev = await signupDeveloper();
    const user = await signupUser(dev.projectId, dev.clientKey);
    const base = (await usage(dev)).storage_bytes as number;

    // Three batches of 100 events of ≈ 8 KiB: ≈ 2.35 MiB, past the tests' 2 MiB quota (nothing was
    // measured over it yet, so all three are admitted).
    const big = { events: Array.from({ length: 100 }, () => BIG_EVENT) };
    for (let i = 0; i < 3; i++) {
      const res = await send(dev, big);
      expect(res.status, JSON.stringify(res.body)).toBe(201);
    }
    const filled = await usage(dev);
    expect(filled.storage_bytes).toBe(base + 300 * BIG_EVENT_BYTES);
    expect(filled.storage_bytes).toBeGreaterThan(2 * 1024 * 1024);
    expect(await stored(dev.projectId)).toEqual({
      count: 300,
      recomputed: 300 * BIG_EVENT_BYTES,
      counted: 300 * BIG_EVENT_BYTES,
    });

    // Refused once a background measurement has seen the project over the quota (polled: one is
    // due at most every 10 s per isolate; an event admitted meanwhile is counted as any other).
    const refused = await vi.waitFor(
      async () => {
        const res = await send(dev, { name: "late" });
        expect(res.status).toBe(403);
        return res;
      },
      { timeout: 20_000, interval: 250 },
    );
    expectError(refused, 403, "over its storage quota of 2.0 MiB");
    expect(refused.body.error.code).toBe("quota_exceeded");
    expect(refused.body.error.message).toContain("events");

    const before = await stored(dev.projectId);
    const usageBefore = await usage(dev);
    expectError(await send(dev, { events: [{ name: "a" }, { name: "b" }] }), 403);
    expectError(await send(dev, { name: "signed_in" }, user.sessionToken), 403);
    expect(await stored(dev.projectId)).toEqual(before);
    const usageAfter = await usage(dev);
    expect(usageAfter.events).toBe(usageBefore.events);
    expect(usageAfter.storage_bytes).toBe(usageBefore.storage_bytes);
    // The listing (a read) still works.
    expect((await apiJson(admin(dev, "/events?limit=1"), { token: dev.token })).status).toBe(200);

    // Deleting every event frees exactly what they were counted with; ingest works again at once
    // in this isolate (it knows what it freed).
    const all = await purge(dev, `before=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`);
    expect(all.status, JSON.stringify(all.body)).toBe(200);
    expect(all.body).toEqual({ deleted: before.count, more: false, freed_bytes: before.counted });
    expect(await stored(dev.projectId)).toEqual({ count: 0, recomputed: 0, counted: 0 });
    expect((await usage(dev)).storage_bytes).toBe(base);
    const again = await send(dev, { name: "back" });
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect((await stored(dev.projectId)).counted).toBe("back".length + 2 + EVENT_ROW_OVERHEAD_BYTES);
  }, 60_000);

  it("deletes by reception time and name, for the project's developer only", async () => {
    const a = await signupDeveloper();
    const b = await signupDeveloper();
    const aUser = await signupUser(a.projectId, a.clientKey);
    expect(
      (await send(a, { events: [{ name: "old" }, { name: "keep", properties: { k: 1 } }] })).status,
    ).toBe(201);
    // A boundary strictly between the two sends (the clock moves on across a timer).
    await sleep(5);
    const boundary = encodeURIComponent(new Date().toISOString());
    await sleep(5);
    expect((await send(a, { name: "old" })).status).toBe(201);
    expect((await send(b, { name: "old" })).status).toBe(201);
    const aBefore = await stored(a.projectId);
    const bBefore = await stored(b.projectId);

    // Another developer does not see the project; client credentials are no developer's.
    expectError(await purge({ ...a, token: b.token }, `before=${boundary}`), 404);
    expectError(
      await apiJson(admin(a, `/events?before=${boundary}`), { method: "DELETE", apiKey: a.clientKey }),
      401,
    );
    expectError(
      await apiJson(admin(a, `/events?before=${boundary}`), {
        method: "DELETE",
        headers: endUserHeaders(a.clientKey, aUser.sessionToken),
      }),
      401,
    );
    // `before` is required and an instant; `name` is an event name.
    expectError(await purge(a, ""), 400, "before");
    expectError(await purge(a, "before=yesterday"), 400, "before");
    expectError(await purge(a, "before=2026-01-02T03:04:05"), 400, "before");
    expectError(await purge(a, `before=${boundary}&name=has%20space`), 400, "name");
    expect(await stored(a.projectId)).toEqual(aBefore);

    // Only the older "old": the newer one and "keep" stay.
    const named = await purge(a, `before=${boundary}&name=old`);
    expect(named.status, JSON.stringify(named.body)).toBe(200);
    expect(named.body).toEqual({ deleted: 1, more: false, freed_bytes: 3 + 2 + EVENT_ROW_OVERHEAD_BYTES });
    const listed = await apiJson(admin(a, "/events"), { token: a.token });
    expect(listed.body.events.map((e: { name: string }) => e.name)).toEqual(["old", "keep"]);
    const after = await stored(a.projectId);
    expect(after.count).toBe(2);
    expect(after.counted).toBe(after.recomputed);
    expect(after.counted).toBe(aBefore.counted - named.body.freed_bytes);
    expect((await purge(a, `before=${boundary}`)).body).toMatchObject({ deleted: 1, more: false });
    expect((await purge(a, `before=${boundary}`)).body).toEqual({ deleted: 0, more: false, freed_bytes: 0 });
    // The other project's events are untouched.
    expect(await stored(b.projectId)).toEqual(bBefore);
  });

  it(`deletes at most ${MAX_EVENTS_DELETED} events a request and says whether more match`, async () => {
    const dev = await signupDeveloper();
    // 10,005 events of 1970 (ids of millisecond 0), written directly with their counter row.
    await testDb().execute(sql`
      insert into app_events (id, project_id, name, properties, occurred_at, size_bytes)
      select ('00000000-0000-7000-8000-' || lpad(to_hex(i), 12, '0'))::uuid, ${dev.projectId}::uuid,
        'bulk', jsonb_build_object('i', i), now(),
        octet_length('bulk') + octet_length(jsonb_build_object('i', i)::text) + ${EVENT_ROW_OVERHEAD_BYTES}::int
      from generate_series(1, ${MAX_EVENTS_DELETED + 5}::int) as i`);
    await testDb().execute(sql`
      insert into app_event_bytes (project_id, shard, bytes)
      select project_id, 0, sum(size_bytes) from app_events where project_id = ${dev.projectId}::uuid
      group by project_id`);
    const full = await stored(dev.projectId);
    expect(full.count).toBe(MAX_EVENTS_DELETED + 5);
    expect(full.counted).toBe(full.recomputed);

    const now = encodeURIComponent(new Date().toISOString());
    const first = await purge(dev, `before=${now}`);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body).toMatchObject({ deleted: MAX_EVENTS_DELETED, more: true });
    const rest = await purge(dev, `before=${now}`);
    expect(rest.body).toMatchObject({ deleted: 5, more: false });
    expect(first.body.freed_bytes + rest.body.freed_bytes).toBe(full.counted);
    expect(await stored(dev.projectId)).toEqual({ count: 0, recomputed: 0, counted: 0 });
  }, 60_000);

  it("keeps the counter exact under concurrent ingests and deletes", async () => {
    const dev = await signupDeveloper();
    const user = await signupUser(dev.projectId, dev.clientKey);
    const base = (await usage(dev)).storage_bytes as number;
    // 20 batches of 50 at once, of varied sizes and names (a third with the end user's session).
    const batch = (n: number) => ({
      events: Array.from({ length: 50 }, (_, i) => ({
        name: i % 2 ? "odd" : "even",
        properties: { n, i, pad: "é".repeat((n * 50 + i) % 300) },
      })),
    });
    const sent = await Promise.all(
      Array.from({ length: 20 }, (_, n) => send(dev, batch(n), n % 3 === 0 ? user.sessionToken : undefined)),
    );
    for (const res of sent) expect(res.status, JSON.stringify(res.body)).toBe(201);
    const full = await stored(dev.projectId);
    expect(full.count).toBe(1000);
    expect(full.counted).toBe(full.recomputed);
    expect((await usage(dev)).storage_bytes).toBe(base + full.counted);

    // Ingests and deletes (two of them on the same events) at once.
    const future = encodeURIComponent(new Date(Date.now() + 60_000).toISOString());
    const mixed = await Promise.all([
      ...Array.from({ length: 10 }, (_, n) => send(dev, batch(100 + n))),
      purge(dev, `before=${future}&name=even`),
      purge(dev, `before=${future}&name=even`),
    ]);
    for (const res of mixed) expect([200, 201], JSON.stringify(res.body)).toContain(res.status);
    const after = await stored(dev.projectId);
    expect(after.counted).toBe(after.recomputed);
    expect((await usage(dev)).storage_bytes).toBe(base + after.counted);
    // Each "even" event (500 before, 250 sent meanwhile) was deleted once or is still there.
    const { rows } = await testDb().execute(
      sql`select count(*)::int as n from app_events where project_id = ${dev.projectId}::uuid and name = 'even'`,
    );
    const deleted = mixed.slice(10).reduce((sum, res) => sum + (res.body.deleted as number), 0);
    expect(deleted + Number((rows[0] as { n: number }).n)).toBe(750);
  }, 60_000);
});
