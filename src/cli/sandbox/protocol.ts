/**
 * The messages between the CLI process and its tool host (over the Node IPC channel of a child
 * process, or as JSON text over a worker thread's port).
 * Every message from the tool process carries the secret key handed over in `init`, so tool code
 * that writes to the channel on its own cannot forge results or audit lines. The CLI sends one call
 * at a time (a session runs its calls strictly in order) and the host answers each as soon as it settles.
 */
import type { Decision, PermissionAction, PermissionKind, Policy } from "../permissions.ts";

/** Parent → child: load the compiled tool module. */
export interface InitMessage {
  t: "init";
  key: string;
  policy: Policy;
  /** The tool file compiled to a CommonJS bundle. */
  code: string;
  filename: string;
  isolatePerCall: boolean;
  audit: boolean;
}

/** Parent → child: call one export. */
export interface CallMessage {
  t: "call";
  id: number;
  name: string;
  args: unknown;
}

/** Child → parent: the module loaded (or failed to). */
export interface ReadyMessage {
  k: string;
  t: "ready";
  error?: string;
}

/** Child → parent: a call finished. */
export interface ResultMessage {
  k: string;
  t: "result";
  id: number;
  ok: boolean;
  value?: unknown;
  error?: string;
}

/** Child → parent: a permission check happened. */
export interface AuditMessage {
  k: string;
  t: "audit";
  e: [PermissionKind, PermissionAction, string, Decision];
}

/** Child → parent: an error escaped every call (uncaught exception / rejection). */
export interface FaultMessage {
  k: string;
  t: "fault";
  error: string;
}

/** Worker → parent: the tool called `process.abort()` (workers cannot abort; the thread ends). */
export interface AbortMessage {
  k: string;
  t: "abort";
}

export type ParentMessage = InitMessage | CallMessage;
export type ChildMessage = ReadyMessage | ResultMessage | AuditMessage | FaultMessage | AbortMessage;
