/**
 * The `--audit-log` writer: appends one JSON line per permission check and per tool call,
 * `{"ts","kind","action","resource","decision"}`, written synchronously so every line is on disk
 * before the response that caused it. Never records file contents or environment values. A check
 * that repeats one of the last ones exactly (a tool asking in a loop) is counted rather than
 * written again: one line per repeated check says how often, before the next call's line.
 */
import { closeSync, mkdirSync, openSync, realpathSync, writeSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { canonicalPath, type Decision, type PermissionAction, type PermissionKind } from "./permissions.ts";

/** One audit record. */
export interface AuditEvent {
  kind: PermissionKind;
  action: PermissionAction;
  resource: string;
  decision: Decision;
}

/** Receives audit events; the no-op sink is used when no `--audit-log` is given. */
export interface AuditSink {
  /** Writes `event` (after the counts of repeated checks so far). */
  record(event: AuditEvent): void;
  /**
   * A permission check: written like {@link record}, unless it repeats one of the last
   * {@link REPEAT_WINDOW} different checks since the last {@link record} — then only counted.
   */
  recordCheck(event: AuditEvent): void;
  close(): void;
  /** False for the no-op sink, so producers can skip building events. */
  readonly enabled: boolean;
  /** Where the log file is now (its directory may have been renamed since it was opened). */
  location(): string | undefined;
}

/** The sink used without `--audit-log`. */
export const NO_AUDIT: AuditSink = {
  record() {},
  recordCheck() {},
  close() {},
  enabled: false,
  location: () => undefined,
};

/**
 * The longest resource a line carries (PATH_MAX): tool code picks the names it asks about, and
 * one check of a megabyte-long name must not cost the log a megabyte.
 */
export const MAX_AUDIT_RESOURCE_CHARS = 4096;

/** `resource`, cut to {@link MAX_AUDIT_RESOURCE_CHARS} with its full length noted. */
function auditResource(resource: string): string {
  if (resource.length <= MAX_AUDIT_RESOURCE_CHARS) return resource;
  return `${resource.slice(0, MAX_AUDIT_RESOURCE_CHARS)}…(${resource.length} chars)`;
}

/**
 * How many different checks a repeat is looked for among (the most recent first): enough for the
 * few checks one operation makes (a rename asks three), few enough that the CLI holds at most
 * this many lines however many names a tool asks about.
 */
export const REPEAT_WINDOW = 32;

/** The resource of the line that counts `count` repeats of a check whose resource was `resource`. */
export function repeatedResource(resource: string, count: number): string {
  return `${resource}…(${count} more time${count === 1 ? "" : "s"})`;
}

/** A check already written (its resource cut), and how often it was asked again since (not written). */
interface Repeat {
  event: AuditEvent;
  count: number;
  /** When it was last asked. */
  ts: string;
}

/** Opens (creating parent directories) an append-only JSONL audit log. */
export function openAuditLog(path: string, cwd: string = process.cwd()): AuditSink {
  const file = resolve(cwd, path);
  let fd: number;
  let opened: string;
  try {
    mkdirSync(dirname(file), { recursive: true });
    fd = openSync(file, "a");
    opened = canonicalPath(file);
  } catch (error) {
    throw new Error(`failed to open audit log ${file}: ${(error as NodeJS.ErrnoException).code ?? error}`);
  }
  let open = true;
  /** Writes `event` as it is (its resource already cut). */
  const write = (event: AuditEvent, ts = new Date().toISOString()) => {
    const line = JSON.stringify({
      ts,
      kind: event.kind,
      action: event.action,
      resource: event.resource,
      decision: event.decision,
    });
    writeSync(fd, `${line}\n`);
  };
  /** The checks written since the last plain line, keyed by their line without `ts`, oldest first. */
  const recent = new Map<string, Repeat>();
  const settle = (key: string) => {
    const repeat = recent.get(key);
    recent.delete(key);
    if (repeat && repeat.count > 0)
      write({ ...repeat.event, resource: repeatedResource(repeat.event.resource, repeat.count) }, repeat.ts);
  };
  const settleAll = () => {
    for (const key of [...recent.keys()]) settle(key);
  };
  return {
    enabled: true,
    record(event) {
      if (!open) return;
      settleAll();
      write({ ...event, resource: auditResource(event.resource) });
    },
    recordCheck(event) {
      if (!open) return;
      const cut = { ...event, resource: auditResource(event.resource) };
      const key = JSON.stringify([cut.kind, cut.action, cut.resource, cut.decision]);
      const seen = recent.get(key);
      const ts = new Date().toISOString();
      if (seen) {
        seen.count++;
        seen.ts = ts;
        // Most recent last: the oldest leaves the window first.
        recent.delete(key);
        recent.set(key, seen);
        return;
      }
      write(cut, ts);
      recent.set(key, { event: cut, count: 0, ts });
      if (recent.size > REPEAT_WINDOW) settle(recent.keys().next().value as string);
    },
    location() {
      try {
        return realpathSync(`/proc/self/fd/${fd}`);
      } catch {
        return opened;
      }
    },
    close() {
      if (open) {
        settleAll();
        closeSync(fd);
      }
      open = false;
    },
  };
}
