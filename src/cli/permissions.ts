/**
 * The permission model of the `amber` CLI: the policy built from `--sandbox`, `--deny-*`,
 * `--allow-*` and `--permission-policy`, and the pure decision function the broker consults.
 * Paths are absolute and canonical (symlinks resolved) and match by whole components, so an
 * allowed directory is a jail. Shared by the CLI process and the sandboxed tool process.
 */
import { readFileSync, realpathSync, statSync } from "node:fs";
import { basename, dirname, isAbsolute, join, resolve, sep } from "node:path";

/** What kind of resource a check is about (the audit log's `kind`). */
export type PermissionKind = "FileSystem" | "Network" | "Environment" | "Process";
/** What is done to it (the audit log's `action`). */
export type PermissionAction = "Read" | "Write" | "Connect" | "Listen" | "Execute";
/** The outcome of a check. */
export type Decision = "Allow" | "Deny";

/** A category `--sandbox` / `--deny-*` can deny wholesale. */
export type Category = "fs.read" | "fs.write" | "net.connect" | "net.listen" | "env.read" | "run.execute";

/** The effective policy: denied categories plus the grants that punch through them. */
export interface Policy {
  denied: Category[];
  allowRead: string[];
  allowWrite: string[];
  allowNet: string[];
  /** Hosts granted for listening only (`--allow-listen`, `allow_listen`); `allowNet` grants both. */
  allowListen?: string[];
  allowEnv: string[];
  allowRun: string[];
}

/** The permission-related command-line options, as parsed. */
export interface PermissionFlags {
  sandbox?: boolean;
  denyFs?: boolean;
  denyNet?: boolean;
  denyEnv?: boolean;
  denyRun?: boolean;
  allowRead?: string[];
  allowWrite?: string[];
  allowNet?: string[];
  allowListen?: string[];
  allowEnv?: string[];
  allowRun?: string[];
  permissionPolicy?: string;
}

/** A denial, thrown into tool code and reported to callers. */
export class PermissionDeniedError extends Error {
  code = "ERR_PERMISSION_DENIED";
  kind: PermissionKind;
  action: PermissionAction;
  resource: string;

  constructor(kind: PermissionKind, action: PermissionAction, resource: string) {
    super(`permission denied: ${kind} ${action} ${resource}`);
    this.name = "PermissionDeniedError";
    this.kind = kind;
    this.action = action;
    this.resource = resource;
  }
}

/** A policy that allows everything (no flags given). */
export function allowAllPolicy(): Policy {
  return {
    denied: [],
    allowRead: [],
    allowWrite: [],
    allowNet: [],
    allowListen: [],
    allowEnv: [],
    allowRun: [],
  };
}

const ALL_CATEGORIES: Category[] = [
  "fs.read",
  "fs.write",
  "net.connect",
  "net.listen",
  "env.read",
  "run.execute",
];

/** {@link canonicalPathWith} in the CLI's own process: its working directory and `fs.realpathSync`. */
export const canonicalPath = (path: string, cwd: string = process.cwd()): string =>
  canonicalPathWith(path, cwd, realpathSync);

/**
 * Makes `path` absolute and canonical: symlinks resolved through the longest existing prefix, the
 * rest appended lexically (so a file about to be created still gets its directory's real path).
 * Nothing is defaulted: in the tool's process the broker passes the working directory and the
 * `realpath` it captured before tool code ran (tool code can replace `process.cwd` and
 * `fs.realpathSync`, so a default here would be whatever the tool assigned).
 */
export function canonicalPathWith(path: string, cwd: string, realpath: (p: string) => string): string {
  const absolute = resolve(cwd, path);
  let head = absolute;
  const tail: string[] = [];
  for (;;) {
    try {
      const real = realpath(head);
      return tail.length === 0 ? real : join(real, ...tail.reverse());
    } catch (error) {
      if (
        (error as NodeJS.ErrnoException).code !== "ENOENT" &&
        (error as NodeJS.ErrnoException).code !== "ENOTDIR"
      )
        throw error;
      const parent = dirname(head);
      if (parent === head) return absolute;
      tail.push(basename(head));
      head = parent;
    }
  }
}

/** True when `path` is `root` or inside it, by whole path components. */
export function isWithin(path: string, root: string): boolean {
  if (path === root) return true;
  const prefix = root.endsWith(sep) ? root : root + sep;
  return path.startsWith(prefix);
}

function splitList(values: string[] | undefined): string[] {
  return (values ?? [])
    .flatMap((v) => v.split(","))
    .map((v) => v.trim())
    .filter((v) => v !== "");
}

function stringList(value: unknown, key: string, path: string): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || !value.every((v) => typeof v === "string")) {
    throw new Error(`Failed to parse permission policy ${path}: \`${key}\` must be an array of strings`);
  }
  return value as string[];
}

