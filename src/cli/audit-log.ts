/**
 * The `--audit-log` writer: appends one JSON line per permission check and per tool call,
 * `{"ts","kind","action","resource","decision"}`, written synchronously so every line is on disk
 * before the response that caused it. Never records file contents or environment values.
 */
import { closeSync, constants, fstatSync, mkdirSync, openSync, realpathSync, writeSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { printableJson } from "../printable.ts";
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

const { O_APPEND, O_CREAT, O_NOFOLLOW, O_NONBLOCK, O_WRONLY } = constants;

/** What a log that is no regular file, device or stderr of ours is refused as. */
const NOT_A_FILE = "not a regular file (a pipe or socket)";

/** Whether `fd` is the file behind our own stderr (`/dev/stderr` reopened: a pipe, say). */
function isOwnStderr(fd: number): boolean {
  try {
    const ours = fstatSync(2);
    const it = fstatSync(fd);
    return ours.dev === it.dev && ours.ino === it.ino;
  } catch {
    return false;
  }
}

/**
 * The log's descriptor, opened to append: a regular file or a device at the path itself, or our
 * own stderr (`/dev/stderr`, whatever it is). Any other symbolic link at the path is refused, and
 * never creates its target: it may have been planted by a tool that could write the directory in
 * an earlier run — to a file, the log would append lines that tool chose (JSON, whose strings a
 * shell still expands) to a file of the user's, such as `~/.bashrc`; to `/dev/null`, it would hide
 * every line. Both opens are non-blocking, and a pipe or socket (but our stderr) is refused:
 * opening a FIFO nobody reads waits forever, one a process the tool left behind reads hands it
 * every line and, once it stops reading, would stop the CLI; our stdout is the protocol stream.
 * The flag stays on the descriptor: a device or our stderr that cannot take a line at once fails
 * that line, closed, as a full disk does (a regular file ignores it).
 */
function openAppend(file: string): number {
  let fd: number | undefined;
  try {
    fd = openSync(file, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK, 0o666);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENXIO") throw new Error(NOT_A_FILE);
    if (code !== "ELOOP") throw error;
  }
  const linked = fd === undefined;
  try {
    fd ??= openSync(file, O_WRONLY | O_APPEND | O_NONBLOCK);
  } catch (error) {
    throw (error as NodeJS.ErrnoException).code === "ENXIO" ? new Error(NOT_A_FILE) : error;
  }
  const stat = fstatSync(fd);
  if (isOwnStderr(fd) || (!linked && (stat.isFile() || stat.isCharacterDevice()))) return fd;
  closeSync(fd);
  if (!linked || !(stat.isFile() || stat.isCharacterDevice())) throw new Error(NOT_A_FILE);
  throw new Error(
    `a symbolic link to a ${stat.isFile() ? "file" : "device"} (give the ${stat.isFile() ? "file" : "device"} itself)`,
  );
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
