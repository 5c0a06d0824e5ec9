/**
 * The trusted side of every permission check: runs in the CLI process, out of reach of tool code.
 * The tool host forwards what it is about to do; the judge decides with the policy, resolves what
 * the host cannot be trusted to resolve (programs through the CLI's `PATH`, granted host names to
 * addresses) and writes the audit line from its own decision.
 */
import { lookup } from "node:dns/promises";
import { accessSync, closeSync, constants, openSync, readlinkSync, realpathSync } from "node:fs";
import { isIP } from "node:net";
import { delimiter, isAbsolute, join, resolve } from "node:path";
import type { AuditSink } from "../audit-log.ts";
import {
  canonicalPath,
  type Decision,
  decide,
  isUnrestricted,
  isWithin,
  networkGrants,
  type PermissionAction,
  type PermissionKind,
  type Policy,
} from "../permissions.ts";
import { opPath, performFileOp } from "./file-ops.ts";
import { type Answer, type CheckMessage, type FileOp, opAction, type PinnedEntry } from "./protocol.ts";

/** The shell `exec`, `execSync` and `shell: true` run (Node's default on POSIX). */
export const DEFAULT_SHELL = "/bin/sh";

function realOrSelf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** `name` through `PATH` (as the CLI started with), or undefined. */
export function whichExecutable(name: string, pathList: string | undefined): string | undefined {
  for (const dir of (pathList ?? "").split(delimiter)) {
    if (dir === "") continue;
    const candidate = join(dir, name);
    if (executable(candidate)) return candidate;
  }
  return undefined;
}

/**
 * What descriptor `fd` of process `host` really is: the path the kernel keeps for the open file
 * (symlinks and swapped directories already behind it), or, for a pipe or socket, the descriptor's
 * `/proc` entry, which no grant covers under a restriction; undefined when there is no such
 * descriptor (or no pid to look in). With `name`, the descriptor is a directory and the answer is
 * its entry of that name (one name, no `..`).
 */
export function openedFile(host: number | undefined, fd: number, name?: string): string | undefined {
  if (host === undefined || !Number.isInteger(fd) || fd < 0) return undefined;
  if (name !== undefined && (name === "" || name === "." || name === ".." || name.includes("/")))
    return undefined;
  const entry = `/proc/${host}/fd/${fd}`;
  let target: string;
  try {
    target = readlinkSync(entry);
  } catch {
    return undefined;
  }
  const file = target.startsWith("/") ? target : entry;
  return name === undefined ? file : join(file, name);
}

/** Linux's `O_PATH`: a descriptor that names a file without opening it for reading or writing. */
const O_PATH = 0o10000000;

/**
 * A descriptor of this process for what descriptor `fd` of process `host` names (its `/proc` link
 * opened, which the kernel resolves to that very file, not by its path), or undefined if there is
 * none.
 */
function holdDescriptor(host: number | undefined, fd: number): number | undefined {
  if (host === undefined || !Number.isInteger(fd) || fd < 0) return undefined;
  try {
    return openSync(`/proc/${host}/fd/${fd}`, O_PATH);
  } catch {
    return undefined;
  }
}

/** Decides checks for one tool host. */
export class Judge {
  #policy: Policy;
  #audit: AuditSink;
  #path: string | undefined;
  #cwd: string;
  /** Real paths of the granted programs. */
  #programs = new Set<string>();
  /** Addresses of the granted host names (refreshed when a dialled address is not among them). */
  #addresses = new Map<string, Set<string>>();
  /** Files the sandbox itself stands on (see {@link Judge#guarded}). */
  #machinery: string[];

  /**
   * `machinery`: the files (or directories) every new tool host is started from — the Node binary,
   * the host script, the compiled bundles: no write grant covers them.
   */
  constructor(
    policy: Policy,
    audit: AuditSink,
    machinery: string[] = [],
    cwd = process.cwd(),
    pathList = process.env.PATH,
  ) {
    this.#policy = policy;
    this.#audit = audit;
    this.#path = pathList;
    this.#cwd = cwd;
    this.#machinery = machinery.map((file) => canonicalPath(file));
    for (const grant of policy.allowRun) {
      const found = grant.includes("/") ? resolve(cwd, grant) : whichExecutable(grant, pathList);
      if (found) this.#programs.add(realOrSelf(found));
    }
  }

