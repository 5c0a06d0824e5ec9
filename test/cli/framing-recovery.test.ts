/**
 * `amber mcp` recovers from a malformed Content-Length frame (issue 13): an error for that frame,
 * then the next valid header is found and served — one case per malformed-frame class.
 */
import { describe, expect, it } from "vitest";
import { cliSuite, LineClient } from "./helpers.ts";

const TOOLS = `
/** Add two numbers. */
export function add(a: number, b: number) {
  return a + b;
}
`;

const body = (id: number) =>
  JSON.stringify({
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params: { name: "add", arguments: { a: id, b: 40 } },
  });
const framed = (text: string, length: string | number = Buffer.byteLength(text)) =>
  `Content-Length: ${length}\r\n\r\n${text}`;

const CLASSES: Record<string, string> = {
  "too short": framed(body(1), 12),
  "too long": framed(body(1), Buffer.byteLength(body(1)) + 30),
  negative: framed(body(1), -3),
  "non-numeric": framed(body(1), "twelve"),
  missing: `Content-Type: application/json\r\n\r\n${body(1)}`,
};

/** Reads Content-Length frames until `count` bodies arrived. */
async function readFrames(client: LineClient, count: number): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  while (out.length < count) {
    const header = await client.nextLine();
    const length = Number(/^Content-Length: (\d+)\r$/i.exec(header)?.[1]);
    expect(await client.nextLine()).toBe("\r");
    out.push(JSON.parse(await client.nextBody(length)));
  }
  return out;
}

describe("amber mcp framing recovery", () => {
  const { bin, dir } = cliSuite({ "tools.ts": TOOLS });

  for (const [name, bad] of Object.entries(CLASSES)) {
    it(`${name}: answers an error for the bad frame and serves the following ones`, async () => {
      const client = new LineClient(bin, ["mcp", "--untyped", "tools.ts"], { cwd: dir });
      // The frames after the bad one are long enough to cover a too-long Content-Length.
      client.write(framed(body(0)) + bad + framed(body(2)) + framed(body(3)));
      const replies = await readFrames(client, 4);
      const byId = (id: unknown) => replies.find((r) => r.id === id);
      expect(byId(null)).toMatchObject({ error: { code: -32700 } });
      for (const id of [0, 2, 3])
        expect(byId(id)).toMatchObject({ result: { content: [{ type: "text", text: String(id + 40) }] } });
      client.child.stdin.end();
      expect(await client.exited).toBe(0);
    });
  }
});
