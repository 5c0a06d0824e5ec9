/**
 * The `--audit-log` writer: appends one JSON line per permission check and per tool call,
 * `{"ts","kind","action","resource","decision"}`, written synchronously so every line is on disk
 * before the response that caused it. Never records file contents or environment values.
 */
import { closeSync, mkdirSync, openSync, writeSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type { Decision, PermissionAction, PermissionKind } from "./permissions.ts";

/** One audit record. */
export interface AuditEvent {
  kind: PermissionKind;
  action: PermissionAction;
  resource: string;
  decision: Decision;
}

/** Receives audit events; the no-op sink is used when no `--audit-log` is given. */
export interface AuditSink {
  record(event: AuditEvent): void;
  close(): void;
  /** False for the no-op sink, so producers can skip building events. */
  readonly enabled: boolean;
}

/** The sink used without `--audit-log`. */
export const NO_AUDIT: AuditSink = { record() {}, close() {}, enabled: false };

/** Opens (creating parent directories) an append-only JSONL audit log. */
export function openAuditLog(path: string, cwd: string = process.cwd()): AuditSink {
  const file = resolve(cwd, path);
  let fd: number;
  try {
    mkdirSync(dirname(file), { recursive: true });
    fd = openSync(file, "a");
  } catch (error) {
    throw new Error(`failed to open audit log ${file}: ${(error as NodeJS.ErrnoException).code ?? error}`);
  }
  let open = true;
  return {
    enabled: true,
    record(event) {
      if (!open) return;
      const line = JSON.stringify({
        ts: new Date().toISOString(),
        kind: event.kind,
        action: event.action,
        resource: event.resource,
        decision: event.decision,
      });
      writeSync(fd, `${line}\n`);
    },
    close() {
      if (open) closeSync(fd);
      open = false;
    },
  };
}