  /**
   * Decides `check`, audits it, and answers. `host` is the pid of the tool host that asks: a check
   * of a descriptor it opened (`fd`) is decided on what that descriptor really is.
   */
  answer(check: CheckMessage, host?: number): Promise<Answer> {
    return check.op === undefined ? this.#decide(check, host) : this.#held(check, host);
  }

  /**
   * A file call the CLI makes (`op`): decided on, and made through, descriptors of the CLI's own,
   * opened first on what the host's name. The host's numbers are the host's to reuse: while it
   * waits for this answer, its libuv pool still runs the tool's queued `close` and `open`, and a
   * number read twice — once to decide, once to act — could name another file the second time (one
   * only readable, say). A descriptor the CLI holds names the same file until it is closed.
   */
  async #held(check: CheckMessage, host: number | undefined): Promise<Answer> {
    const held: number[] = [];
    const hold = (fd: number): number => {
      const own = holdDescriptor(host, fd);
      if (own === undefined) return -1; // nothing there: decided as no descriptor (refused)
      held.push(own);
      return own;
    };
    try {
      const op = check.op as FileOp;
      const fd = check.fd === undefined ? undefined : hold(check.fd);
      const moved =
        op.o === "rename" || op.o === "link" ? { ...op, from: { ...op.from, fd: hold(op.from.fd) } } : op;
      return await this.#decide({ ...check, fd, op: moved }, process.pid);
    } finally {
      for (const own of held) closeSync(own);
    }
  }

  async #decide(check: CheckMessage, host?: number): Promise<Answer> {
    const { kind, action } = check;
    const resource = check.fd === undefined ? check.resource : openedFile(host, check.fd, check.name);
    if (resource === undefined) return this.#record(kind, action, check.resource, "Deny");
    // A file call the CLI does is decided on what it does, whatever the check says.
    const misnamed = check.op !== undefined && (kind !== "FileSystem" || action !== opAction(check.op.o));
    if (misnamed || check.denied || (action === "Write" && this.#guarded(resource)))
      return this.#record(kind, action, resource, "Deny");
    if (check.exec) return this.#program(resource, check.exec.cwd);
    if (kind === "Network" && resource.startsWith("addr:")) return this.#address(action, resource.slice(5));
    const decision = decide(this.#policy, kind, action, resource);
    const answer =
      check.peek && decision === "Allow"
        ? { d: decision, r: resource }
        : this.#record(kind, action, resource, decision);
    if (check.op === undefined || decision !== "Allow" || host === undefined || check.fd === undefined)
      return answer;
    return this.#perform(check.op, host, { fd: check.fd, name: check.name }, answer);
  }

  /**
   * Does an allowed file call for host `host` on what its descriptor names (file-ops.ts). A move or
   * a link is decided on its other entry too (read and written), here: the host's own checks of it
   * are only as good as the host, and tool code could send this check by itself.
   */
  async #perform(op: FileOp, host: number, entry: PinnedEntry, answer: Answer): Promise<Answer> {
    let from: string | undefined;
    if (op.o === "rename" || op.o === "link") {
      const source = openedFile(host, op.from.fd, op.from.name);
      for (const action of ["Read", "Write"] as const) {
        const allowed =
          source !== undefined &&
          !(action === "Write" && this.#guarded(source)) &&
          decide(this.#policy, "FileSystem", action, source) === "Allow";
        if (!allowed)
          return { ...this.#record("FileSystem", action, source ?? `fd:${op.from.fd}`, "Deny"), a: action };
      }
      from = opPath(host, op.from, source as string, op.o);
    }
    const at = opPath(host, entry, answer.r, op.o);
    return { ...answer, ...(await performFileOp(op, at, from, entry.name !== undefined)) };
  }

  /**
   * Whether writing `path` would touch what the sandbox stands on: the audit log (tool code would
   * forge or erase lines), what a new tool host starts from (it would run the tool's code outside
   * the broker) or a granted program (it runs outside the sandbox) — the file itself, anything
   * inside such a directory, or a directory above one (renamed or removed with it). Only under a
   * restriction: without one nothing is enforced.
   */
  #guarded(path: string): boolean {
    if (isUnrestricted(this.#policy)) return false;
    const log = this.#audit.location();
    // A granted program too: one the tool could rewrite would run the tool's code outside the
    // sandbox under the grant (`--allow-run ./build.sh --allow-write .`).
    return [...this.#machinery, ...this.#programs, ...(log === undefined ? [] : [log])].some(
      (file) => isWithin(file, path) || isWithin(path, file),
    );
  }

  #record(kind: PermissionKind, action: PermissionAction, resource: string, d: Decision, x?: string): Answer {
    this.#audit.record({ kind, action, resource, decision: d });
    return x === undefined ? { d, r: resource } : { d, r: resource, x };
  }

  /** A program: a bare name through the CLI's `PATH`, anything with a slash from the host's cwd. */
  #program(command: string, cwd: string): Answer {
    const unrestricted = !this.#policy.denied.includes("run.execute");
    const found =
      command.includes("/") || isAbsolute(command)
        ? resolve(this.#cwd, cwd, command)
        : whichExecutable(command, this.#path);
    if (found === undefined) {
      return this.#record("Process", "Execute", command, unrestricted ? "Allow" : "Deny");
    }
    const real = realOrSelf(found);
    const allowed = unrestricted || this.#programs.has(real);
    // The host runs the real path, resolved here: the path found can hold a link the kernel resolves
    // again in the child, to something else (one through `/proc/self/cwd` names the CLI's working
    // directory here and the child's there), or one the tool swaps after this answer. No write grant
    // reaches the real path of a granted program or a directory above it (`#guarded`).
    return this.#record("Process", "Execute", real, allowed ? "Allow" : "Deny", real);
  }

  /**
   * The address a socket is about to dial or bind (`ip:port`), after any name lookup: allowed when
   * granted as such or when it is an address of a granted host name (resolved here, not in the host).
   */
  async #address(action: PermissionAction, resource: string): Promise<Answer> {
    const policy = this.#policy;
    if (decide(policy, "Network", action, resource) === "Allow")
      return this.#record("Network", action, resource, "Allow");
    const colon = resource.lastIndexOf(":");
    const ip = resource.slice(0, colon).replace(/^\[(.*)\]$/, "$1");
    const port = resource.slice(colon + 1);
    const granted = (known: Map<string, Set<string>>) =>
      networkGrants(policy, action).some((grant) => {
        const [host, grantPort] = splitGrant(grant);
        return (grantPort === undefined || grantPort === port) && known.get(host)?.has(ip) === true;
      });
    if (!granted(this.#addresses)) await this.#resolveGrants();
    return this.#record("Network", action, resource, granted(this.#addresses) ? "Allow" : "Deny");
  }

  async #resolveGrants(): Promise<void> {
    const grants = [...this.#policy.allowNet, ...(this.#policy.allowListen ?? [])];
    const names = new Set(grants.map((grant) => splitGrant(grant)[0]));
    await Promise.all(
      [...names].map(async (name) => {
        if (isIP(name)) return;
        try {
          const found = await lookup(name, { all: true });
          this.#addresses.set(name, new Set(found.map((a) => a.address)));
        } catch {
          this.#addresses.set(name, new Set());
        }
      }),
    );
  }
}

/** `host[:port]` of a `--allow-net` grant (`[v6]:port` too). */
function splitGrant(grant: string): [string, string | undefined] {
  if (grant.startsWith("[")) {
    const end = grant.indexOf("]");
    const rest = grant.slice(end + 1);
    return [grant.slice(1, end), rest.startsWith(":") ? rest.slice(1) : undefined];
  }
  const colon = grant.lastIndexOf(":");
  if (colon > 0 && grant.indexOf(":") === colon) return [grant.slice(0, colon), grant.slice(colon + 1)];
  return [grant, undefined];
}
