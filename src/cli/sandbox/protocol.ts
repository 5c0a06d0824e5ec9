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
  /**
   * With `fd`: what the CLI itself does, if it allows, on what the descriptor names (through
   * `/proc/<host>/fd/<fd>`, which no swap on the tool's path can redirect); see file-ops.ts.
   */
  op?: FileOp;
}

/** An entry as a {@link FileOp} names it: a directory the host opened, and a name in it (or the entry itself). */
export interface PinnedEntry {
  fd: number;
  name?: string;
}

/**
 * A path call the CLI does for the host on a descriptor it opened (Node has no such call on a
 * descriptor, or refuses it under its permission model). Those marked "entry" act on the entry
 * `name` in the directory `fd` without following it (or, with no name, on the entry the descriptor
 * itself names); the others on the file the descriptor names.
 */
export type FileOp =
  | { o: "readdir"; types: boolean }
  | { o: "access"; mode: number }
  | { o: "statfs" }
  | { o: "chmod"; mode: number }
  | { o: "chown"; uid: number; gid: number }
  | { o: "utimes"; atime: number; mtime: number }
  /** entry: */
  | { o: "lchown"; uid: number; gid: number }
  | { o: "lutimes"; atime: number; mtime: number }
  | { o: "readlink" }
  | { o: "unlink" }
  | { o: "rmdir" }
  | { o: "rm"; recursive: boolean }
  | { o: "mkdir"; mode: number }
  /** In the directory `fd`: a new directory named `name` (or nothing) and six random characters. */
  | { o: "mkdtemp" }
  /** entry, and `from` another entry, read and written (moved or linked from). */
  | { o: "rename"; from: PinnedEntry }
  | { o: "link"; from: PinnedEntry };

/** A directory entry's type as libuv numbers it (`fs.constants.UV_DIRENT_*`, what `fs.Dirent` takes). */
export const DIRENT = {
  UNKNOWN: 0,
  FILE: 1,
  DIR: 2,
  LINK: 3,
  FIFO: 4,
  SOCKET: 5,
  CHAR: 6,
  BLOCK: 7,
} as const;

/** The calls that only look (the others write what they act on). */
const LOOKING_OPS = new Set<FileOp["o"]>(["readdir", "access", "statfs", "readlink"]);

/** The action `op` needs, decided by the CLI whatever a check claims. */
export function opAction(op: FileOp["o"]): PermissionAction {
  return LOOKING_OPS.has(op) ? "Read" : "Write";
}

/** A file-system error of a {@link FileOp}, as Node's (`ENOENT: no such file or directory, unlink …`). */
export interface OpError {
  code: string;
  errno?: number;
  syscall?: string;
  /** The description between the code and the syscall (`no such file or directory`). */
  text: string;
}

/** CLI → host on fd 5: the decision, with the resource as audited and the program to run. */
export interface Answer {
  /** The nonce of the check this answers (set by the CLI when it writes the answer). */
  n?: string;
  d: Decision;
  r: string;
  x?: string;
  /** With a refusal of a {@link FileOp}'s other entry: the action refused there. */
  a?: PermissionAction;
  /** What an allowed {@link FileOp} returned (JSON), or its error. */
  v?: unknown;
  e?: OpError;
}

/** Host → CLI: an error escaped every call (uncaught exception / rejection). */
export interface FaultMessage {
  k: string;
  t: "fault";
  error: string;
}

export type ParentMessage = InitMessage | WarmMessage | CallMessage;
export type ChildMessage = ReadyMessage | ResultMessage | CheckMessage | FaultMessage;
