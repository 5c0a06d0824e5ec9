/**
 * The limits that bound one request's Worker CPU (`npm run bench -- cpuworst`, BENCHMARKS.md
 * "Worst-case CPU per request"): each is refused with its 4xx / JSON-RPC error before the expensive
 * step — a `where`'s budgets before the schema walks it, JSON nesting before `JSON.parse`. No timings here: the refusals and their
 * messages are what is tested.
 */
import { beforeAll, describe, expect, it } from "vitest";
import {
  api,
  apiJson,
  developerExposing,
  mcpPostHeaders,
  mcpToolCall,
  type TestDeveloper,
} from "./helpers.ts";

const FOODS = {
  name: "foods",
  columns: [
    { name: "title", type: "text" },
    { name: "calories", type: "integer" },
  ],
  access: { read: "public", write: "owner" },
};

/** `n` conditions under one `or`, each with an operand the schema refuses (a string for an integer). */
const invalidConditions = (n: number) => ({
  or: Array.from({ length: n }, () => ({ calories: { gte: "many" } })),
});

describe("CPU bounds: limits checked before the expensive step", () => {
  let dev: TestDeveloper;
  let find: string;
  let mcpUrl: string;

  beforeAll(async () => {
    dev = await developerExposing(FOODS);
    find = `/v1/projects/${dev.projectId}/collections/foods/find`;
    mcpUrl = `/app/${dev.projectId}/mcp`;
  });

  it("refuses a where over its condition budget before the schema parses it (REST 400, MCP isError)", async () => {
    // 5,000 invalid conditions: the schema would report the first invalid operand; the budget
    // (100 conditions) is what answers, so the schema never walked them.
    const rest = await apiJson(find, { token: dev.token, json: { where: invalidConditions(5_000) } });
    expect(rest.status).toBe(400);
    expect(rest.body.error).toEqual({
      code: "invalid_input",
      message: "where.or.100: more than 100 conditions",
    });
    const call = await mcpToolCall(mcpUrl, dev.token, "foods_find", { where: invalidConditions(5_000) });
    expect(call.status).toBe(200);
    expect(call.body.result.isError).toBe(true);
    expect(call.body.result.content[0].text).toContain("where.or.100: more than 100 conditions");
    // Within the budget the schema still speaks.
    const few = await apiJson(find, { token: dev.token, json: { where: invalidConditions(3) } });
    expect(few.status).toBe(400);
    expect(few.body.error.message).toMatch(/^where\.or\.0\.calories/);
  });

  it("refuses list values over the where's budget before the schema parses them", async () => {
    const lists = { or: [{ title: { in: Array(600).fill(0) } }, { title: { nin: Array(401).fill(0) } }] };
    const rest = await apiJson(find, { token: dev.token, json: { where: lists } });
    expect(rest.status).toBe(400);
    expect(rest.body.error.message).toMatch(/^where\.or\.1\.title\.nin: .* at most 1000 values in total/);
  });

  it("refuses JSON nested deeper than 16,384 levels before parsing it (REST 400, MCP -32600)", async () => {
    const deep = `{"where":${'{"not":'.repeat(16_400)}{}${"}".repeat(16_400)}}`;
    const rest = await apiJson(find, {
      method: "POST",
      body: deep,
      headers: { authorization: `Bearer ${dev.token}`, "content-type": "application/json" },
    });
    expect(rest.status).toBe(400);
    expect(rest.body.error).toEqual({
      code: "invalid_input",
      message: "body: nested deeper than 16384 levels",
    });
    const res = await api(mcpUrl, {
      method: "POST",
      headers: mcpPostHeaders(dev.token),
      body: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":${"[".repeat(20_000)}${"]".repeat(20_000)}}}`,
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: unknown }).error).toEqual({
      code: -32600,
      message: "Invalid Request: JSON nested deeper than 16384 levels",
    });
  });
});
