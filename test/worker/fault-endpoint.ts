/**
 * A faulty database in front of the real local endpoint, for the timeout tests: requests to
 * `/hang` never get an answer (the whole database hangs); requests to `/sql` are forwarded unless
 * their body mentions `HANG_MARKER` (one collection's table hangs, the rest of the database works);
 * requests to `/lose` are forwarded and run, but their answer is lost (the connection is dropped).
 * A held request is released only when the client gives up.
 * On `/hold`, while holding is on (`POST /control/hold`), requests mentioning `HOLD_MARKER` wait
 * until `POST /control/release` (forwarded) or `POST /control/release?as=timeout` (answered with
 * Postgres' statement-timeout error), which also turns holding off; `GET /control/held` counts them.
 */
import { createServer, type IncomingMessage } from "node:http";
import { listenOnLoopback } from "../mcp/fixtures/node-http.ts";

/** A collection whose queries hang on the `/sql` path. */
export const HANG_MARKER = "hang_rows";
/** A collection whose queries wait on the `/hold` path while holding is on. */
export const HOLD_MARKER = "held_rows";

/** Postgres' answer to a statement cancelled at `statement_timeout`, as the Neon endpoint sends it. */
const STATEMENT_TIMEOUT = JSON.stringify({
  message: "canceling statement due to statement timeout",
  code: "57014",
  severity: "ERROR",
});

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export async function startFaultEndpoint(upstream: string): Promise<{ url: string; close(): Promise<void> }> {
  let holding = false;
  let held: Array<{ forward(): Promise<void>; fail(): void }> = [];
  const server = createServer(async (req, res) => {
    const body = await readBody(req);
    if (req.url?.startsWith("/control/")) {
      if (req.url === "/control/hold") holding = true;
      if (req.url.startsWith("/control/release")) {
        holding = false;
        const released = held;
        held = [];
        for (const request of released) {
          if (req.url.endsWith("as=timeout")) request.fail();
          else await request.forward();
        }
      }
      res.writeHead(200, { "content-type": "application/json" });
      return void res.end(JSON.stringify({ held: held.length }));
    }
    if (req.url === "/hang" || body.includes(HANG_MARKER)) return;
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (typeof value === "string" && name.startsWith("neon-")) headers[name] = value;
    }
    const forward = async () => {
      const answer = await fetch(upstream, { method: "POST", headers, body });
      if (req.url === "/lose") return void req.socket.destroy();
      res.writeHead(answer.status, { "content-type": "application/json" });
      res.end(Buffer.from(await answer.arrayBuffer()));
    };
    if (req.url === "/hold" && holding && body.includes(HOLD_MARKER)) {
      const fail = () => {
        res.writeHead(400, { "content-type": "application/json" });
        res.end(STATEMENT_TIMEOUT);
      };
      return void held.push({ forward, fail });
    }
    await forward();
  });
  return listenOnLoopback(server);
}
