/**
 * The storage quota of an app: the bytes its collection tables and its stored events hold
 * (`storageBytes`, what the billing view reports as `storage_bytes`) may not grow past
 * `STORAGE_QUOTA_MIB` (wrangler.toml). Measuring on every write would add a query to the hot path,
 * so each isolate measures a project at most every {@link MEASURE_INTERVAL_MS}, in the background
 * (`waitUntil`), when the project writes, and refuses event ingestion (403 `quota_exceeded`) while
 * the last measurement is over the quota — inserts and updates while its tables alone are: events
 * come with the app's public client key, without a session, so anyone can send them, and counted
 * against row writes they let anyone lock the app's data (test/worker/tenant-red3.test.ts). Deletes and drops are never
 * refused: they are the way back under it (a delete of events tells this isolate what it freed,
 * {@link noteStorageFreed}). Reads never look.
 * The slack (README "Decisions"): an app can pass the quota by what it writes in one interval before
 * its isolates' next measurements.
 */
import { quotaExceeded } from "../errors.ts";
import { WeightedLru } from "../mcp/lru.ts";
import type { SqlRunner } from "./service.ts";
import { storageParts } from "./sql.ts";

/** The quota when `STORAGE_QUOTA_MIB` is unset or not a positive number: a free-tier app's 500 MiB. */
export const DEFAULT_STORAGE_QUOTA_MIB = 500;

/** How old a project's measurement may get before a write asks for a fresh one. */
export const MEASURE_INTERVAL_MS = 10_000;

/** Projects whose size one isolate remembers (a few dozen bytes each), least recently used out. */
const MAX_MEASURED_PROJECTS = 10_000;

const MIB = 1024 * 1024;

/** The quota a Worker runs with, in bytes: `STORAGE_QUOTA_MIB` when it is a positive number. */
export function storageQuotaBytes(setting: string | undefined): number {
  const mib = Number(setting);
  return (setting && Number.isFinite(mib) && mib > 0 ? mib : DEFAULT_STORAGE_QUOTA_MIB) * MIB;
}

interface Measurement {
  /** The last measured size; undefined until a measurement succeeded. */
  bytes: number | undefined;
  /** Of which the stored events' (0 until a measurement succeeded). */
  eventBytes: number;
  /** When it was measured (or last attempted), ms. */
  at: number;
  /** A measurement is running: no second one starts meanwhile. */
  pending: boolean;
  /** Bytes freed (noted) while the running measurement ran: it may or may not have seen them. */
  freedMeanwhile?: number;
}

/** An isolate's last known project sizes and when they are due again. Pure (the clock is passed in). */
export class StorageGauge {
  readonly #sizes = new WeightedLru<string, Measurement>(MAX_MEASURED_PROJECTS, () => 1);
  readonly #intervalMs: number;

  constructor(intervalMs: number) {
    this.#intervalMs = intervalMs;
  }

