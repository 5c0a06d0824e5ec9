import { describe, expect, it, vi } from "vitest";
import {
  dispatch,
  dispatchPayload,
  dispatchText,
  type Handlers,
  INTERNAL_ERROR,
  INVALID_PARAMS,
  INVALID_REQUEST,
  METHOD_NOT_FOUND,
  PARSE_ERROR,
  RpcError,
} from "../../src/mcp/index.ts";

const handlers: Handlers<{ calls: string[] }> = {
  echo: (params) => params,
  none: () => undefined,
  async slow(params) {
    await new Promise((r) => setTimeout(r, 5));
    return params;
  },
  typed() {
    throw new RpcError(INVALID_PARAMS, "bad x", { field: "x" });
  },
  custom() {
    throw new RpcError(-32000, "tool threw");
  },
  boom() {
    throw new Error("secret stack detail");
  },
  note(_params, ctx) {
    ctx.calls.push("note");
  },
  noteThrows() {
    throw new Error("ignored");
  },
};

describe("dispatch: one message", () => {
  const cases: [string, unknown, unknown][] = [
    [
      "answers a request with its result",
      { jsonrpc: "2.0", id: 1, method: "echo", params: { a: 1 } },
      { jsonrpc: "2.0", id: 1, result: { a: 1 } },
    ],
    [
      "echoes string ids",
      { jsonrpc: "2.0", id: "x-1", method: "echo", params: [1] },
      { jsonrpc: "2.0", id: "x-1", result: [1] },
    ],
    [
      "maps undefined results to null",
      { jsonrpc: "2.0", id: 2, method: "none" },
      { jsonrpc: "2.0", id: 2, result: null },
    ],
    [
      "awaits async handlers",
      { jsonrpc: "2.0", id: 3, method: "slow", params: { s: 1 } },
      { jsonrpc: "2.0", id: 3, result: { s: 1 } },
    ],
    [
      "unknown method → -32601",
      { jsonrpc: "2.0", id: 4, method: "nope" },
      { jsonrpc: "2.0", id: 4, error: { code: METHOD_NOT_FOUND, message: "Method not found: nope" } },
    ],
    [
      "prototype names are not methods",
      { jsonrpc: "2.0", id: 5, method: "constructor" },
      { jsonrpc: "2.0", id: 5, error: { code: METHOD_NOT_FOUND, message: "Method not found: constructor" } },
    ],
    [
      "RpcError → that error with data",
      { jsonrpc: "2.0", id: 6, method: "typed" },
      { jsonrpc: "2.0", id: 6, error: { code: INVALID_PARAMS, message: "bad x", data: { field: "x" } } },
    ],
    [
      "custom codes pass through",
      { jsonrpc: "2.0", id: 7, method: "custom" },
      { jsonrpc: "2.0", id: 7, error: { code: -32000, message: "tool threw" } },
    ],
    [
      "other throws → generic -32603",
      { jsonrpc: "2.0", id: 8, method: "boom" },
      { jsonrpc: "2.0", id: 8, error: { code: INTERNAL_ERROR, message: "Internal error" } },
    ],
    [
      "missing method → -32600 keeping the id",
      { jsonrpc: "2.0", id: 9 },
      { jsonrpc: "2.0", id: 9, error: { code: INVALID_REQUEST, message: "Invalid Request" } },
    ],
    [
      "wrong jsonrpc version → -32600",
      { jsonrpc: "1.0", id: 10, method: "echo" },
      { jsonrpc: "2.0", id: 10, error: { code: INVALID_REQUEST, message: "Invalid Request" } },
    ],
    [
      "non-string method → -32600",
      { jsonrpc: "2.0", id: 11, method: 42 },
      { jsonrpc: "2.0", id: 11, error: { code: INVALID_REQUEST, message: "Invalid Request" } },
    ],
    [
      "scalar params → -32600",
      { jsonrpc: "2.0", id: 12, method: "echo", params: 3 },
      { jsonrpc: "2.0", id: 12, error: { code: INVALID_REQUEST, message: "Invalid Request" } },
    ],
    [
      "null id → -32600 with id null",
      { jsonrpc: "2.0", id: null, method: "echo" },
      { jsonrpc: "2.0", id: null, error: { code: INVALID_REQUEST, message: "Invalid Request" } },
    ],
    [
      "object id → -32600 with id null",
      { jsonrpc: "2.0", id: {}, method: "echo" },
      { jsonrpc: "2.0", id: null, error: { code: INVALID_REQUEST, message: "Invalid Request" } },
    ],
    [
      "a non-object → -32600",
      "hello",
      { jsonrpc: "2.0", id: null, error: { code: INVALID_REQUEST, message: "Invalid Request" } },
    ],
    [
      "null → -32600",
      null,
      { jsonrpc: "2.0", id: null, error: { code: INVALID_REQUEST, message: "Invalid Request" } },
    ],
    ["a notification is never answered", { jsonrpc: "2.0", method: "echo" }, null],
    ["an unknown notification is never answered", { jsonrpc: "2.0", method: "nope" }, null],
    ["a throwing notification is never answered", { jsonrpc: "2.0", method: "noteThrows" }, null],
    ["responses sent to us are ignored", { jsonrpc: "2.0", id: 1, result: {} }, null],
    [
      "error responses sent to us are ignored",
      { jsonrpc: "2.0", id: null, error: { code: 1, message: "x" } },
      null,
    ],
  ];
  it.each(cases)("%s", async (_name, message, expected) => {
    expect(await dispatch(message, handlers, { calls: [] })).toEqual(expected);
  });

  it("runs notification handlers with the context", async () => {
    const ctx = { calls: [] as string[] };
    expect(await dispatch({ jsonrpc: "2.0", method: "note" }, handlers, ctx)).toBeNull();
    expect(ctx.calls).toEqual(["note"]);
  });

  it("reports unexpected errors to the hook, never to the client", async () => {
    const onInternalError = vi.fn();
    const response = await dispatch(
      { jsonrpc: "2.0", id: 1, method: "boom" },
      handlers,
      { calls: [] },
      { onInternalError },
    );
    expect(JSON.stringify(response)).not.toContain("secret");
    expect(onInternalError).toHaveBeenCalledWith(expect.any(Error), "boom");
  });

  it("passes the transport info to handlers", async () => {
    const seen = vi.fn();
    await dispatch({ jsonrpc: "2.0", id: 1, method: "m" }, { m: (...args) => seen(args[3]) }, null, {
      transport: { protocolVersion: "2025-06-18" },
    });
    expect(seen).toHaveBeenCalledWith({ protocolVersion: "2025-06-18" });
  });
});

