/**
 * `amba_events_delete` through the official MCP SDK client: the platform MCP's bounded delete of a
 * project's events, answered by the very `deleteEvents` the REST delete
 * (`DELETE /v1/admin/projects/:id/events?before=&name=`) calls — same `{deleted, more, freed_bytes}`,
 * same batches of at most `MAX_EVENTS_DELETED`, same refusals — and another developer's project is
 * the same "project not found" as every other project tool.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EVENT_ROW_OVERHEAD_BYTES, MAX_EVENTS_DELETED } from "../../../src/events/service.ts";
import { connectClient, resultJson } from "../app-mcp/mcp-client.ts";
import { apiJson, signupDeveloper, type TestDeveloper, testDb } from "../helpers.ts";

const MCP_URL = "http://local/mcp";
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
/** Past every event these tests send (events received before it are deleted). */
const FUTURE = "2999-01-01T00:00:00Z";

let dev: TestDeveloper;
let other: TestDeveloper;
let client: Client;

const admin = (as: TestDeveloper, projectId = as.projectId) => `/v1/admin/projects/${projectId}/events`;

/** The REST delete's answer for `query`, as `as` (default: the project's developer). */
const restDelete = (query: string, as = dev, projectId = dev.projectId) =>
  apiJson(`${admin(as, projectId)}?${query}`, { token: as.token, method: "DELETE" });

/** The names of the project's events (REST listing, newest first). */
const names = async (as = dev) =>
  (await apiJson(`${admin(as)}?limit=100`, { token: as.token })).body.events.map(
    (e: { name: string }) => e.name,
  ) as string[];

/** A tool call's `{isError, body}` (body = the text content, which must equal structuredContent). */
// biome-ignore lint/suspicious/noExplicitAny: tests assert the shape
async function call(args: Record<string, unknown>, on = client): Promise<{ isError: unknown; body: any }> {
  const result = await on.callTool({ name: "amba_events_delete", arguments: args });
  const body = resultJson(result);
  expect(result.structuredContent).toEqual(body);
  return { isError: result.isError, body };
}

/** Send `list` as events of `as`'s project (no properties: each counts its name + 2 + the overhead). */
async function send(as: TestDeveloper, list: string[]): Promise<void> {
  const sent = await apiJson("/v1/events", {
    apiKey: as.clientKey,
    json: { events: list.map((name) => ({ name })) },
  });
  expect(sent.status, JSON.stringify(sent.body)).toBe(201);
}

beforeAll(async () => {
  [dev, other] = await Promise.all([signupDeveloper(), signupDeveloper()]);
  client = await connectClient(MCP_URL, bearer(dev.token));
});
afterAll(() => client.close());

