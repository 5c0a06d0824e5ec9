import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { describe, expect, it } from "vitest";
import {
  createMcpHandlers,
  dispatch,
  dispatchPayload,
  dispatchText,
  encodeJsonRpc,
  encodeMessage,
  handleMcpHttpRequest,
  type McpServerOptions,
  RawJson,
  RpcError,
  success,
  type ToolDefinition,
  type ToolList,
  type ToolOutcome,
} from "../../src/mcp/index.ts";

describe("encodeJsonRpc", () => {
  const raw = new RawJson('{"tools":[{"name":"a","inputSchema":{"type":"object"}}]}');

  it("splices a RawJson result verbatim, after jsonrpc and id", () => {
    expect(encodeJsonRpc(success(7, raw))).toBe(
      '{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"a","inputSchema":{"type":"object"}}]}}',
    );
    expect(encodeJsonRpc(success('x"y', new RawJson("[1, 2]")))).toBe(
      '{"jsonrpc":"2.0","id":"x\\"y","result":[1, 2]}',
    );
  });

  it("is JSON.stringify for everything else, batches included", () => {
    const plain = [
      success(1, { a: [1, "b"] }),
      { jsonrpc: "2.0", id: null, error: { code: -1, message: "m" } },
    ];
    expect(encodeJsonRpc(plain)).toBe(JSON.stringify(plain));
    expect(encodeJsonRpc(plain[0])).toBe(JSON.stringify(plain[0]));
    expect(encodeJsonRpc({ result: raw })).toBe(`{"result":${raw.text}}`);
  });

  it("gives a batch mixing raw and plain results the text JSON.stringify gives for the parsed values", () => {
    const batch = [success(1, raw), success(2, { ok: true }), success(3, new RawJson("null"))];
    const text = encodeJsonRpc(batch);
    expect(JSON.parse(text)).toEqual([success(1, raw.value), success(2, { ok: true }), success(3, null)]);
    // Any other serialiser still sees the same value (toJSON).
    expect(JSON.parse(JSON.stringify(batch))).toEqual(JSON.parse(text));
  });

  it("is what stdio framing writes", () => {
    expect(encodeMessage(success(1, raw), "ndjson")).toBe(`${encodeJsonRpc(success(1, raw))}\n`);
  });
});

/** Tools whose list is the same array on every call, like the Worker's rev-keyed surface. */
const TOOLS: ToolDefinition[] = Array.from({ length: 5 }, (_, i) => ({
  name: `t${i}`,
  title: `T${i}`,
  description: `tool ${i}`,
  inputSchema: { type: "object", properties: { n: { type: "integer" } } },
  annotations: { readOnlyHint: true },
}));

const options = (rawToolPages: boolean, list: () => ToolList = () => TOOLS): McpServerOptions<null> => ({
  serverInfo: { name: "raw", version: "1" },
  toolsPageSize: 2,
  rawToolPages,
  tools: {
    list,
    async call() {
      return { value: null };
    },
  },
});
const raw = createMcpHandlers(options(true));
const plain = createMcpHandlers(options(false));
const meta2026 = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": {},
};

const list = (handlers: typeof raw, params: Record<string, unknown>, protocolVersion?: string) =>
  dispatch({ jsonrpc: "2.0", id: 1, method: "tools/list", params }, handlers, null, {
    transport: protocolVersion ? { protocolVersion } : {},
  });

/** Every page of tools/list under `handlers`, as the wire text of each response. */
async function pages(handlers: typeof raw, protocolVersion: string, extra: Record<string, unknown> = {}) {
  const texts: string[] = [];
  let cursor: unknown;
  do {
    const text = await dispatchText(
      JSON.stringify({
        jsonrpc: "2.0",
        id: texts.length,
        method: "tools/list",
        params: { ...extra, ...(cursor === undefined ? {} : { cursor }) },
      }),
      handlers,
      null,
      { transport: { protocolVersion } },
    );
    texts.push(text!);
    cursor = JSON.parse(text!).result.nextCursor;
  } while (cursor !== undefined);
  return texts;
}

