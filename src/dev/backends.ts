/**
 * SQL backends for the local Neon endpoint: the embedded database (PGlite + pgvector, persisted
 * under `.amba/` or loaded from a snapshot) or a real Postgres (`DATABASE_URL`). Both answer in the
 * shape the Neon HTTP protocol needs: every value as Postgres text, rows as arrays, type OIDs.
 */
import { PGlite, type Results, types } from "@electric-sql/pglite";
import { vector } from "@electric-sql/pglite-pgvector";
import pg from "pg";

export interface RawField {
  name: string;
  dataTypeID: number;
}

export interface RawResult {
  command: string;
  rowCount: number;
  fields: RawField[];
  rows: (string | null)[][];
}

export interface RawQuery {
  query: string;
  params: (string | null)[];
}

export interface TransactionOptions {
  isolationLevel?: string;
  readOnly?: boolean;
  deferrable?: boolean;
}

export interface SqlBackend {
  readonly kind: "pglite" | "postgres";
  query(q: RawQuery): Promise<RawResult>;
  /** All queries in one transaction; any error rolls everything back. */
  transaction(queries: RawQuery[], options?: TransactionOptions): Promise<RawResult[]>;
  /** Run a multi-statement script (migrations). */
  exec(script: string): Promise<void>;
  close(): Promise<void>;
}

const keepText = (value: string) => value;

/** Serializers are looked up per OID, so one proxy makes every parameter pass through as text. */
const textSerializers = new Proxy({}, { get: () => keepText }) as Record<number, (v: string) => string>;

/**
 * Parsers are merged by spreading, so they need real keys: every OID PGlite would parse (its
 * defaults plus the array types it registers at start-up) maps to the identity. Other OIDs
 * (pgvector, …) already come back as text.
 */
function textParsers(db: PGlite): Record<number, (v: string) => string> {
  const known = (db as unknown as { parsers: Record<string, unknown> }).parsers;
  const oids = new Set([...Object.keys(types.parsers), ...Object.keys(known)]);
  return Object.fromEntries([...oids].map((oid) => [oid, keepText]));
}

const commandOf = (query: string) => /^\s*(\w+)/.exec(query)?.[1]?.toUpperCase() ?? "";

const ISOLATION_LEVELS: Record<string, string> = {
  ReadUncommitted: "READ UNCOMMITTED",
  ReadCommitted: "READ COMMITTED",
  RepeatableRead: "REPEATABLE READ",
  Serializable: "SERIALIZABLE",
};

function transactionMode({ isolationLevel, readOnly, deferrable }: TransactionOptions): string | null {
  const parts: string[] = [];
  const level = isolationLevel && ISOLATION_LEVELS[isolationLevel];
  if (level) parts.push(`ISOLATION LEVEL ${level}`);
  if (readOnly !== undefined) parts.push(readOnly ? "READ ONLY" : "READ WRITE");
  if (deferrable !== undefined) parts.push(deferrable ? "DEFERRABLE" : "NOT DEFERRABLE");
  return parts.length ? `SET TRANSACTION ${parts.join(", ")}` : null;
}

function fromPglite(query: string, result: Results<unknown[]>): RawResult {
  return {
    command: commandOf(query),
    rowCount: result.affectedRows ?? result.rows.length,
    fields: result.fields.map((f) => ({ name: f.name, dataTypeID: f.dataTypeID })),
    rows: result.rows as (string | null)[][],
  };
}

export interface PgliteOptions {
  /** Directory to persist to; in memory when absent. */
  dataDir?: string;
  /** A `dumpDataDir()` tarball to start from (fast start for tests). */
  snapshot?: Blob;
}

/** Open the embedded database with pgvector. */
export async function openPglite(options: PgliteOptions = {}): Promise<SqlBackend & { db: PGlite }> {
  const db = await PGlite.create({
    dataDir: options.dataDir,
    loadDataDir: options.snapshot,
    extensions: { vector },
  });
  const opts = { rowMode: "array" as const, parsers: textParsers(db), serializers: textSerializers };
  return {
    kind: "pglite",
    db,
    async query({ query, params }) {
      return fromPglite(query, await db.query<unknown[]>(query, params, opts));
    },
    transaction(queries, options = {}) {
      return db.transaction(async (tx) => {
        const mode = transactionMode(options);
        if (mode) await tx.query(mode);
        const results: RawResult[] = [];
        for (const { query, params } of queries) {
          results.push(fromPglite(query, await tx.query<unknown[]>(query, params, opts)));
        }
        return results;
      });
    },
    async exec(script) {
      await db.exec(script);
    },
    close: () => db.close(),
  };
}

/**
 * Server-side limit of one statement on a real Postgres (the Worker's own deadline is 8 s): a query
 * the Worker gave up on does not keep running. PGlite has no statement timeout (it ignores the
 * setting), so there the Worker's deadline is the only limit.
 */
export const STATEMENT_TIMEOUT_MS = 8_000;

/**
 * Connections to a real Postgres per backend: each in-flight request or batch holds one, and the
 * concurrency tests run 16 batches at once (well below a default server's 100).
 */
const POSTGRES_POOL_SIZE = 20;

/** Connect to a real Postgres (Neon over TCP works too). */
export async function openPostgres(connectionString: string): Promise<SqlBackend> {
  const pool = new pg.Pool({
    connectionString,
    max: POSTGRES_POOL_SIZE,
    connectionTimeoutMillis: 5000,
    statement_timeout: STATEMENT_TIMEOUT_MS,
  });
  const types = { getTypeParser: () => (value: string) => value };
  const run = async (client: pg.PoolClient | pg.Pool, { query, params }: RawQuery): Promise<RawResult> => {
    const result = await client.query({ text: query, values: params, rowMode: "array", types });
    return {
      command: result.command ?? commandOf(query),
      rowCount: result.rowCount ?? result.rows.length,
      fields: result.fields.map((f) => ({ name: f.name, dataTypeID: f.dataTypeID })),
      rows: result.rows,
    };
  };
  // Fail fast with one clear line when the server is unreachable.
  const probe = await pool.connect();
  probe.release();
  return {
    kind: "postgres",
    query: (q) => run(pool, q),
    async transaction(queries, options = {}) {
      const client = await pool.connect();
      try {
        await client.query("BEGIN");
        const mode = transactionMode(options);
        if (mode) await client.query(mode);
        const results: RawResult[] = [];
        for (const q of queries) results.push(await run(client, q));
        await client.query("COMMIT");
        return results;
      } catch (err) {
        await client.query("ROLLBACK").catch(() => {});
        throw err;
      } finally {
        client.release();
      }
    },
    async exec(script) {
      await pool.query(script);
    },
    close: () => pool.end(),
  };
}
