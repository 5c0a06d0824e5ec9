/**
 * A faulty database in front of the real local endpoint, for the timeout tests: requests to
 * `/hang` never get an answer (the whole database hangs); requests to `/sql` are forwarded unless
 * their body mentions `HANG_MARKER` (one collection's table hangs, the rest of the database works);
 * requests to `/lose` are forwarded and run, but their answer is lost (the connection is dropped).
 * A held request is released only when the client gives up.
 */
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";

/** A collection whose queries hang on the `/sql` path. */
export const HANG_MARKER = "hang_rows";

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export async function startFaultEndpoint(upstream: string): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer(async (req, res) => {
    const body = await readBody(req);
    if (req.url === "/hang" || body.includes(HANG_MARKER)) return;
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (typeof value === "string" && name.startsWith("neon-")) headers[name] = value;
    }
    const answer = await fetch(upstream, { method: "POST", headers, body });
    if (req.url === "/lose") return void req.socket.destroy();
    res.writeHead(answer.status, { "content-type": "application/json" });
    res.end(Buffer.from(await answer.arrayBuffer()));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
