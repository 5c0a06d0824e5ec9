/**
 * Property-based fuzzing of the stdio readers the CLI runs on: the decoder in `session`'s forced
 * newline mode and `mcp`'s auto-detecting mode, the session's line handler on arbitrary JSON, and
 * the real processes fed random and truncated frames. Nothing may throw, hang or stop answering.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { NO_AUDIT } from "../../src/cli/audit-log.ts";
import { answerLine, sessionHandlers } from "../../src/cli/commands/session.ts";
import type { ToolServer } from "../../src/cli/tool-server.ts";
import { type DecodedItem, encodeMessage, type Framing, StdioDecoder } from "../../src/mcp/index.ts";
import { cliSuite, LineClient, runCli } from "./helpers.ts";

const addTool = { name: "add", description: "", inputSchema: { type: "object" } };
const fakeServer: ToolServer = {
  entry: "/x/tools.ts",
  tools: [addTool],
  mcpTools: [addTool],
  policy: { denied: [], allowRead: [], allowWrite: [], allowNet: [], allowEnv: [], allowRun: [] },
  audit: NO_AUDIT,
  has: (name) => name === "add",
  checkResult: () => undefined,
  declaresOutput: () => false,
  call: async (_name, args) => {
    const { a, b } = (args ?? {}) as { a?: unknown; b?: unknown };
    return typeof a === "number" && typeof b === "number"
      ? { ok: true, value: a + b }
      : { ok: false, error: "bad" };
  },
  reload: async () => {},
  close() {},
};

const chunked = (bytes: Uint8Array, cuts: number[]): Uint8Array[] => {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((x, y) => x - y);
  const chunks: Uint8Array[] = [];
  let start = 0;
  for (const point of points) {
    chunks.push(bytes.subarray(start, point));
    start = point;
  }
  chunks.push(bytes.subarray(start));
  return chunks;
};

const jsonMessage = fc.record({
  jsonrpc: fc.constant("2.0"),
  id: fc.oneof(fc.integer(), fc.string()),
  method: fc.string(),
  params: fc.option(fc.dictionary(fc.string(), fc.jsonValue()), { nil: undefined }),
});

describe("stdio readers under fuzzing", () => {
  it("never throw on random bytes cut anywhere, in any framing (10k cases)", () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 300 }),
        fc.array(fc.nat(), { maxLength: 8 }),
        fc.constantFrom<Framing | undefined>("ndjson", "content-length", undefined),
        (bytes, cuts, framing) => {
          const decoder = new StdioDecoder({ framing, maxFrameBytes: 128 });
          const items: DecodedItem[] = [];
          for (const chunk of chunked(bytes, cuts)) items.push(...decoder.push(chunk));
          items.push(...decoder.end());
          for (const item of items) expect("message" in item || "error" in item).toBe(true);
        },
      ),
      { numRuns: 10_000 },
    );
  });

  it("decode every message exactly, whatever the chunking, in both framings (5k cases)", () => {
    fc.assert(
      fc.property(
        fc.array(jsonMessage, { minLength: 1, maxLength: 5 }),
        fc.array(fc.nat(), { maxLength: 10 }),
        fc.constantFrom<Framing>("ndjson", "content-length"),
        (messages, cuts, framing) => {
          const bytes = new TextEncoder().encode(messages.map((m) => encodeMessage(m, framing)).join(""));
          const decoder = new StdioDecoder();
          const items: DecodedItem[] = [];
          for (const chunk of chunked(bytes, cuts)) items.push(...decoder.push(chunk));
          items.push(...decoder.end());
          expect(decoder.framing).toBe(framing);
          expect(items).toEqual(messages.map((m) => ({ message: JSON.parse(JSON.stringify(m)) })));
        },
      ),
      { numRuns: 5_000 },
    );
  });

  it("yield only a prefix of the messages from a truncated stream (5k cases)", () => {
    fc.assert(
      fc.property(
        fc.array(jsonMessage, { minLength: 1, maxLength: 4 }),
        fc.nat(),
        fc.constantFrom<Framing>("ndjson", "content-length"),
        (messages, cut, framing) => {
          const bytes = new TextEncoder().encode(messages.map((m) => encodeMessage(m, framing)).join(""));
          const decoder = new StdioDecoder();
          const items = [...decoder.push(bytes.subarray(0, cut % (bytes.length + 1))), ...decoder.end()];
          const expected = messages.map((m) => ({ message: JSON.parse(JSON.stringify(m)) }));
          const complete = items.filter((i) => "message" in i);
          expect(complete).toEqual(expected.slice(0, complete.length));
          // A truncated newline message may surface as one parse error at the very end, nothing more.
          expect(items.length - complete.length).toBeLessThanOrEqual(1);
        },
      ),
      { numRuns: 5_000 },
    );
  });

  it("session answers any JSON value with a response or nothing, never a throw (10k cases)", async () => {
    const handlers = sessionHandlers(fakeServer);
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.jsonValue(),
          jsonMessage,
          fc.record({ id: fc.integer(), tool: fc.string(), args: fc.jsonValue() }),
          fc.record({
            jsonrpc: fc.constant("2.0"),
            id: fc.integer(),
            method: fc.constantFrom("tools/call", "call"),
            params: fc.jsonValue(),
          }),
        ),
        async (message) => {
          const response = await answerLine({ message }, handlers);
          if (response !== null) {
            expect(response.jsonrpc).toBe("2.0");
            expect("result" in response || "error" in response).toBe(true);
          }
        },
      ),
      { numRuns: 10_000 },
    );
  });
});

describe("the real processes under garbage", () => {
  const { bin, dir } = cliSuite({ "tools.ts": "export function add({ a, b }) { return a + b; }\n" });

  it("session survives 2000 random lines and still answers", async () => {
    const client = new LineClient(bin, ["session", "tools.ts"], { cwd: dir });
    const lines = fc.sample(
      fc.oneof(
        fc.string({ unit: "binary" }),
        fc.jsonValue().map((v) => JSON.stringify(v)),
        jsonMessage.map((m) => JSON.stringify(m)),
      ),
      { numRuns: 2000, seed: 42 },
    );
    const payload = lines.map((l) => l.replace(/[\r\n]/g, " ")).join("\n");
    client.write(`${payload}\n`);
    const expected = lines.filter((l) => {
      if (l.replace(/[\r\n]/g, " ").trim() === "") return false;
      try {
        const v = JSON.parse(l.replace(/[\r\n]/g, " "));
        const isNotification =
          typeof v === "object" && v !== null && !Array.isArray(v) && "method" in v && !("id" in v);
        return !isNotification;
      } catch {
        return true;
      }
    }).length;
    for (let i = 0; i < expected; i++) JSON.parse(await client.nextLine());
    expect((await client.call("add", { a: 1, b: 2 })).result).toBe(3);
    expect(await client.close()).toBe(0);
  });

  it("mcp exits cleanly on truncated and random frames (no hang)", () => {
    const samples = fc.sample(
      fc.oneof(
        fc.string({ unit: "binary", maxLength: 200 }),
        fc
          .nat({ max: 60 })
          .map((n) => `Content-Length: ${n}\r\n\r\n{"jsonrpc":"2.0","id":1,"method":"ping"}`),
        fc.constant("Content-Length: 99999\r\n\r\n{"),
        fc.constant("Content-Length: nope\r\n\r\n{}"),
      ),
      { numRuns: 12, seed: 7 },
    );
    for (const input of samples) {
      const result = runCli(bin, ["mcp", "tools.ts"], { cwd: dir, input });
      expect(result.status).toBe(0);
    }
  });
});