describe("tools/list with rawToolPages", () => {
  it.each(["2024-11-05", "2025-06-18", "2025-11-25"])(
    "serves, under %s, byte for byte the pages the object path serves",
    async (version) => {
      const served = await pages(raw, version);
      expect(served).toHaveLength(3);
      expect(served).toEqual(await pages(plain, version));
    },
  );

  it("serves 2026-07-28 pages with their result fields, like the object path", async () => {
    const served = await pages(raw, "2026-07-28", { _meta: meta2026 });
    expect(served).toEqual(await pages(plain, "2026-07-28", { _meta: meta2026 }));
    expect(JSON.parse(served[0]!).result).toMatchObject({ resultType: "complete", cacheScope: "private" });
  });

  it("serialises a page once per list, version and offset", async () => {
    const first = (await list(raw, {}, "2025-06-18")) as { result: RawJson };
    expect(first.result).toBeInstanceOf(RawJson);
    expect(((await list(raw, {}, "2025-06-18")) as { result: RawJson }).result).toBe(first.result);
    const older = (await list(raw, {}, "2024-11-05")) as { result: RawJson };
    expect(older.result).not.toBe(first.result);
    expect(older.result.text).not.toContain('"title"');
    const next = (first.result.value as { nextCursor: string }).nextCursor;
    const second = (await list(raw, { cursor: next }, "2025-06-18")) as { result: RawJson };
    expect(second.result).not.toBe(first.result);
    expect((second.result.value as { tools: ToolDefinition[] }).tools.map((t) => t.name)).toEqual([
      "t2",
      "t3",
    ]);
  });

  it("refuses a cursor longer than any it issues without decoding it (-32602)", async () => {
    const issued = btoa("tools:2");
    expect(await list(raw, { cursor: issued }, "2025-06-18")).toHaveProperty("result");
    // atob skips ASCII whitespace: the padded cursor names the same page, but is not read.
    expect(await list(raw, { cursor: `${issued}${" ".repeat(20)}` }, "2025-06-18")).toMatchObject({
      error: { code: -32602, message: "Invalid params: unknown cursor" },
    });
  });

  it("serialises again when the provider hands out a new list (a changed surface)", async () => {
    let current = TOOLS;
    const handlers = createMcpHandlers(options(true, () => current));
    const before = ((await list(handlers, {}, "2025-06-18")) as { result: RawJson }).result;
    current = [{ name: "renamed", inputSchema: { type: "object" } }, ...TOOLS.slice(1)];
    const after = ((await list(handlers, {}, "2025-06-18")) as { result: RawJson }).result;
    expect(after).not.toBe(before);
    expect(after.text).toContain('"renamed"');
    expect(before.text).not.toContain('"renamed"');
  });

  it("takes only the requested page from a lazy tool list, once", async () => {
    const taken: [number, number | undefined][] = [];
    const lazy: ToolList = {
      length: TOOLS.length,
      slice(start, end) {
        taken.push([start, end]);
        return TOOLS.slice(start, end);
      },
    };
    const handlers = createMcpHandlers(options(true, () => lazy));
    const first = (await list(handlers, {}, "2025-06-18")) as { result: RawJson };
    await list(handlers, {}, "2025-06-18");
    const next = (first.result.value as { nextCursor: string }).nextCursor;
    await list(handlers, { cursor: next }, "2025-06-18");
    expect(taken).toEqual([
      [0, 2],
      [2, 4],
    ]);
  });

  it("still refuses a cursor it never issued", async () => {
    expect(await list(raw, { cursor: "bm9wZQ==" }, "2025-06-18")).toMatchObject({ error: { code: -32602 } });
  });

  it("answers over Streamable HTTP with the spliced text", async () => {
    const response = await handleMcpHttpRequest(
      new Request("http://localhost/mcp", {
        method: "POST",
        headers: { "content-type": "application/json", "mcp-protocol-version": "2025-06-18" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 3, method: "tools/list" }),
      }),
      { handlers: raw, ctx: null },
    );
    expect(response.status).toBe(200);
    const text = await response.text();
    const page = ((await list(raw, {}, "2025-06-18")) as { result: RawJson }).result;
    expect(text).toBe(`{"jsonrpc":"2.0","id":3,"result":${page.text}}`);
  });
});

/** Values whose JSON text escapes everything JSON.stringify escapes, in every position. */
const TRICKY = {
  rows: [
    { id: 'a"b\\c', text: "line\nbreak\ttab\u0000nul\u001f\u2028\u2029 é 😀 \ud800 lone \udfff", n: -0.1e-7 },
    { 'key "quoted" \\ \n': [1, 2.5, null, true, false, 1e21, '\\\\""'], nested: { deep: [[[{}]]] } },
  ],
  big: Array.from({ length: 200 }, (_, i) => i / 7),
  absent: undefined,
};
const OUTCOMES: Record<string, ToolOutcome> = {
  object: { value: TRICKY },
  array: { value: [TRICKY, 'x"y'] },
  number: { value: 3.25 },
  null: { value: null },
  undefined: { value: undefined },
  string: { value: 'plain "text" \\ as is' },
  failed: { value: { error: { code: 'bad"input', message: "no\nway" } }, isError: true },
  content: { value: { ignored: true }, content: [{ type: "image", data: "AAAA", mimeType: "image/png" }] },
};
/** The object path, as every answer was serialised before (JSON.stringify of the response). */
const outcomeHandlers = createMcpHandlers<null>({
  serverInfo: { name: "once", version: "1" },
  tools: {
    list: () => [{ name: "out", inputSchema: { type: "object" } }],
    async call(name, args) {
      if (name !== "out") throw new RpcError(-32602, `Unknown tool: ${name}`);
      return OUTCOMES[String(args.which)] as ToolOutcome;
    },
  },
});
const callMessage = (id: number, which: string, params: Record<string, unknown> = {}) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name: "out", arguments: { which }, ...params },
});

