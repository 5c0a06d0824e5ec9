/**
 * Issue 8, findings 5 and 11 in the protocol core: batches of at most 100 messages run with
 * bounded concurrency; the prompt/resource lists are a per-server choice (the CLI keeps them).
 */
import { describe, expect, it } from "vitest";
import {
  createMcpHandlers,
  dispatch,
  dispatchPayload,
  type Handlers,
  handleMcpHttpRequest,
  INVALID_REQUEST,
  MAX_BATCH_MESSAGES,
  METHOD_NOT_FOUND,
} from "../../src/mcp/index.ts";

describe("batches", () => {
  it("refuses more than 100 messages with one -32600 and runs none of them", async () => {
    let ran = 0;
    const handlers: Handlers<null> = {
      work: () => {
        ran++;
        return ran;
      },
    };
    const batch = (n: number) =>
      Array.from({ length: n }, (_, id) => ({ jsonrpc: "2.0", id, method: "work" }));
    const refused = await dispatchPayload(batch(MAX_BATCH_MESSAGES + 1), handlers, null);
    expect(refused).toMatchObject({ id: null, error: { code: INVALID_REQUEST } });
    expect(ran).toBe(0);
    const served = await dispatchPayload(batch(MAX_BATCH_MESSAGES), handlers, null);
    expect(served).toHaveLength(100);
    expect(ran).toBe(100);
  });

  it("runs at most 6 messages of an HTTP batch at once, answering in message order", async () => {
    let inFlight = 0;
    let peak = 0;
    const handlers: Handlers<null> = {
      async slow(params) {
        inFlight++;
        peak = Math.max(peak, inFlight);
        await new Promise((resolve) => setTimeout(resolve, 2));
        inFlight--;
        return params;
      },
    };
    const body = Array.from({ length: 40 }, (_, id) => ({
      jsonrpc: "2.0",
      id,
      method: "slow",
      params: { id },
    }));
    const res = await handleMcpHttpRequest(
      new Request("http://x/mcp", {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify(body),
      }),
      { handlers, ctx: null },
    );
    const answers = (await res.json()) as Array<{ id: number; result: { id: number } }>;
    expect(answers.map((a) => a.id)).toEqual([...Array(40).keys()]);
    expect(answers.every((a) => a.result.id === a.id)).toBe(true);
    expect(peak).toBe(6);
  });
});

describe("declared capabilities", () => {
  const init = {
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
  };
  const tools = { list: () => [], call: async () => ({ value: null }) };

  it("keeps tools, prompts and resources by default (amber session's contract)", async () => {
    const handlers = createMcpHandlers({ serverInfo: { name: "s", version: "1" }, tools });
    const res = await dispatch(init, handlers, null);
    expect(res).toMatchObject({ result: { capabilities: { tools: {}, prompts: {}, resources: {} } } });
    expect(await dispatch({ jsonrpc: "2.0", id: 2, method: "resources/list" }, handlers, null)).toMatchObject(
      {
        result: { resources: [] },
      },
    );
  });

  it("declares and answers only tools when a server offers no lists", async () => {
    const handlers = createMcpHandlers({ serverInfo: { name: "s", version: "1" }, tools, lists: [] });
    const res = await dispatch(init, handlers, null);
    expect(res).toMatchObject({ result: { capabilities: { tools: {} } } });
    expect((res as { result: { capabilities: object } }).result.capabilities).toEqual({ tools: {} });
    for (const method of ["prompts/list", "resources/list", "resources/templates/list"]) {
      expect(await dispatch({ jsonrpc: "2.0", id: 2, method }, handlers, null)).toMatchObject({
        error: { code: METHOD_NOT_FOUND },
      });
    }
  });
});