  /**
   * The project's last known size, and whether the caller should measure it now: never measured or
   * measured `intervalMs` ago, and no measurement running (a due one is marked running).
   */
  read(projectId: string, now: number): { bytes: number | undefined; due: boolean } {
    const entry = this.#sizes.get(projectId);
    const due = !entry || (!entry.pending && now - entry.at >= this.#intervalMs);
    if (due)
      this.#sizes.set(projectId, {
        bytes: entry?.bytes,
        eventBytes: entry?.eventBytes ?? 0,
        at: entry?.at ?? now,
        pending: true,
      });
    return { bytes: entry?.bytes, due };
  }

  /** Of the project's last known size, the bytes of its stored events (0 when unknown). */
  eventBytes(projectId: string): number {
    return this.#sizes.get(projectId)?.eventBytes ?? 0;
  }

  /**
   * A measurement ended: its size (of which `eventBytes` its events'), or undefined when it failed
   * (the last size is kept, retried later).
   */
  settle(projectId: string, bytes: number | undefined, now: number, eventBytes = 0): void {
    const entry = this.#sizes.get(projectId);
    const freed = entry?.freedMeanwhile ?? 0;
    if (bytes !== undefined && freed > 0) {
      // The measurement may have started before the bytes were freed: take the lower bound and
      // measure again on the next write.
      this.#sizes.set(projectId, {
        bytes: Math.max(0, bytes - freed),
        eventBytes: Math.max(0, eventBytes - freed),
        at: -Infinity,
        pending: false,
      });
      return;
    }
    this.#sizes.set(projectId, {
      bytes: bytes ?? entry?.bytes,
      eventBytes: bytes === undefined ? (entry?.eventBytes ?? 0) : eventBytes,
      at: now,
      pending: false,
    });
  }

  /**
   * This isolate freed `bytes` of the project (a delete of events): its known size drops by them at
   * once, and the next write measures again. Unknown projects are left unknown.
   */
  freed(projectId: string, bytes: number): void {
    const entry = this.#sizes.get(projectId);
    if (!entry) return;
    this.#sizes.set(projectId, {
      bytes: entry.bytes === undefined ? undefined : Math.max(0, entry.bytes - bytes),
      eventBytes: Math.max(0, entry.eventBytes - bytes),
      at: entry.pending ? entry.at : -Infinity,
      pending: entry.pending,
      freedMeanwhile: entry.pending ? (entry.freedMeanwhile ?? 0) + bytes : undefined,
    });
  }
}

const gauge = new StorageGauge(MEASURE_INTERVAL_MS);

/** A delete freed `bytes` of the project's storage: this isolate's guard counts them free at once. */
export function noteStorageFreed(projectId: string, bytes: number): void {
  gauge.freed(projectId, bytes);
}

/**
 * Refuses (throws 403 `quota_exceeded`) a write that would grow a project over its storage quota:
 * `rows` (an insert or update) while its tables are over it, `events` (ingestion) while its tables
 * and events together are.
 */
export type StorageGuard = (projectId: string, write: "rows" | "events") => void;

const mib = (bytes: number) => (bytes / MIB).toFixed(1);

/**
 * The guard of one request: no round trip of its own — a due measurement runs in the background
 * (`waitUntil`) on `db`, and the answer is the isolate's last known size against `quotaBytes`.
 */
export function storageGuard(
  db: SqlRunner,
  quotaBytes: number,
  waitUntil: (promise: Promise<unknown>) => void,
): StorageGuard {
  return (projectId, write) => {
    const { bytes, due } = gauge.read(projectId, Date.now());
    if (due) waitUntil(measure(db, projectId));
    if (bytes === undefined) return;
    if (write === "events" && bytes > quotaBytes) {
      throw quotaExceeded(
        `this app's collections and events hold ${mib(bytes)} MiB, over its storage quota of ${mib(quotaBytes)} MiB: ` +
          "delete events (DELETE /v1/admin/projects/:id/events?before=…) or drop collections to send events again " +
          "(reads and deletes still work; deleted events free their space at once)",
      );
    }
    const tables = bytes - gauge.eventBytes(projectId);
    if (write === "rows" && tables > quotaBytes) {
      throw quotaExceeded(
        `this app's collections hold ${mib(tables)} MiB, over its storage quota of ${mib(quotaBytes)} MiB: ` +
          "drop collections to write again " +
          "(reads and deletes still work; deleted rows free their space only once the database reclaims it)",
      );
    }
  };
}

async function measure(db: SqlRunner, projectId: string): Promise<void> {
  let tables: number | undefined;
  let events = 0;
  try {
    const { rows } = await db.execute(storageParts(projectId));
    const row = rows[0] as { tables: number | string; events: number | string };
    tables = Number(row.tables);
    events = Number(row.events);
  } catch (err) {
    console.error("storage measurement failed", err);
  }
  const measured = tables !== undefined && Number.isFinite(tables) && Number.isFinite(events);
  gauge.settle(
    projectId,
    measured ? (tables as number) + events : undefined,
    Date.now(),
    measured ? events : 0,
  );
}
