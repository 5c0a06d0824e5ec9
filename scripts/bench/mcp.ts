/**
 * `npm run bench -- mcp`: the protocol core against the official SDK's low-level `Server`, in the
 * same run. (1) Dispatch cost of `tools/list` (20 tools) and `tools/call` — a parsed JSON-RPC
 * message in, the response object out — through `dispatch` vs the SDK `Server` behind an in-memory
 * transport. (2) Minified + gzipped size of an esbuild bundle of src/mcp/index.ts vs the SDK server
 * (Server alone, and with its web-standard Streamable HTTP + stdio transports, the same scope as
 * the core). Ratios < 1 mean the core is cheaper.
 */
import { isDeepStrictEqual } from "node:util";
import { gzipSync } from "node:zlib";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { build } from "esbuild";
import { createMcpHandlers, dispatch, type ToolDefinition } from "../../src/mcp/index.ts";

const TOOLS: ToolDefinition[] = Array.from({ length: 20 }, (_, i) => ({
  name: `recipes_tool_${i}`,
  description: `Tool number ${i}: does something with recipes.`,
  inputSchema: {
    type: "object",
    properties: {
      id: { type: "string", format: "uuid" },
      limit: { type: "integer", minimum: 1, maximum: 100 },
    },
    required: ["id"],
  },
}));
const ROW = {
  id: "018f2c1e-7a00-7000-8000-000000000001",
  title: "Soup",
  calories: 320,
  tags: ["hot", "veg"],
};
const VERSION = "2025-06-18";

// --- the core ---------------------------------------------------------------------------------
const coreHandlers = createMcpHandlers<null>({
  serverInfo: { name: "bench", version: "1.0.0" },
  tools: { list: () => TOOLS, call: async () => ({ value: ROW }) },
});
const transportInfo = { transport: { protocolVersion: VERSION } };
const core = (message: object) => dispatch(message, coreHandlers, null, transportInfo);

// --- the SDK's low-level Server behind an in-memory transport ----------------------------------
type Message = { id?: number | string; [key: string]: unknown };
class MemoryTransport {
  onmessage?: (message: Message) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  private readonly pending = new Map<unknown, (message: Message) => void>();
  async start() {}
  async close() {}
  async send(message: Message) {
    const resolve = this.pending.get(message.id);
    this.pending.delete(message.id);
    resolve?.(message);
  }
  request(message: Message): Promise<Message> {
    return new Promise((resolve) => {
      this.pending.set(message.id, resolve);
      this.onmessage!(message);
    });
  }
}
const sdkServer = new Server({ name: "bench", version: "1.0.0" }, { capabilities: { tools: {} } });
sdkServer.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOLS as never }));
sdkServer.setRequestHandler(CallToolRequestSchema, async () => ({
  content: [{ type: "text", text: JSON.stringify(ROW) }],
  isError: false,
  structuredContent: ROW,
}));
const memory = new MemoryTransport();
await sdkServer.connect(memory);
await memory.request({
  jsonrpc: "2.0",
  id: 0,
  method: "initialize",
  params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: "b", version: "1" } },
});
const sdk = (message: Message) => memory.request(message);

// --- timing -----------------------------------------------------------------------------------
let nextId = 1;
const listMessage = () => ({ jsonrpc: "2.0", id: nextId++, method: "tools/list", params: {} });
const callMessage = () => ({
  jsonrpc: "2.0",
  id: nextId++,
  method: "tools/call",
  params: { name: "recipes_tool_3", arguments: { id: ROW.id, limit: 10 } },
});

async function timePerOp(
  run: (message: Message) => Promise<unknown>,
  make: () => Message,
  n: number,
): Promise<number> {
  const start = performance.now();
  for (let i = 0; i < n; i++) await run(make());
  return ((performance.now() - start) * 1000) / n; // µs per op
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

// Same answers first: a benchmark of different work would be meaningless.
const [a, b] = [await core(callMessage()), await sdk(callMessage())];
if (!isDeepStrictEqual((a as { result: unknown }).result, (b as { result: unknown }).result)) {
  throw new Error(`core and SDK disagree: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
}

const N = 5000;
const ROUNDS = 7;
console.log("dispatch cost (µs per message, median of 7 interleaved rounds of 5000):");
for (const [label, make] of [
  ["tools/list (20 tools)", listMessage],
  ["tools/call", callMessage],
] as const) {
  await timePerOp(core, make, N); // warm-up
  await timePerOp(sdk, make, N);
  const coreTimes: number[] = [];
  const sdkTimes: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    coreTimes.push(await timePerOp(core, make, N));
    sdkTimes.push(await timePerOp(sdk, make, N));
  }
  const c = median(coreTimes);
  const s = median(sdkTimes);
  console.log(
    `  ${label.padEnd(22)} core ${c.toFixed(2)} µs   SDK Server ${s.toFixed(2)} µs   ratio ${(c / s).toFixed(2)}`,
  );
}

// --- bundle size ------------------------------------------------------------------------------
async function bundleSize(contents: string): Promise<{ min: number; gz: number }> {
  const result = await build({
    stdin: { contents, resolveDir: process.cwd(), loader: "ts" },
    bundle: true,
    minify: true,
    format: "esm",
    platform: "neutral",
    mainFields: ["module", "main"],
    conditions: ["import"],
    write: false,
    logLevel: "silent",
    external: ["node:*"],
  });
  const bytes = result.outputFiles[0]!.contents;
  return { min: bytes.byteLength, gz: gzipSync(bytes, { level: 9 }).byteLength };
}

const kb = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
const coreSize = await bundleSize(`export * from "./src/mcp/index.ts";`);
const sdkServerOnly = await bundleSize(`export { Server } from "@modelcontextprotocol/sdk/server/index.js";`);
const sdkFull = await bundleSize(
  `export { Server } from "@modelcontextprotocol/sdk/server/index.js";
   export { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
   export { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";`,
);
console.log("bundle size (esbuild --bundle --minify, then gzip -9):");
console.log(
  `  core (src/mcp/index.ts, incl. valibot)         ${kb(coreSize.min)} min, ${kb(coreSize.gz)} gz`,
);
console.log(
  `  SDK Server                                     ${kb(sdkServerOnly.min)} min, ${kb(sdkServerOnly.gz)} gz   core/SDK gz ${(coreSize.gz / sdkServerOnly.gz).toFixed(2)}`,
);
console.log(
  `  SDK Server + web Streamable HTTP + stdio codec ${kb(sdkFull.min)} min, ${kb(sdkFull.gz)} gz   core/SDK gz ${(coreSize.gz / sdkFull.gz).toFixed(2)}`,
);
await sdkServer.close();
