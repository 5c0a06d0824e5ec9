/**
 * The official MCP SDK client, connected to the Worker in-process (its fetch goes to
 * `exports.default.fetch`), for app-MCP tests.
 */

import { exports } from "cloudflare:workers";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const worker = (exports as unknown as { default: { fetch(req: Request): Promise<Response> } }).default;

/** Connect (initialize) to `url` with these headers; the caller closes the client. */
export async function connectClient(url: string, headers: Record<string, string>): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers },
    fetch: (input, init) => worker.fetch(new Request(input, init)),
  });
  const client = new Client({ name: "app-mcp-test", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

/** The parsed JSON of a tool result's text content. */
// biome-ignore lint/suspicious/noExplicitAny: tests assert the shape
export function resultJson(result: unknown): any {
  const content = (result as { content: { type: string; text: string }[] }).content;
  return JSON.parse(content[0]!.text);
}
