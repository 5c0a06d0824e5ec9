import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  createMcpHandlers,
  type DecodedItem,
  dispatch,
  encodeMessage,
  INVALID_REQUEST,
  PARSE_ERROR,
  StdioDecoder,
  serveStdio,
  serveStdioLoop,
} from "../../src/mcp/index.ts";

const enc = new TextEncoder();
const cl = (json: string, header = "Content-Length", sep = "\r\n\r\n") =>
  `${header}: ${enc.encode(json).byteLength}${sep}${json}`;

function decodeAll(chunks: (string | Uint8Array)[], options?: ConstructorParameters<typeof StdioDecoder>[0]) {
  const decoder = new StdioDecoder(options);
  const items: DecodedItem[] = [];
  for (const chunk of chunks) items.push(...decoder.push(chunk));
  items.push(...decoder.end());
  return { items, framing: decoder.framing };
}

const parseErr = { error: { code: PARSE_ERROR } };

describe("StdioDecoder", () => {
  const cases: [string, (string | Uint8Array)[], string | undefined, unknown[]][] = [
    ["one NDJSON line", ['{"a":1}\n'], "ndjson", [{ message: { a: 1 } }]],
    [
      "several lines in one chunk",
      ['{"a":1}\n{"b":2}\n[3]\n'],
      "ndjson",
      [{ message: { a: 1 } }, { message: { b: 2 } }, { message: [3] }],
    ],
    [
      "CRLF line endings",
      ['{"a":1}\r\n{"b":2}\r\n'],
      "ndjson",
      [{ message: { a: 1 } }, { message: { b: 2 } }],
    ],
    [
      "a line split across chunks",
      ['{"a":', '1}\n{"b"', ":2}\n"],
      "ndjson",
      [{ message: { a: 1 } }, { message: { b: 2 } }],
    ],
    [
      "blank lines and leading whitespace are skipped",
      ["\n  \n", '{"a":1}\n\n\n'],
      "ndjson",
      [{ message: { a: 1 } }],
    ],
    [
      "garbage line → parse error, next line still decoded",
      ['{"a":1}\nnot json\n{"b":2}\n'],
      "ndjson",
      [{ message: { a: 1 } }, parseErr, { message: { b: 2 } }],
    ],
    ["a final line without newline is decoded at end", ['{"a":1}'], "ndjson", [{ message: { a: 1 } }]],
    ["Content-Length with CRLF", [cl('{"a":1}')], "content-length", [{ message: { a: 1 } }]],
    [
      "Content-Length with LF LF",
      [cl('{"a":1}', "Content-Length", "\n\n")],
      "content-length",
      [{ message: { a: 1 } }],
    ],
    [
      "header name is case-insensitive",
      [cl('{"a":1}', "content-length") + cl("[2]", "CONTENT-LENGTH")],
      "content-length",
      [{ message: { a: 1 } }, { message: [2] }],
    ],
    [
      "extra headers are ignored",
      [`Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n${cl('{"a":1}')}`],
      "content-length",
      [{ message: { a: 1 } }],
    ],
    ["frame split byte by byte", [...cl('{"a":"xyz"}')], "content-length", [{ message: { a: "xyz" } }]],
    [
      "several frames in one chunk",
      [cl("[1]") + cl("[2]") + cl("[3]")],
      "content-length",
      [{ message: [1] }, { message: [2] }, { message: [3] }],
    ],
    [
      "body is not JSON → parse error, then resync",
      [cl("nope") + cl("[2]")],
      "content-length",
      [parseErr, { message: [2] }],
    ],
    [
      "a garbage header line → error, then resync",
      [`hello there\r\n${cl("[2]")}`],
      "content-length",
      [parseErr, { message: [2] }],
    ],
    [
      "a bad Content-Length value → error",
      ["Content-Length: abc\r\n\r\n", cl("[2]")],
      "content-length",
      [parseErr, { message: [2] }],
    ],
    [
      "headers without Content-Length → error",
      ["X-Other: 1\r\n\r\n", cl("[2]")],
      "content-length",
      [parseErr, { message: [2] }],
    ],
    ["only whitespace: no framing yet", ["  \n\t"], undefined, []],
  ];
  it.each(cases)("%s", (_name, chunks, framing, expected) => {
    const out = decodeAll(chunks);
    expect(out.framing).toBe(framing);
    expect(out.items).toMatchObject(expected);
    expect(out.items).toHaveLength(expected.length);
  });

  it("decodes multibyte UTF-8 split inside a character (both framings)", () => {
    const json = '{"s":"héllo ✓ 𝄞"}';
    const bytes = enc.encode(`${json}\n`);
    const framed = enc.encode(cl(json));
    for (const data of [bytes, framed]) {
      for (let cut = 1; cut < data.length; cut++) {
        const { items } = decodeAll([data.subarray(0, cut), data.subarray(cut)]);
        expect(items).toEqual([{ message: { s: "héllo ✓ 𝄞" } }]);
      }
    }
  });

  it("counts Content-Length in bytes, not characters", () => {
    const json = '{"s":"ééé"}';
    expect(decodeAll([cl(json) + cl("[1]")]).items).toEqual([{ message: { s: "ééé" } }, { message: [1] }]);
  });

  it("turns an oversized Content-Length frame into an error and skips its body", () => {
    const big = JSON.stringify({ pad: "x".repeat(500) });
    const { items } = decodeAll([cl(big).slice(0, 100), cl(big).slice(100), cl("[2]")], {
      maxFrameBytes: 100,
    });
    expect(items).toMatchObject([{ error: { code: INVALID_REQUEST } }, { message: [2] }]);
  });

  it("turns an oversized NDJSON line into one error and resyncs at the next newline", () => {
    const big = JSON.stringify({ pad: "x".repeat(500) });
    const { items } = decodeAll([big.slice(0, 200), big.slice(200), "\n[2]\n"], { maxFrameBytes: 100 });
    expect(items).toMatchObject([{ error: { code: INVALID_REQUEST } }, { message: [2] }]);
  });

  it("a header line that never ends is an error, not a hang", () => {
    const { items } = decodeAll(["X".repeat(9000), "\r\n", cl("[2]")]);
    expect(items).toMatchObject([parseErr, { message: [2] }]);
  });

  it("accepts NDJSON lines on a Content-Length connection", () => {
    expect(decodeAll([cl("[1]"), '{"b":2}\n']).items).toEqual([{ message: [1] }, { message: { b: 2 } }]);
  });

  it("decodes any chunking of a message sequence identically (property)", () => {
    const value = fc.jsonValue().filter((v) => v !== null && typeof v === "object");
    fc.assert(
      fc.property(
        fc.array(value, { minLength: 1, maxLength: 5 }),
        fc.boolean(),
        fc.array(fc.nat(), { maxLength: 8 }),
        (messages, framed, cuts) => {
          const framing = framed ? "content-length" : "ndjson";
          const bytes = enc.encode(messages.map((m) => encodeMessage(m, framing)).join(""));
          const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
          const chunks: Uint8Array[] = [];
          let last = 0;
          for (const p of points) {
            chunks.push(bytes.subarray(last, p));
            last = p;
          }
          chunks.push(bytes.subarray(last));
          const out = decodeAll(chunks);
          expect(out.framing).toBe(framing);
          expect(out.items).toEqual(
            JSON.parse(JSON.stringify(messages)).map((m: unknown) => ({ message: m })),
          );
        },
      ),
      { numRuns: 300 },
    );
  });

  it("never throws on random bytes", () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 64 }), { maxLength: 6 }), (chunks) => {
        expect(() => decodeAll(chunks, { maxFrameBytes: 32 })).not.toThrow();
      }),
      { numRuns: 300 },
    );
  });
});

