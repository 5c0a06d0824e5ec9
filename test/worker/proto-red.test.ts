/**
 * Names, keys and numbers that collide with JavaScript object machinery (`__proto__`, `constructor`,
 * non-finite numbers) sent to the data routes and the app MCP. The first test is the regression test
 * of a hole this red-team pass found (it failed before its fix); the others pin what was already
 * refused, on both surfaces, so a later refactor to plain-object lookups shows up here.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { createCollection, type DataProject, data, dataProject, find } from "./data/fixtures.ts";
import { api, apiJson, expectError, mcpPostHeaders } from "./helpers.ts";

describe("proto red team", () => {
  let p: DataProject;
  let mcp: string;
  const call = async (body: string) => {
    const res = await api(mcp, { method: "POST", headers: mcpPostHeaders(p.dev.token), body });
    expect(res.status).toBe(200);
    return (await res.json()) as { id: unknown; result?: any; error?: { code: number; message: string } };
  };
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
});
