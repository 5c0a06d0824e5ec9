/**
 * A loopback HTTP server that answers every request with what it received, as JSON — the stand-in
 * for a developer's deployed function in Worker tests. `…/status/<code>` answers a plain-text <code> (with a `set-cookie`),
 * `…/redirect` a 302 to `/followed`, and `…/reply` — a hostile upstream the test scripts — answers
 * the request's JSON body `{status?, type?, parts: [[text, times], …], gzip?, length?, hang?}` as a
 * raw body (each `text` repeated `times` times, in order; gzip-compressed with `gzip`) with that
 * status and content type, a declared `content-length` of `length`, and — with `hang` — the body
 * written but never ended.
 *
 * It also checks the platform's `x-amba-signature` the way a developer's endpoint would, with its own
 * node:crypto implementation of the README's recipe (not the platform's code): `PUT
 * /__signing-secrets/<project id>` (body: the secret) registers a project's secret, and every echo
 * reports `signature`: "valid", "invalid", "stale" (timestamp outside 5 minutes), "missing" (no
 * header) or "unknown" (no secret registered for the `x-amba-project-id` sent) — "valid" when any of
 * the header's `v1=` values matches (a rotation's overlap carries two); `raw` is the body
 * text exactly as received, for tests that replay a request.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage } from "node:http";
import { gzipSync } from "node:zlib";
import { listenOnLoopback } from "../mcp/fixtures/node-http.ts";

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

/** The identity headers the signature covers, in the canonical order (README). */
const SIGNED = [
  "x-amba-project-id",
  "x-amba-user-id",
  "x-amba-user-email",
  "x-amba-function",
  "x-amba-function-version",
  "x-amba-request-id",
];

/** The README's verification, on node:crypto: what an endpoint would conclude of this request. */
function verdict(req: IncomingMessage, raw: Buffer, secrets: Map<string, string>): string {
  const header = req.headers["x-amba-signature"];
  if (typeof header !== "string") return "missing";
  const secret = secrets.get(String(req.headers["x-amba-project-id"]));
  if (secret === undefined) return "unknown";
  const t = /(?:^|,)t=(\d+)/.exec(header)?.[1];
  // Every v1 (a rotation's overlap sends the new and the old secret's): any one may match.
  const v1s = [...header.matchAll(/(?:^|,)v1=([0-9a-f]{64})/g)].map((m) => m[1] as string);
  if (!t || v1s.length === 0) return "invalid";
  const canonical = [
    "v1",
    t,
    req.method,
    `http://${req.headers.host}${req.url}`,
    createHash("sha256").update(raw).digest("hex"),
    ...SIGNED.map((name) => String(req.headers[name] ?? "")),
  ].join("\n");
  const expected = createHmac("sha256", secret).update(canonical).digest();
  if (!v1s.some((v1) => timingSafeEqual(expected, Buffer.from(v1, "hex")))) return "invalid";
  return Math.abs(Date.now() / 1000 - Number(t)) > 300 ? "stale" : "valid";
}

export async function startEchoServer(): Promise<{ url: string; close(): Promise<void> }> {
  const secrets = new Map<string, string>();
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks);
    const text = raw.toString("utf8");
    const url = new URL(req.url ?? "/", "http://echo");
    const registered = /^\/__signing-secrets\/([^/]+)$/.exec(url.pathname);
    if (registered && req.method === "PUT") {
      secrets.set(registered[1] as string, text);
      res.writeHead(204);
      return res.end();
    }
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
      raw: text,
      signature: verdict(req, raw, secrets),
    });
    res.writeHead(200, { "content-type": "application/json" });
    res.end(payload);
  });
  return listenOnLoopback(server);
}