describe("encodeMessage", () => {
  it("NDJSON: one line", () => {
    expect(encodeMessage({ a: "é" }, "ndjson")).toBe('{"a":"é"}\n');
  });
  it("Content-Length: byte length header and CRLF CRLF", () => {
    expect(encodeMessage({ a: "é" }, "content-length")).toBe('Content-Length: 10\r\n\r\n{"a":"é"}');
  });
});

describe("StdioDecoder resynchronises after a malformed Content-Length frame", () => {
  const good = (id: number) => JSON.stringify({ jsonrpc: "2.0", id, method: "ping" });
  const framed = (body: string, length: string | number = new TextEncoder().encode(body).byteLength) =>
    `Content-Length: ${length}\r\n\r\n${body}`;
  const decodeAll = (text: string, chunk = text.length) => {
    const decoder = new StdioDecoder();
    const items: DecodedItem[] = [];
    for (let i = 0; i < text.length; i += chunk) items.push(...decoder.push(text.slice(i, i + chunk)));
    return items;
  };
  const ids = (items: DecodedItem[]) =>
    items.map((item) => ("error" in item ? "error" : (item.message as { id: number }).id));
  const CLASSES: Record<string, string> = {
    "too short": framed(good(1), 10),
    "too long": framed(good(1), good(1).length + 25),
    negative: framed(good(1), -5),
    "non-numeric": framed(good(1), "abc"),
    missing: `Content-Type: application/json\r\n\r\n${good(1)}`,
    "empty value": framed(good(1), ""),
  };
  for (const [name, bad] of Object.entries(CLASSES)) {
    it(`${name}: one error for that frame, then the next frames are served`, () => {
      const stream = framed(good(0)) + bad + framed(good(2)) + framed(good(3));
      for (const chunk of [stream.length, 1, 7]) {
        const items = decodeAll(stream, chunk);
        expect(ids(items), `chunk ${chunk}`).toEqual([0, "error", 2, 3]);
      }
    });
  }
  it("a too-long frame that swallows several frames: the first swallowed header is served from", () => {
    const rest = [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12];
    const stream = framed(good(1), 400) + rest.map((id) => framed(good(id))).join("");
    expect(stream.length).toBeGreaterThan(450);
    expect(ids(decodeAll(stream))).toEqual(["error", ...rest]);
  });
});

