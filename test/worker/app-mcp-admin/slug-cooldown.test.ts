/**
 * The hostname slug cooldown (released_slugs, migrations 0009 and 0010): a slug given up by a project
 * — set to null, changed, or the project deleted — cannot be claimed by another developer's project
 * for 30 days, over REST or the platform MCP; the developer who released it takes it back at once,
 * for any of their projects; a record older than 30 days is ignored (and purged by a later release).
 */

import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectClient, resultJson } from "../app-mcp/mcp-client.ts";
import {
  apiJson,
  expectError,
  type JsonResponse,
  signupDeveloper,
  type TestDeveloper,
  testDb,
} from "../helpers.ts";

const configPath = (projectId: string) => `/v1/admin/projects/${projectId}/app-mcp/config`;
const patch = (dev: TestDeveloper, json: unknown, projectId = dev.projectId) =>
  apiJson(configPath(projectId), { token: dev.token, method: "PATCH", json });
const slugOf = (tag: string) => `${tag}-${crypto.randomUUID().slice(0, 8)}`;

/** The stored release record of `slug`: holder and the second it becomes free (null when none). */
async function record(
  slug: string,
): Promise<{ projectId: string; developerId: string | null; freeAt: number } | null> {
  const { rows } = await testDb().execute(
    sql`SELECT project_id, developer_id, floor(extract(epoch FROM released_at + interval '30 days'))::bigint AS free_at
      FROM released_slugs WHERE slug = ${slug}`,
  );
  const row = rows[0] as { project_id: string; developer_id: string | null; free_at: string } | undefined;
  return row
    ? { projectId: row.project_id, developerId: row.developer_id, freeAt: Number(row.free_at) }
    : null;
}

/** Asserts a 409 for a reserved slug whose "reserved until" time is the record's release + 30 days. */
async function expectReserved(res: JsonResponse, slug: string): Promise<void> {
  expectError(res, 409, `slug "${slug}" was released recently by another developer and is reserved until `);
  expect(res.body.error.code).toBe("conflict");
  const until = /reserved until (\S+)$/.exec(res.body.error.message)?.[1] ?? "";
  expect(until).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  expect(Date.parse(until) / 1000).toBe((await record(slug))?.freeAt);
}

describe("hostname slug cooldown", () => {
  let first: TestDeveloper;
  let second: TestDeveloper;
  let mcp: Client;

  beforeAll(async () => {
    [first, second] = await Promise.all([signupDeveloper(), signupDeveloper()]);
    mcp = await connectClient("http://local/mcp", { authorization: `Bearer ${second.token}` });
  });
  afterAll(() => mcp.close());

  it("a released slug is reserved for its project: others get 409 over REST and the platform MCP", async () => {
    const slug = slugOf("cool");
    expect((await patch(first, { slug })).status).toBe(200);
    expect(await record(slug)).toBeNull();
    expect((await patch(first, { slug: null })).body.slug).toBeNull();
    expect(await record(slug)).toMatchObject({ projectId: first.projectId, developerId: first.developerId });

    await expectReserved(await patch(second, { slug }), slug);
    expect((await apiJson(configPath(second.projectId), { token: second.token })).body.slug).toBeNull();
    const viaMcp = await mcp.callTool({
      name: "amba_app_mcp_update_config",
      arguments: { project_id: second.projectId, slug },
    });
    expect(viaMcp.isError).toBe(true);
    expect(resultJson(viaMcp).error).toEqual({
      code: "conflict",
      message: expect.stringContaining(`slug "${slug}" was released recently by another developer`),
    });

    // The project that released it takes it back at once, which clears the record.
    const back = await patch(first, { slug });
    expect(back.status).toBe(200);
    expect(back.body.slug).toBe(slug);
    expect(await record(slug)).toBeNull();
    expectError(await patch(second, { slug }), 409, `slug "${slug}" is already taken`);
  });

  it("changing to another slug reserves the old one", async () => {
    const [old, next] = [slugOf("old"), slugOf("next")];
    expect((await patch(first, { slug: old })).status).toBe(200);
    expect((await patch(first, { slug: next })).body.slug).toBe(next);
    await expectReserved(await patch(second, { slug: old }), old);
    // Back to the old one: that one's record goes, the one given up now is reserved.
    expect((await patch(first, { slug: old })).body.slug).toBe(old);
    expect(await record(old)).toBeNull();
    await expectReserved(await patch(second, { slug: next }), next);
  });

  it("deleting the project reserves its slug from other developers; its developer takes it for another project at once", async () => {
    const slug = slugOf("gone");
    const created = await apiJson("/v1/admin/projects", { token: first.token, json: { name: "Doomed" } });
    expect(created.status).toBe(201);
    expect((await patch(first, { slug }, created.body.id)).status).toBe(200);
    const deleted = await apiJson(`/v1/admin/projects/${created.body.id}`, {
      token: first.token,
      method: "DELETE",
    });
    expect(deleted.status).toBe(200);
    expect(await record(slug)).toMatchObject({ projectId: created.body.id, developerId: first.developerId });
    await expectReserved(await patch(second, { slug }), slug);
    // The project deleted and made again: its developer's other project claims the hostname at once.
    const again = await patch(first, { slug });
    expect(again.status).toBe(200);
    expect(again.body.slug).toBe(slug);
    expect(await record(slug)).toBeNull();
  });

  it("a developer moves a hostname between their own projects at once", async () => {
    const slug = slugOf("move");
    const other = await apiJson("/v1/admin/projects", { token: second.token, json: { name: "Other" } });
    expect(other.status).toBe(201);
    expect((await patch(second, { slug })).status).toBe(200);
    expect((await patch(second, { slug: null })).status).toBe(200);
    expect((await patch(second, { slug }, other.body.id)).body.slug).toBe(slug);
    // Given up there too: still the developer's, not the first developer's.
    expect((await patch(second, { slug: null }, other.body.id)).status).toBe(200);
    await expectReserved(await patch(first, { slug }), slug);
  });

  it("a record older than 30 days is ignored and purged by a later release", async () => {
    const [stale, fresh, purged] = [slugOf("stale"), slugOf("fresh"), slugOf("purged")];
    await testDb().execute(sql`INSERT INTO released_slugs (slug, project_id, released_at) VALUES
      (${stale}, ${first.projectId}::uuid, now() - interval '31 days'),
      (${fresh}, ${first.projectId}::uuid, now() - interval '29 days'),
      (${purged}, ${first.projectId}::uuid, now() - interval '31 days')`);
    await expectReserved(await patch(second, { slug: fresh }), fresh);
    expect((await patch(second, { slug: stale })).body.slug).toBe(stale);
    expect(await record(stale)).toBeNull();

    // A release purges records past their 30 days (the claim above did not touch `purged`).
    expect(await record(purged)).not.toBeNull();
    expect((await patch(second, { slug: null })).status).toBe(200);
    expect(await record(purged)).toBeNull();
    expect((await record(stale))?.projectId).toBe(second.projectId);
  });
});