/**
 * A tool answer's text item must be exactly the JSON text of its value and `structuredContent` the
 * same object, for every version, in batches and beside errors: what any change to how answers are
 * serialised (BENCHMARKS.md "Serialising a tool answer once") has to keep byte for byte.
 */
describe("tools/call answers on the wire", () => {
  const versions = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"];
  const paramsOf = (version: string) => (version === "2026-07-28" ? { _meta: meta2026 } : {});

  it.each(versions)(
    "writes, under %s, byte for byte what JSON.stringify of the answer writes",
    async (version) => {
      for (const [id, which] of Object.keys(OUTCOMES).entries()) {
        const message = callMessage(id, which, paramsOf(version));
        const response = await dispatch(message, outcomeHandlers, null, {
          transport: { protocolVersion: version },
        });
        const wire = encodeJsonRpc(response);
        expect(wire, which).toBe(JSON.stringify(response));
        const { result } = JSON.parse(wire);
        const { value } = OUTCOMES[which] as ToolOutcome;
        if (which !== "content")
          expect(result.content, which).toEqual([
            { type: "text", text: typeof value === "string" ? value : (JSON.stringify(value) ?? "null") },
          ]);
        const structured = version >= "2025-06-18" && ["object", "failed", "content"].includes(which);
        expect(result.structuredContent, which).toEqual(
          structured ? JSON.parse(JSON.stringify(value)) : undefined,
        );
      }
    },
  );

  it("writes batches (2025-03-26) and errors as JSON.stringify does", async () => {
    const batch = [
      ...Object.keys(OUTCOMES).map((which, id) => callMessage(id, which)),
      { jsonrpc: "2.0", id: 90, method: "tools/call", params: { name: "nope" } },
      { jsonrpc: "2.0", id: 91, method: "tools/call", params: { name: "out", arguments: 7 } },
    ];
    const options = { transport: { protocolVersion: "2025-03-26" } };
    const response = await dispatchPayload(batch, outcomeHandlers, null, options);
    expect(Array.isArray(response)).toBe(true);
    expect(encodeJsonRpc(response)).toBe(JSON.stringify(response));
    const text = await dispatchText(JSON.stringify(batch), outcomeHandlers, null, options);
    expect(text).toBe(JSON.stringify(response));
    expect(
      JSON.parse(text!)
        .slice(-2)
        .map((r: { error: { code: number } }) => r.error.code),
    ).toEqual([-32602, -32602]);
  });

  it.each(["2025-03-26", "2025-11-25"])(
    "answers the official SDK client over HTTP (%s) with those bytes",
    async (version) => {
      const exchanges: { body: string; text: string }[] = [];
      const fetch = async (url: string | URL, init?: RequestInit) => {
        const response = await handleMcpHttpRequest(new Request(url, init), {
          handlers: outcomeHandlers,
          ctx: null,
        });
        const text = await response.clone().text();
        if (text.includes('"content"')) exchanges.push({ body: String(init?.body), text });
        return response;
      };
      const client = new Client({ name: "vitest", version: "1.0.0" });
      const transport = new StreamableHTTPClientTransport(new URL("http://localhost/mcp"), { fetch });
      await client.connect(transport);
      transport.setProtocolVersion(version);
      for (const which of ["object", "failed", "string"]) {
        const got = await client.callTool({ name: "out", arguments: { which } });
        const { value } = OUTCOMES[which] as ToolOutcome;
        const text = typeof value === "string" ? value : JSON.stringify(value);
        expect(got.content).toEqual([{ type: "text", text }]);
        if (version >= "2025-06-18" && which !== "string")
          expect(got.structuredContent).toEqual(JSON.parse(JSON.stringify(value)));
        else expect(got).not.toHaveProperty("structuredContent");
      }
      await client.close();
      expect(exchanges).toHaveLength(3);
      for (const { body, text } of exchanges) {
        const response = await dispatch(JSON.parse(body), outcomeHandlers, null, {
          transport: { protocolVersion: version },
        });
        expect(text).toBe(JSON.stringify(response));
      }
    },
  );
});
