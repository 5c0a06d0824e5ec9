/**
 * `amba_events_list` through the official MCP SDK client: the platform MCP's read of a project's
 * events, answered by the very `listEvents` the REST listing (`GET /v1/admin/projects/:id/events`)
 * calls — same pages, same cursor, same refusals — and another developer's project is the same
 * "project not found" as every other project tool.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { encodeCursor } from "../../../src/data/cursor.ts";
import { connectClient, resultJson } from "../app-mcp/mcp-client.ts";
import { apiJson, signupDeveloper, type TestDeveloper } from "../helpers.ts";

const MCP_URL = "http://local/mcp";
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

let dev: TestDeveloper;
let other: TestDeveloper;
let client: Client;

/** The REST listing's answer for `query`. */
const rest = (query: string, as = dev) =>
  apiJson(`/v1/admin/projects/${dev.projectId}/events${query}`, { token: as.token });

/** A tool call's `{isError, body}` (body = the text content, which must equal structuredContent). */
// biome-ignore lint/suspicious/noExplicitAny: tests assert the shape
async function call(args: Record<string, unknown>, on = client): Promise<{ isError: unknown; body: any }> {
  const result = await on.callTool({ name: "amba_events_list", arguments: args });
  const body = resultJson(result);
  expect(result.structuredContent).toEqual(body);
  return { isError: result.isError, body };
}

beforeAll(async () => {
  [dev, other] = await Promise.all([signupDeveloper(), signupDeveloper()]);
  const names = ["signup", "opened", "signup", "opened", "signup"];
  const sent = await apiJson("/v1/events", {
    apiKey: dev.clientKey,
    json: { events: names.map((name, i) => ({ name, properties: { i, note: `event ${i}` } })) },
  });
  expect(sent.status, JSON.stringify(sent.body)).toBe(201);
  client = await connectClient(MCP_URL, bearer(dev.token));
});
afterAll(() => client.close());

describe("amba_events_list", () => {
  it("is listed read-only with project_id, limit, cursor and name", async () => {
    const { tools } = await client.listTools();
    const tool = tools.find((t) => t.name === "amba_events_list");
    expect(tool).toBeDefined();
    expect(tool!.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false });
    expect(tool!.description).toContain("GET /v1/admin/projects/:id/events");
    expect(tool!.inputSchema).toMatchObject({
      type: "object",
      properties: {
        project_id: { type: "string" },
        limit: { type: "integer", minimum: 1, maximum: 100 },
        cursor: { type: "string" },
        name: { type: "string" },
      },
      required: [],
      additionalProperties: false,
    });
  });

  it("pages newest first with a cursor, exactly as the REST listing pages", async () => {
    const seen: number[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const args: Record<string, unknown> = { project_id: dev.projectId, limit: 2 };
      if (cursor) args.cursor = cursor;
      const { isError, body } = await call(args);
      expect(isError, JSON.stringify(body)).toBe(false);
      const query: string = cursor ? `?limit=2&cursor=${encodeURIComponent(cursor)}` : "?limit=2";
      expect(body).toEqual((await rest(query)).body);
      seen.push(...body.events.map((e: { properties: { i: number } }) => e.properties.i));
      cursor = body.next_cursor;
      pages++;
    } while (cursor !== null && pages < 10);
    expect(seen).toEqual([4, 3, 2, 1, 0]);
    expect(pages).toBe(3);

    // Filtered by name; project_id left out means the developer's only project.
    const { body } = await call({ name: "signup" });
    expect(body.events.map((e: { properties: { i: number } }) => e.properties.i)).toEqual([4, 2, 0]);
    expect(body.events[0]).toEqual({
      id: expect.any(String),
      name: "signup",
      properties: { i: 4, note: "event 4" },
      user_id: null,
      occurred_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
      received_at: expect.stringMatching(/Z$/),
    });
    expect(body.next_cursor).toBeNull();
  });

  it("refuses a bad cursor, limit or name with the REST listing's invalid_input", async () => {
    for (const [args, query] of [
      [{ cursor: "nonsense" }, "?cursor=nonsense"],
      [{ limit: 0 }, "?limit=0"],
      [{ limit: 101 }, "?limit=101"],
      [{ name: "has space" }, "?name=has%20space"],
    ] as const) {
      const restAnswer = await rest(query);
      expect(restAnswer.status).toBe(400);
      const { isError, body } = await call({ project_id: dev.projectId, ...args });
      expect(isError).toBe(true);
      expect(body).toEqual(restAnswer.body);
      expect(body.error.code).toBe("invalid_input");
    }
    // A cursor of another listing (a collection's) is no cursor of this one.
    const foreignCursor = encodeCursor({ order: "created_at desc", value: null, id: crypto.randomUUID() });
    const { body } = await call({ cursor: foreignCursor });
    expect(body.error).toEqual({ code: "invalid_input", message: expect.stringMatching(/^cursor: /) });
  });

  it("answers another developer's project as not found, as REST and the other tools do", async () => {
    const theirs = await connectClient(MCP_URL, bearer(other.token));
    try {
      const foreign = await rest("", other);
      expect(foreign.status).toBe(404);
      const { isError, body } = await call({ project_id: dev.projectId }, theirs);
      expect(isError).toBe(true);
      expect(body).toEqual(foreign.body);
      const collections = await theirs.callTool({
        name: "amba_collections_list",
        arguments: { project_id: dev.projectId },
      });
      expect(resultJson(collections)).toEqual(body);
      expect((await call({ project_id: "not-a-uuid" }, theirs)).body).toEqual(foreign.body);
      // Their own project's events are theirs alone: none.
      expect((await call({ project_id: other.projectId }, theirs)).body).toEqual({
        events: [],
        next_cursor: null,
      });
    } finally {
      await theirs.close();
    }
  });
});
