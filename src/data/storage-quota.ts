/**
 * The storage quota of an app: the bytes its collection tables and its stored events hold
 * (`storageBytes`, what the billing view reports as `storage_bytes`) may not grow past
 * `STORAGE_QUOTA_MIB` (wrangler.toml). Measuring on every write would add a query to the hot path,
 * so each isolate measures a project at most every {@link MEASURE_INTERVAL_MS}, in the background
 * (`waitUntil`), when the project writes, and refuses inserts, updates and event ingestion (403
 * `quota_exceeded`) while the last measurement is over the quota. Deletes and drops are never
 * refused: they are the way back under it (a delete of events tells this isolate what it freed,
 * {@link noteStorageFreed}). Reads never look.
 * The slack (README "Decisions"): an app can pass the quota by what it writes in one interval before
 * its isolates' next measurements.
 */
import { quotaExceeded } from "../errors.ts";
import { WeightedLru } from "../mcp/lru.ts";
import type { SqlRunner } from "./service.ts";
import { storageBytes } from "./sql.ts";

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
    if (due) this.#sizes.set(projectId, { bytes: entry?.bytes, at: entry?.at ?? now, pending: true });
    return { bytes: entry?.bytes, due };
  }

  /** A measurement ended: its size, or undefined when it failed (the last size is kept, retried later). */
  settle(projectId: string, bytes: number | undefined, now: number): void {
    const entry = this.#sizes.get(projectId);
    const freed = entry?.freedMeanwhile ?? 0;
    if (bytes !== undefined && freed > 0) {
      // The measurement may have started before the bytes were freed: take the lower bound and
      // measure again on the next write.
      this.#sizes.set(projectId, { bytes: Math.max(0, bytes - freed), at: -Infinity, pending: false });
      return;
    }
    this.#sizes.set(projectId, { bytes: bytes ?? entry?.bytes, at: now, pending: false });
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

/** Refuses (throws 403 `quota_exceeded`) a write that would grow a project over its storage quota. */
export type StorageGuard = (projectId: string) => void;

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
  return (projectId) => {
    const { bytes, due } = gauge.read(projectId, Date.now());
    if (due) waitUntil(measure(db, projectId));
    if (bytes !== undefined && bytes > quotaBytes) {
      throw quotaExceeded(
        `this app's collections and events hold ${mib(bytes)} MiB, over its storage quota of ${mib(quotaBytes)} MiB: ` +
          "drop collections or delete events (DELETE /v1/admin/projects/:id/events?before=…) to write again " +
          "(reads and deletes still work; deleted rows free their space only once the database reclaims it, deleted events at once)",
      );
    }
  };
}

async function measure(db: SqlRunner, projectId: string): Promise<void> {
  let bytes: number | undefined;
  try {
    const { rows } = await db.execute(storageBytes(projectId));
    bytes = Number((rows[0] as { bytes: number | string }).bytes);
  } catch (err) {
    console.error("storage measurement failed", err);
  }
  gauge.settle(projectId, Number.isFinite(bytes) ? bytes : undefined, Date.now());
}