function readPolicyFile(file: string, cwd: string): PermissionFlags {
  const path = resolve(cwd, file);
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new Error(
      `Failed to read permission policy ${path}: ${(error as NodeJS.ErrnoException).code ?? error}`,
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new Error(`Failed to parse permission policy ${path}: ${(error as Error).message}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new Error(`Failed to parse permission policy ${path}: expected a JSON object`);
  }
  const root = parsed as Record<string, unknown>;
  const rules = (root.permissions ?? root) as Record<string, unknown>;
  if (typeof rules !== "object" || rules === null || Array.isArray(rules)) {
    throw new Error(`Failed to parse permission policy ${path}: \`permissions\` must be an object`);
  }
  const base = dirname(path);
  const bool = (key: string) => {
    const value = rules[key];
    if (value !== undefined && typeof value !== "boolean") {
      throw new Error(`Failed to parse permission policy ${path}: \`${key}\` must be a boolean`);
    }
    return value === true;
  };
  const paths = (key: string) =>
    stringList(rules[key], key, path).map((p) => (isAbsolute(p) ? p : join(base, p)));
  return {
    sandbox: bool("sandbox"),
    denyFs: bool("deny_fs"),
    denyNet: bool("deny_net"),
    denyEnv: bool("deny_env"),
    denyRun: bool("deny_run"),
    allowRead: paths("allow_read"),
    allowWrite: paths("allow_write"),
    allowNet: stringList(rules.allow_net, "allow_net", path),
    allowListen: stringList(rules.allow_listen, "allow_listen", path),
    allowEnv: stringList(rules.allow_env, "allow_env", path),
    allowRun: stringList(rules.allow_run, "allow_run", path),
  };
}

/**
 * Builds the effective policy, in the contract's order: `--sandbox` denies every category, then the
 * policy file and the `--deny-*` flags deny theirs, then every `--allow-*` grant (file and flags)
 * punches through. `alwaysReadable` (the entry file and its `tools.json`) is granted last.
 */
export function buildPolicy(flags: PermissionFlags, cwd: string, alwaysReadable: string[] = []): Policy {
  const file = flags.permissionPolicy ? readPolicyFile(flags.permissionPolicy, cwd) : {};
  const denied = new Set<Category>();
  if (flags.sandbox || file.sandbox) for (const c of ALL_CATEGORIES) denied.add(c);
  if (flags.denyFs || file.denyFs) {
    denied.add("fs.read");
    denied.add("fs.write");
  }
  if (flags.denyNet || file.denyNet) {
    denied.add("net.connect");
    denied.add("net.listen");
  }
  if (flags.denyEnv || file.denyEnv) denied.add("env.read");
  if (flags.denyRun || file.denyRun) denied.add("run.execute");
  // A grant flag without a value (`""`) grants its whole kind back, like Deno's bare `--allow-read`.
  const wholeKind: [string[] | undefined, Category[]][] = [
    [flags.allowRead, ["fs.read"]],
    [flags.allowWrite, ["fs.write"]],
    [flags.allowNet, ["net.connect", "net.listen"]],
    [flags.allowListen, ["net.listen"]],
    [flags.allowEnv, ["env.read"]],
    [flags.allowRun, ["run.execute"]],
  ];
  for (const [values, categories] of wholeKind)
    if (values?.includes("")) for (const c of categories) denied.delete(c);
  const canon = (p: string) => canonicalPath(p, cwd);
  const given = (values: string[] | undefined) => (values ?? []).filter((v) => v !== "");
  const allowRead = [...(file.allowRead ?? []), ...given(flags.allowRead)].map(canon);
  // Those files, not what a link in their place names: a `tools.json` that is a link to a directory
  // (`~/.ssh`, `/`) made everything below it readable.
  for (const p of alwaysReadable) if (isFile(p)) allowRead.push(canon(p));
  return {
    denied: ALL_CATEGORIES.filter((c) => denied.has(c)),
    allowRead: [...new Set(allowRead)],
    allowWrite: [...new Set([...(file.allowWrite ?? []), ...given(flags.allowWrite)].map(canon))],
    allowNet: [...new Set([...splitList(file.allowNet), ...splitList(flags.allowNet)])],
    allowListen: [...new Set([...splitList(file.allowListen), ...splitList(flags.allowListen)])],
    allowEnv: [...new Set([...splitList(file.allowEnv), ...splitList(flags.allowEnv)])],
    allowRun: [...new Set([...splitList(file.allowRun), ...splitList(flags.allowRun)])],
  };
}

