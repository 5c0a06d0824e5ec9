/**
 * The `--audit-log` writer: appends one JSON line per permission check and per tool call,
 * `{"ts","kind","action","resource","decision"}`, written synchronously so every line is on disk
 * before the response that caused it. Never records file contents or environment values.
 */
import { closeSync, constants, fstatSync, mkdirSync, openSync, realpathSync, writeSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { canonicalPath, type Decision, type PermissionAction, type PermissionKind } from "./permissions.ts";
import { printableJson } from "./printable.ts";

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
  /** Where the log file is now (its directory may have been renamed since it was opened). */
  location(): string | undefined;
}

/** The sink used without `--audit-log`. */
export const NO_AUDIT: AuditSink = { record() {}, close() {}, enabled: false, location: () => undefined };

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

const { O_APPEND, O_CREAT, O_NOFOLLOW, O_WRONLY } = constants;

/**
 * The log's descriptor, opened to append. A symbolic link at the path is followed only to what is
 * not a regular file (`/dev/stderr`, a pipe), and never creates its target: one to a file may have
 * been planted by a tool that could write the directory in an earlier run, and the log would append
 * lines that tool chose (JSON, whose strings a shell still expands) to a file of the user's, such
 * as `~/.bashrc`.
 */
function openAppend(file: string): number {
  try {
    return openSync(file, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW, 0o666);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ELOOP") throw error;
  }
  const fd = openSync(file, O_WRONLY | O_APPEND);
  if (!fstatSync(fd).isFile()) return fd;
  closeSync(fd);
  throw new Error("a symbolic link to a file (give the file itself)");
}

/** Opens (creating parent directories) an append-only JSONL audit log. */
export function openAuditLog(path: string, cwd: string = process.cwd()): AuditSink {
  const file = resolve(cwd, path);
  let fd: number;
  let opened: string;
  try {
    mkdirSync(dirname(file), { recursive: true });
    fd = openAppend(file);
    opened = canonicalPath(file);
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new Error(`failed to open audit log ${file}: ${reason}`);
  }
  let open = true;
  return {
    enabled: true,
    record(event) {
      if (!open) return;
      // Tool code picks the names: what JSON leaves raw (C1, bidi, U+2028/9, which line splitters
      // such as Python's take as line ends) is escaped too, so `tail -f` shows it as written.
      const line = printableJson(
        JSON.stringify({
          ts: new Date().toISOString(),
          kind: event.kind,
          action: event.action,
          resource: auditResource(event.resource),
          decision: event.decision,
        }),
      );
      writeSync(fd, `${line}\n`);
    },
    location() {
      try {
        return realpathSync(`/proc/self/fd/${fd}`);
      } catch {
        return opened;
      }
    },
    close() {
      if (open) closeSync(fd);
      open = false;
    },
  };
}