describe("serveStdio", () => {
  const handlers = createMcpHandlers<null>({
    serverInfo: { name: "s", version: "1" },
    tools: { list: () => [], call: async () => ({ value: null }) },
  });

  async function* source(chunks: string[]) {
    for (const chunk of chunks) yield enc.encode(chunk);
  }

  it("answers in NDJSON when the client speaks NDJSON, skipping notifications", async () => {
    const out: string[] = [];
    const framing = await serveStdio({
      read: source([
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}\n{"jsonrpc":"2.0","method":"notifications/initialized"}\n',
        '{"jsonrpc":"2.0","id":2,"method":"ping"}\nbad\n',
      ]),
      write: (s) => {
        out.push(s);
      },
      handlers,
      ctx: null,
    });
    expect(framing).toBe("ndjson");
    // Each reply leaves as soon as it is ready (the parse error needs no dispatch): match by id.
    const replies = out.map((s) => JSON.parse(s));
    expect(replies).toHaveLength(3);
    expect(replies).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          id: 1,
          result: expect.objectContaining({ protocolVersion: "2025-06-18" }),
        }),
        expect.objectContaining({ id: 2, result: {} }),
        expect.objectContaining({ id: null, error: expect.objectContaining({ code: PARSE_ERROR }) }),
      ]),
    );
    expect(out.every((s) => s.endsWith("\n") && s.indexOf("\n") === s.length - 1)).toBe(true);
  });

  it("writes replies in request order: a fast reply waits for a slower earlier one", async () => {
    const out: string[] = [];
    let release: () => void = () => {};
    await serveStdioLoop({
      read: (async function* () {
        yield enc.encode('{"id":1,"slow":true}\n{"id":2}\n');
        release();
      })(),
      write: (s) => {
        out.push(s);
      },
      answer: async (item) => {
        const message = (item as { message: { id: number; slow?: boolean } }).message;
        if (message.slow) await new Promise<void>((resolve) => (release = resolve));
        return { jsonrpc: "2.0", id: message.id, result: {} };
      },
    });
    expect(out.map((s) => JSON.parse(s).id)).toEqual([1, 2]);
  });

  it("answers a request while an earlier one is still running, once the grace is over", async () => {
    let release: () => void = () => {};
    const slow = createMcpHandlers<null>({
      serverInfo: { name: "s", version: "1" },
      tools: {
        list: () => [],
        call: () => new Promise((resolve) => (release = () => resolve({ value: "late" }))),
      },
    });
    const out: string[] = [];
    const done = serveStdioLoop({
      read: (async function* () {
        yield enc.encode('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}\n');
        yield enc.encode('{"jsonrpc":"2.0","id":2,"method":"ping"}\n');
        while (out.length === 0) await new Promise((r) => setTimeout(r, 5));
        release();
      })(),
      write: (s) => {
        out.push(s);
      },
      answer: async (item) => ("error" in item ? null : dispatch(item.message, slow, null)),
      replyOrderGraceMs: 10,
    });
    await done;
    expect(out.map((s) => JSON.parse(s).id)).toEqual([2, 1]);
  });

  it("answers with Content-Length frames when the client frames that way", async () => {
    const out: string[] = [];
    await serveStdio({
      read: source([
        cl('{"jsonrpc":"2.0","id":1,"method":"ping"}'),
        cl('{"jsonrpc":"2.0","id":2,"method":"nope"}'),
      ]),
      write: (s) => {
        out.push(s);
      },
      handlers,
      ctx: null,
    });
    expect(out).toEqual([
      cl('{"jsonrpc":"2.0","id":1,"result":{}}'),
      cl('{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"Method not found: nope"}}'),
    ]);
  });

  it("keeps the negotiated version per connection", async () => {
    const out: string[] = [];
    const session = {};
    await serveStdio({
      read: source([
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05"}}\n',
      ]),
      write: (s) => {
        out.push(s);
      },
      handlers,
      ctx: null,
      session,
    });
    expect(session).toEqual({ protocolVersion: "2024-11-05" });
  });
});