/** The network grants that apply to `action`: `allowNet` for both, `allowListen` for listening. */
export function networkGrants(policy: Policy, action: PermissionAction): string[] {
  return action === "Listen" && policy.allowListen?.length
    ? [...policy.allowNet, ...policy.allowListen]
    : policy.allowNet;
}

/** Whether `path` is (or links to) a regular file. */
function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** True when the policy restricts nothing (no flag given): the tool process runs unconfined. */
export function isUnrestricted(policy: Policy): boolean {
  return policy.denied.length === 0;
}

/**
 * The host of a network resource: `host:port` and `[v6]:port` lose the port, `[v6]` its brackets;
 * anything else is a name as a whole. Only a numeric port is split off, and only an IPv6 address
 * (it has a `:`) is taken out of brackets: a name looked up is checked bare, and
 * `granted.example:x.attacker.example` or `[granted.example].x.attacker.example` is not the
 * granted name (it matched by what came before its `:` or inside its brackets).
 */
function hostOf(resource: string): string {
  const bracketed = /^\[([^\]]*:[^\]]*)\](?::\d{1,5})?$/.exec(resource);
  if (bracketed) return bracketed[1] as string;
  const withPort = /^([^:[\]]+):\d{1,5}$/.exec(resource);
  return withPort ? (withPort[1] as string) : resource;
}

/**
 * A network resource (or grant) as DNS compares names: lower case, and without the root label's
 * one trailing dot (`Example.COM.:443` is `example.com:443`). Anything else is left as it is:
 * `example.com..` is no name, and matches none.
 */
function netName(resource: string): string {
  return resource.toLowerCase().replace(/([^.])\.(:\d{1,5})?$/, "$1$2");
}

function commandMatches(command: string, grant: string): boolean {
  return (
    command === grant || basename(command) === grant || (isAbsolute(grant) && basename(grant) === command)
  );
}

/**
 * What a path under `/proc/<pid>` exposes beyond a file: a process's environment (`environ`), its
 * memory (`mem`: writing the CLI's is running code in it) or the pipes and sockets behind its file
 * descriptors (`fd/…` that canonicalised to no file: the CLI's stdin/stdout, the host's channel);
 * any other entry of a process (`entry`) is its to read but no one's to write (`oom_score_adj`, …).
 * `undefined` outside `/proc/<pid>` (`/proc/cpuinfo`) and for a descriptor that resolved to a file.
 */
function processFile(path: string): "environ" | "process" | "entry" | undefined {
  const match = /^\/proc\/(?:\d+|self|thread-self)(?:\/task\/\d+)?(\/.*)?$/.exec(path);
  if (!match) return undefined;
  const rest = match[1] ?? "";
  if (rest === "/environ") return "environ";
  return rest === "/mem" || rest.startsWith("/fd/") ? "process" : "entry";
}

/**
 * Decides one check. `resource` is a canonical absolute path for the file system, `host:port` or a
 * host for the network, a variable name for the environment, a command for processes.
 */
export function decide(
  policy: Policy,
  kind: PermissionKind,
  action: PermissionAction,
  resource: string,
): Decision {
  switch (kind) {
    case "FileSystem": {
      // Under any restriction, no file grant reaches past the file system: an environment only
      // with the environment granted, a process's memory or pipes never, its settings never to write.
      const write = action === "Write";
      const special = isUnrestricted(policy) ? undefined : processFile(resource);
      if (
        special === "process" ||
        (special === "environ" && policy.denied.includes("env.read")) ||
        (special === "entry" && write)
      )
        return "Deny";
      const grants = write ? policy.allowWrite : policy.allowRead;
      if (grants.some((root) => isWithin(resource, root))) return "Allow";
      return policy.denied.includes(write ? "fs.write" : "fs.read") ? "Deny" : "Allow";
    }
    case "Network": {
      const name = netName(resource);
      const grants = (action === "Listen" ? networkGrants(policy, action) : policy.allowNet).map(netName);
      if (grants.includes(name) || grants.includes(hostOf(name))) return "Allow";
      // A bare name is a lookup (a DNS check): of a host granted, with a port or not (what is dialled
      // is checked again on its address and port); `listen(port, host)` looks its host up first.
      if (
        hostOf(name) === name &&
        [...policy.allowNet, ...(policy.allowListen ?? [])].some((grant) => hostOf(netName(grant)) === name)
      )
        return "Allow";
      return policy.denied.includes(action === "Listen" ? "net.listen" : "net.connect") ? "Deny" : "Allow";
    }
    case "Environment":
      if (policy.allowEnv.includes(resource)) return "Allow";
      return policy.denied.includes("env.read") ? "Deny" : "Allow";
    case "Process":
      if (policy.allowRun.some((grant) => commandMatches(resource, grant))) return "Allow";
      return policy.denied.includes("run.execute") ? "Deny" : "Allow";
  }
}
