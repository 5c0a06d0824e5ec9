/**
 * A local endpoint speaking the Neon serverless HTTP protocol, so the Worker's unchanged driver path
 * (`@neondatabase/serverless` → drizzle neon-http) runs against the embedded database or a local
 * Postgres. Single queries `{query, params}` and transactions `{queries: [...]}`; values as text
 * with type OIDs; Postgres errors as HTTP 400 with their fields (code, constraint, …).
 *
 * Like Neon, it wants a credential: the password of the `Neon-Connection-String` the driver sends
 * with every request must be the endpoint's secret (random per start unless given; compared in
 * constant time), otherwise 401. Only the Worker's `DATABASE_URL` carries it, so nothing else on
 * the machine — a function URL pointed at this port included — can run SQL here.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { RawQuery, SqlBackend, TransactionOptions } from "./backends.ts";

/** Postgres error fields the driver copies onto its error object. */
const ERROR_FIELDS = [
  "severity",
  "code",
  "detail",
  "hint",
  "position",
  "internalPosition",
  "internalQuery",
  "where",
  "schema",
  "table",
  "column",
  "dataType",
  "constraint",
  "file",
  "line",
  "routine",
] as const;

const MAX_BODY_BYTES = 64 * 1024 * 1024;

export interface NeonEndpoint {
  /** The URL to give the driver (`neonConfig.fetchEndpoint`, or `LOCAL_DB_URL`). */
  url: string;
  /** The connection string to give the driver (`DATABASE_URL`): its password is the secret. */
  connectionString: string;
  port: number;
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new ProtocolError(`request body exceeds ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

class ProtocolError extends Error {}

function toRawQuery(value: unknown): RawQuery {
  const q = value as { query?: unknown; params?: unknown };
  if (typeof q?.query !== "string") throw new ProtocolError("each query needs a string `query`");
  const params = q.params ?? [];
  if (!Array.isArray(params)) throw new ProtocolError("`params` must be an array");
  return {
    query: q.query,
    params: params.map((p) =>
      p === null || p === undefined ? null : typeof p === "string" ? p : JSON.stringify(p),
    ),
  };
}

function batchOptions(req: IncomingMessage): TransactionOptions {
  const flag = (name: string) => {
    const value = req.headers[name];
    return value === undefined ? undefined : value === "true";
  };
  return {
    isolationLevel: req.headers["neon-batch-isolation-level"] as string | undefined,
    readOnly: flag("neon-batch-read-only"),
    deferrable: flag("neon-batch-deferrable"),
  };
}

function errorBody(err: unknown): Record<string, unknown> {
  const source = err as Record<string, unknown>;
  const body: Record<string, unknown> = { message: err instanceof Error ? err.message : String(err) };
  for (const field of ERROR_FIELDS) {
    if (source?.[field] !== undefined) body[field] = String(source[field]);
  }
  return body;
}

const digest = (value: string) => createHash("sha256").update(value).digest();

/** The password of a `Neon-Connection-String` header, or null when there is none. */
function passwordOf(header: string | string[] | undefined): string | null {
  if (typeof header !== "string") return null;
  try {
    return decodeURIComponent(new URL(header).password);
  } catch {
    return null;
  }
}

export interface NeonEndpointOptions {
  port?: number;
  host?: string;
  /** The credential requests must carry (as the connection string's password); random when absent. */
  secret?: string;
}

/** Serve `backend` over the Neon HTTP protocol on 127.0.0.1 (port 0 = any free port). */
export async function startNeonEndpoint(
  backend: SqlBackend,
  { port = 0, host = "127.0.0.1", secret = randomBytes(24).toString("base64url") }: NeonEndpointOptions = {},
): Promise<NeonEndpoint> {
  const expected = digest(secret);
  // Digests have one length, so the comparison takes the same time whatever was sent.
  const authorized = (req: IncomingMessage) => {
    const password = passwordOf(req.headers["neon-connection-string"]);
    return password !== null && timingSafeEqual(digest(password), expected);
  };
  const server: Server = createServer(async (req, res) => {
    const send = (status: number, body: unknown) => {
      const text = JSON.stringify(body);
      res.writeHead(status, {
        "content-type": "application/json",
        "content-length": Buffer.byteLength(text),
      });
      res.end(text);
    };
    if (req.method !== "POST") return send(405, { message: "use POST" });
    if (!authorized(req)) {
      req.resume();
      return send(401, { message: "missing or invalid database credential" });
    }
    try {
      let payload: { query?: unknown; queries?: unknown };
      try {
        payload = JSON.parse(await readBody(req));
      } catch (err) {
        throw err instanceof ProtocolError ? err : new ProtocolError("request body is not valid JSON");
      }
      if (Array.isArray(payload?.queries)) {
        const results = await backend.transaction(payload.queries.map(toRawQuery), batchOptions(req));
        return send(200, { results: results.map((r) => ({ ...r, rowAsArray: true })) });
      }
      const result = await backend.query(toRawQuery(payload));
      return send(200, { ...result, rowAsArray: true });
    } catch (err) {
      return send(400, errorBody(err));
    }
  });
  // Idle keep-alive connections stay open until the client closes them: with Node's default (the
  // server closes them after 5 s) a pooled connection workerd picks up just then is reset under it,
  // and the query fails with "Network connection lost" (seen in bursts of concurrent calls).
  server.keepAliveTimeout = 0;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://${host}:${bound}/sql`,
    connectionString: `postgresql://amba:${encodeURIComponent(secret)}@localhost/amba`,
    port: bound,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
