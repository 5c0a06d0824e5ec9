/**
 * A loopback HTTP server that answers every request with what it received, as JSON — the stand-in
 * for a developer's deployed function in Worker tests. `…/status/<code>` answers a plain-text <code> (with a `set-cookie`),
 * `…/redirect` a 302 to `/followed`, and `…/reply` — a hostile upstream the test scripts — answers
 * the request's JSON body `{status?, type?, parts: [[text, times], …], gzip?, length?, hang?}` as a
 * raw body (each `text` repeated `times` times, in order; gzip-compressed with `gzip`) with that
 * status and content type, a declared `content-length` of `length`, and — with `hang` — the body
 * written but never ended.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";

/** What `…/reply` answers (see the module comment). */
interface Reply {
  status?: number;
  type?: string;
  parts: Array<[string, number]>;
  gzip?: boolean;
  length?: number;
  hang?: boolean;
  /** Written to the socket as is (status line, headers and body), then closed unless `hang`. */
  raw?: string;
}

export async function startEchoServer(): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    const url = new URL(req.url ?? "/", "http://echo");
    if (url.pathname.endsWith("/redirect")) {
      res.writeHead(302, { location: "/followed", "content-type": "application/json" });
      return res.end(JSON.stringify({ moved: "/followed" }));
    }
    if (url.pathname.endsWith("/reply")) {
      const reply = JSON.parse(text) as Reply;
      if (reply.raw !== undefined) return void req.socket[reply.hang ? "write" : "end"](reply.raw);
      const raw = Buffer.from(reply.parts.map(([part, times]) => part.repeat(times)).join(""));
      const payload = reply.gzip ? gzipSync(raw) : raw;
      res.writeHead(reply.status ?? 200, {
        "content-type": reply.type ?? "application/json",
        ...(reply.gzip ? { "content-encoding": "gzip" } : {}),
        ...(reply.length === undefined ? {} : { "content-length": String(reply.length) }),
      });
      return reply.hang ? res.write(payload) : res.end(payload);
    }
    const status = /\/status\/(\d{3})$/.exec(url.pathname);
    if (status) {
      res.writeHead(Number(status[1]), { "content-type": "text/plain", "set-cookie": "upstream=1" });
      return res.end("upstream failure");
    }
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {}
    const payload = JSON.stringify({
      method: req.method,
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: req.headers,
      body,
    });
    res.writeHead(200, { "content-type": "application/json" });
    res.end(payload);
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
