/**
 * Names, keys and numbers that collide with JavaScript object machinery (`__proto__`, `constructor`,
 * non-finite numbers) sent to the data routes and the app MCP. The first test is the regression test
 * of a hole this red-team pass found (it failed before its fix); the others pin what was already
 * refused, on both surfaces, so a later refactor to plain-object lookups shows up here.
 */
import { beforeAll, describe, expect, inject, it } from "vitest";
import { createCollection, type DataProject, dataProject, find } from "./data/fixtures.ts";
import { api, apiJson, mcpPostHeaders } from "./helpers.ts";

type Answer = { id: unknown; result?: unknown; error?: { code: number; message: string } };

describe("proto red team", () => {
  let p: DataProject;
  let mcp: string;
  const call = async (body: string) => {
    const res = await api(mcp, { method: "POST", headers: mcpPostHeaders(p.dev.token), body });
    expect(res.status).toBe(200);
    return (await res.json()) as Answer;
  };
  const endUser = () => ("headers" in p.userA ? p.userA.headers : {});
  const tool = (name: string, args: string, id = "1") =>
    `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"${name}","arguments":${args}}}`;

  beforeAll(async () => {
    p = await dataProject();
    mcp = `/app/${p.dev.projectId}/mcp`;
    await createCollection(p, {
      name: "constructor",
      columns: [
        { name: "title", type: "text", required: true },
        { name: "prototype", type: "text" },
      ],
    });
    const exposed = await apiJson(`/v1/admin/projects/${p.dev.projectId}/app-mcp/exposure`, {
      token: p.dev.token,
      method: "PUT",
      json: { collections: ["constructor"] },
    });
    expect(exposed.status).toBe(200);
  });

  it("refuses a request whose id is not a finite number (1e400 ran the call and answered id null: no client could match it)", async () => {
    const answer = await call(tool("constructor_insert", '{"title":"infinite id"}', "1e400"));
    expect(answer.id).toBeNull();
    expect(answer.error?.code).toBe(-32600);
    expect((await find(p, p.developer, "constructor", { where: { title: "infinite id" } })).rows).toEqual([]);
  });

  it("stores event properties named constructor, prototype and __proto__ (valibot's record dropped them silently)", async () => {
    const properties = '{"constructor":"c","prototype":"p","__proto__":{"a":1},"plan":"pro"}';
    const sent = await apiJson("/v1/events", {
      apiKey: p.dev.clientKey,
      json: JSON.parse(`{"name":"proto.probe","properties":${properties}}`),
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(201);
    const listed = await apiJson(`/v1/admin/projects/${p.dev.projectId}/events?name=proto.probe`, {
      token: p.dev.token,
    });
    expect(listed.status).toBe(200);
    expect(listed.body.events).toHaveLength(1);
    expect(listed.body.events[0].properties).toEqual(JSON.parse(properties));
  });

  it("forwards function arguments named constructor, prototype and __proto__ that the input schema leaves open (they were dropped)", async () => {
    const deployed = await apiJson(`/v1/admin/projects/${p.dev.projectId}/functions/deploy`, {
      token: p.dev.token,
      json: {
        name: "tagger",
        url: `${inject("echoUrl")}/tag`,
        mcp: {
          description: "Tags a thing.",
          input_schema: {
            type: "object",
            properties: { title: { type: "string" }, meta: { type: "object" } },
            required: ["title"],
          },
        },
      },
    });
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(201);
    const args =
      '{"title":"t","constructor":"c","prototype":"p","meta":{"constructor":1,"__proto__":{"x":1}}}';
    const res = await apiJson(`/v1/projects/${p.dev.projectId}/functions/tagger/invoke`, {
      headers: endUser(),
      json: JSON.parse(args),
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.body).toEqual(JSON.parse(args));
    // Still validated: the required `title` is not found on a prototype.
    const missing = await apiJson(`/v1/projects/${p.dev.projectId}/functions/tagger/invoke`, {
      headers: endUser(),
      json: JSON.parse('{"__proto__":{"title":"t"}}'),
    });
    expect(missing.status).toBe(400);
  });

  it("forwards query parameters named constructor, prototype and __proto__ of a schemaless function (they were dropped)", async () => {
    const deployed = await apiJson(`/v1/admin/projects/${p.dev.projectId}/functions/deploy`, {
      token: p.dev.token,
      json: { name: "raw_query", url: `${inject("echoUrl")}/raw` },
    });
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(201);
    const invoke = (json: string) =>
      apiJson(`/v1/projects/${p.dev.projectId}/functions/raw_query/invoke`, {
        headers: endUser(),
        json: JSON.parse(json),
      });
    const res = await invoke('{"query":{"constructor":"c","prototype":1,"__proto__":true,"q":"x"}}');
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.query).toEqual(
      JSON.parse('{"constructor":"c","prototype":"1","__proto__":"true","q":"x"}'),
    );
    // Their values are checked like any other parameter's (an object was sent as "[object Object]").
    const nested = await invoke('{"query":{"constructor":{"a":1}}}');
    expect(nested.status).toBe(400);
    expect(nested.body.error.message).toContain("query.constructor");
  });
});
