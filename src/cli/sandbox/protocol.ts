/**
 * The messages between the CLI process and its tool host, one JSON text per line over three pipes
 * the host gets as file descriptors (no Node IPC channel, nothing on the `process` object):
 * - fd 3, host → CLI: `ready`, `result`, `check`, `fault`, `abort`, each carrying the secret key
 *   handed over in `init` (a line without it means tool code wrote to the pipe: the CLI ends the host);
 * - fd 4, CLI → host: `init`, then `warm` once the host is ready, then one `call` at a time;
 * - fd 5, CLI → host: the answer to each `check`, read synchronously while the host waits.
 * The CLI decides every check and writes the audit line; the host only enforces the answer.
 * The key keeps stray writes out, but tool code shares the host's memory (a heap snapshot shows
 * it): so each check also carries a fresh random nonce that its answer echoes, and the host takes
 * only the answer to its own check — an answer to a check tool code forged is never mistaken for it.
 */
import type { Decision, PermissionAction, PermissionKind } from "../permissions.ts";

/** File descriptors of the three pipes, as the host sees them. */
export const HOST_OUT_FD = 3;
export const HOST_CALLS_FD = 4;
export const HOST_ANSWERS_FD = 5;

/** CLI → host: load the compiled tool module. */
export interface InitMessage {
  t: "init";
  key: string;
  /** Whether the broker runs (anything restricted or audited). */
  broker: boolean;
  /** Whether files are restricted at all (Node's permission model then refuses every symlink). */
  fsRestricted: boolean;
  /** Whether workers, addons, WASI and the inspector are refused outright (anything restricted). */
  noWorkers: boolean;
  /** The tool file compiled to a CommonJS bundle. */
  code: string;
  filename: string;
}

/**
 * CLI → host, once the host is ready: run the call path once on the host's own function (no tool
 * code), answered by a `result` with {@link WARM_UP_ID}, so the first real call finds that path
 * compiled — a fresh `--isolate-per-call` host's first call is the only one it gets.
 */
export interface WarmMessage {
  t: "warm";
}

/** The id of the warm-up run's result (calls count from 1). */
export const WARM_UP_ID = 0;

/** CLI → host: call one export. */
export interface CallMessage {
  t: "call";
  id: number;
  name: string;
  args: unknown;
  /** Positional parameters: spread `args` by these names (`null`: pass undefined). */
  params?: (string | null)[];
}

/** Host → CLI: the module loaded (or failed to). */
export interface ReadyMessage {
  k: string;
  t: "ready";
  error?: string;
}

/** Host → CLI: a call finished. */
export interface ResultMessage {
  k: string;
  t: "result";
  id: number;
  ok: boolean;
  value?: unknown;
  error?: string;
}

/**
 * Host → CLI: may this happen? `resource` is what the broker saw (a path already made absolute in the
 * host, `host:port`, a variable name, a command); `exec` marks a program to run, which the CLI
 * resolves to an executable path; `denied` reports a refusal that already happened (Node's own
 * permission model refused it), to be audited as a denial.
 */
export interface CheckMessage {
  k: string;
  t: "check";
  /** A fresh random value the answer echoes (unguessable: tool code cannot run while the host waits). */
  n: string;
  kind: PermissionKind;
  action: PermissionAction;
  resource: string;
  exec?: { cwd: string };
  denied?: true;
  /** Decide, but audit only a denial (a lower-level check audits what really happens). */
  peek?: true;
  /**
   * A descriptor the host just opened: the CLI decides on what it really is (the host's
   * `/proc/<pid>/fd/<fd>`), not on `resource` — a path can be swapped between its check and the open.
   */
  fd?: number;
  /** With `fd`, a directory: the check is about its entry of this name. */
  name?: string;
}

/** CLI → host on fd 5: the decision, with the resource as audited and the program to run. */
export interface Answer {
  /** The nonce of the check this answers (set by the CLI when it writes the answer). */
  n?: string;
  d: Decision;
  r: string;
  x?: string;
}

/** Host → CLI: an error escaped every call (uncaught exception / rejection). */
export interface FaultMessage {
  k: string;
  t: "fault";
  error: string;
}

export type ParentMessage = InitMessage | WarmMessage | CallMessage;
export type ChildMessage = ReadyMessage | ResultMessage | CheckMessage | FaultMessage;