describe("dispatchPayload / dispatchText", () => {
  const ctx = { calls: [] as string[] };
  it("answers a batch with the responses of its requests only", async () => {
    const out = await dispatchPayload(
      [
        { jsonrpc: "2.0", id: 1, method: "echo", params: [1] },
        { jsonrpc: "2.0", method: "note" },
        { jsonrpc: "2.0", id: 2, method: "nope" },
        5,
      ],
      handlers,
      ctx,
    );
    expect(out).toEqual([
      { jsonrpc: "2.0", id: 1, result: [1] },
      { jsonrpc: "2.0", id: 2, error: { code: METHOD_NOT_FOUND, message: "Method not found: nope" } },
      { jsonrpc: "2.0", id: null, error: { code: INVALID_REQUEST, message: "Invalid Request" } },
    ]);
  });

  const textCases: [string, string, unknown][] = [
    [
      "a request line",
      '{"jsonrpc":"2.0","id":1,"method":"echo","params":{"k":"v"}}',
      { jsonrpc: "2.0", id: 1, result: { k: "v" } },
    ],
    [
      "unparsable text → -32700 id null",
      "{not json",
      { jsonrpc: "2.0", id: null, error: { code: PARSE_ERROR, message: "Parse error" } },
    ],
    [
      "an empty batch → -32600",
      "[]",
      { jsonrpc: "2.0", id: null, error: { code: INVALID_REQUEST, message: "Invalid Request: empty batch" } },
    ],
    ["a notification-only batch → nothing", '[{"jsonrpc":"2.0","method":"note"}]', null],
    ["a notification → nothing", '{"jsonrpc":"2.0","method":"note"}', null],
  ];
  it.each(textCases)("%s", async (_name, text, expected) => {
    const out = await dispatchText(text, handlers, ctx);
    expect(out === null ? null : JSON.parse(out)).toEqual(expected);
  });

  it("refuses batches when told to", async () => {
    const out = await dispatchPayload([{ jsonrpc: "2.0", id: 1, method: "echo" }], handlers, ctx, {
      allowBatch: false,
    });
    expect(out).toMatchObject({ id: null, error: { code: INVALID_REQUEST } });
  });
});