describe("amba_events_delete", () => {
  it("is listed destructive and idempotent, with project_id, a required before and name", async () => {
    const { tools } = await client.listTools();
    const tool = tools.find((t) => t.name === "amba_events_delete");
    expect(tool).toBeDefined();
    expect(tool!.annotations).toMatchObject({
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: true,
      openWorldHint: false,
    });
    expect(tool!.description).toContain("DELETE /v1/admin/projects/:id/events");
    expect(tool!.inputSchema).toMatchObject({
      type: "object",
      properties: {
        project_id: { type: "string" },
        before: { type: "string", description: expect.stringContaining("ISO-8601") },
        name: { type: "string" },
      },
      required: ["before"],
      additionalProperties: false,
    });
    // Right after amba_events_list.
    const order = tools.map((t) => t.name);
    expect(order.indexOf("amba_events_delete")).toBe(order.indexOf("amba_events_list") + 1);
  });

  it("deletes by name and before, answering what the REST delete answers", async () => {
    await send(dev, ["signup", "opened", "signup", "opened", "signup"]);
    const signup = "signup".length + 2 + EVENT_ROW_OVERHEAD_BYTES;
    const { isError, body } = await call({ project_id: dev.projectId, before: FUTURE, name: "signup" });
    expect(isError, JSON.stringify(body)).toBe(false);
    expect(body).toEqual({ deleted: 3, more: false, freed_bytes: 3 * signup });
    expect(await names()).toEqual(["opened", "opened"]);

    // Repeating it deletes what is left: nothing — exactly the REST delete's answer then.
    const again = await call({ before: FUTURE, name: "signup" });
    expect(again.body).toEqual({ deleted: 0, more: false, freed_bytes: 0 });
    expect((await restDelete(`before=${FUTURE}&name=signup`)).body).toEqual(again.body);

    // Events received after `before` stay; project_id left out means the only project.
    expect((await call({ before: "2020-01-01T00:00:00Z" })).body).toEqual({
      deleted: 0,
      more: false,
      freed_bytes: 0,
    });
    expect(await names()).toEqual(["opened", "opened"]);
    const opened = "opened".length + 2 + EVENT_ROW_OVERHEAD_BYTES;
    expect((await call({ before: FUTURE })).body).toEqual({
      deleted: 2,
      more: false,
      freed_bytes: 2 * opened,
    });
    expect(await names()).toEqual([]);
  });

  it(`deletes at most ${MAX_EVENTS_DELETED} a call and says more, then the rest`, async () => {
    const bulk = await signupDeveloper();
    // One event received now, which a `before` of 2000 leaves alone (sent first: the bulk below
    // takes the project close to the tests' 2 MiB quota), then 10,005 events of 1970 (ids of
    // millisecond 0), written directly with their counter row.
    await send(bulk, ["recent"]);
    await testDb().execute(sql`
      insert into app_events (id, project_id, name, properties, occurred_at, size_bytes)
      select ('00000000-0000-7000-8000-' || lpad(to_hex(i), 12, '0'))::uuid, ${bulk.projectId}::uuid,
        'bulk', '{}'::jsonb, now(), ${"bulk".length + 2 + EVENT_ROW_OVERHEAD_BYTES}::int
      from generate_series(1, ${MAX_EVENTS_DELETED + 5}::int) as i`);
    await testDb().execute(sql`
      insert into app_event_bytes (project_id, shard, bytes)
      select project_id, 0, sum(size_bytes) from app_events
      where project_id = ${bulk.projectId}::uuid and name = 'bulk'
      group by project_id
      on conflict (project_id, shard) do update set bytes = app_event_bytes.bytes + excluded.bytes`);
    const theirs = await connectClient(MCP_URL, bearer(bulk.token));
    try {
      const each = "bulk".length + 2 + EVENT_ROW_OVERHEAD_BYTES;
      const args = { project_id: bulk.projectId, before: "2000-01-01T00:00:00Z" };
      expect((await call(args, theirs)).body).toEqual({
        deleted: MAX_EVENTS_DELETED,
        more: true,
        freed_bytes: MAX_EVENTS_DELETED * each,
      });
      expect((await call(args, theirs)).body).toEqual({ deleted: 5, more: false, freed_bytes: 5 * each });
      expect((await call(args, theirs)).body).toEqual({ deleted: 0, more: false, freed_bytes: 0 });
      expect(await names(bulk)).toEqual(["recent"]);
    } finally {
      await theirs.close();
    }
  }, 60_000);

  it("refuses a bad before or name with the REST delete's invalid_input, deleting nothing", async () => {
    await send(dev, ["kept"]);
    for (const [args, query] of [
      [{ before: "yesterday" }, "before=yesterday"],
      [{ before: "2026-01-02T03:04:05" }, "before=2026-01-02T03:04:05"],
      [{ before: "2026-02-30T00:00:00Z" }, "before=2026-02-30T00:00:00Z"],
      [{ before: "" }, "before="],
      [{ before: FUTURE, name: "has space" }, `before=${FUTURE}&name=has%20space`],
    ] as const) {
      const restAnswer = await restDelete(query);
      expect(restAnswer.status, query).toBe(400);
      const { isError, body } = await call({ project_id: dev.projectId, ...args });
      expect(isError).toBe(true);
      expect(body).toEqual(restAnswer.body);
      expect(body.error.code).toBe("invalid_input");
    }
    // Left out, it is a required argument, named like any other tool's.
    const missing = await call({ project_id: dev.projectId });
    expect(missing.isError).toBe(true);
    expect(missing.body.error).toEqual({ code: "invalid_input", message: "before: is required" });
    expect(await names()).toEqual(["kept"]);
  });

  it("answers another developer's project as not found, as REST and the other tools do", async () => {
    await send(dev, ["mine"]);
    const before = await names();
    const theirs = await connectClient(MCP_URL, bearer(other.token));
    try {
      const foreign = await restDelete(`before=${FUTURE}`, other);
      expect(foreign.status).toBe(404);
      const { isError, body } = await call({ project_id: dev.projectId, before: FUTURE }, theirs);
      expect(isError).toBe(true);
      expect(body).toEqual(foreign.body);
      const collections = await theirs.callTool({
        name: "amba_collections_list",
        arguments: { project_id: dev.projectId },
      });
      expect(resultJson(collections)).toEqual(body);
      expect((await call({ project_id: "not-a-uuid", before: FUTURE }, theirs)).body).toEqual(foreign.body);
      // Their own project: nothing of this one's is theirs to delete.
      expect((await call({ project_id: other.projectId, before: FUTURE }, theirs)).body).toEqual({
        deleted: 0,
        more: false,
        freed_bytes: 0,
      });
    } finally {
      await theirs.close();
    }
    expect(await names()).toEqual(before);
  });
});
