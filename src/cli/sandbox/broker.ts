/**
 * The in-process permission broker of the tool process. It patches the real Node built-ins in place
 * (fs sync/callback/promises/streams, net/tls/http via `net.Socket#connect` and `net.Server#listen`,
 * dgram, dns, child_process, worker_threads, inspector, wasi, `process.env`, `process.binding`,
 * `process.dlopen`, `process.kill`, `module.register`) so every route to them — `require`, dynamic
 * `import()`, `createRequire`, or `this.constructor.constructor("return process")()` — reaches the
 * same checked functions. Node's own permission model, set up by the parent, is the second wall.
 * Runs only inside the tool process; nothing here may use a patched function.
 */
import childProcess from "node:child_process";
import dgram from "node:dgram";
import dns from "node:dns";
import fs from "node:fs";
import inspector from "node:inspector";
import moduleApi from "node:module";
import net from "node:net";
import { fileURLToPath } from "node:url";
import wasi from "node:wasi";
import workerThreads from "node:worker_threads";
import {
  canonicalPath,
  type Decision,
  decide,
  isUnrestricted,
  type PermissionAction,
  PermissionDeniedError,
  type PermissionKind,
  type Policy,
} from "../permissions.ts";

/** Reports one check (the tool process forwards it to the parent, which writes the audit log). */
export type AuditReporter = (
  kind: PermissionKind,
  action: PermissionAction,
  resource: string,
  decision: Decision,
) => void;

type AnyFunction = (...args: unknown[]) => unknown;
type Target = Record<string | symbol, unknown>;

// Captured before anything is patched: the broker's own file-system access.
const realpathOriginal = fs.realpathSync.bind(fs);
const cwdOriginal = process.cwd.bind(process);

/** Installs the broker for `policy`. Call once, before any tool code runs. */
export function installBroker(policy: Policy, report: AuditReporter): void {
  const restricted = !isUnrestricted(policy);

  // Reporting goes through Node internals that may touch checked APIs themselves; those nested
  // checks belong to the broker, not to the tool, and are neither audited nor denied.
  let reporting = false;
  const check = (kind: PermissionKind, action: PermissionAction, resource: string, forceDeny = false) => {
    if (reporting) return;
    const decision: Decision = forceDeny ? "Deny" : decide(policy, kind, action, resource);
    reporting = true;
    try {
      report(kind, action, resource, decision);
    } finally {
      reporting = false;
    }
    if (decision === "Deny") throw new PermissionDeniedError(kind, action, resource);
  };

  // ---- file system -------------------------------------------------------------------------
  const toPath = (value: unknown): string | null => {
    if (typeof value === "string") return value;
    if (value instanceof Uint8Array) return Buffer.from(value).toString();
    if (value instanceof URL) return value.protocol === "file:" ? fileURLToPath(value) : null;
    return null;
  };
  const checkPath = (value: unknown, action: "Read" | "Write") => {
    const path = toPath(value);
    if (path === null) return;
    let resource: string;
    let escaped = false;
    try {
      resource = canonicalPath(path, cwdOriginal(), realpathOriginal);
    } catch {
      // Resolving went through a place Node's permission model hides: out of the jail.
      resource = canonicalPath(path, cwdOriginal(), (p) => p);
      escaped = restricted;
    }
    check("FileSystem", action, resource, escaped);
  };
  const isWriteFlag = (flags: unknown): boolean => {
    if (flags === undefined || flags === null) return false;
    if (typeof flags === "number") {
      const c = fs.constants;
      return (flags & (c.O_WRONLY | c.O_RDWR | c.O_CREAT | c.O_TRUNC | c.O_APPEND)) !== 0;
    }
    return /[wa+]/.test(String(flags));
  };

  /** Replaces `target[name]` with a version that runs `guard` first; `denied` answers a denial instead of throwing. */
  const wrap = (
    target: Target,
    name: string,
    guard: (args: unknown[]) => void,
    denied?: (args: unknown[]) => unknown,
  ) => {
    const original = target[name];
    if (typeof original !== "function") return;
    const checked = function (this: unknown, ...args: unknown[]) {
      try {
        guard(args);
      } catch (error) {
        if (denied && error instanceof PermissionDeniedError) return denied(args);
        throw error;
      }
      return Reflect.apply(original as AnyFunction, this, args);
    };
    for (const key of Reflect.ownKeys(original)) {
      if (key === "length" || key === "name" || key === "prototype") continue;
      const descriptor = Reflect.getOwnPropertyDescriptor(original, key);
      if (descriptor) Reflect.defineProperty(checked, key, descriptor);
    }
    Object.defineProperty(checked, "name", { value: original.name });
    Reflect.defineProperty(target, name, {
      value: checked,
      writable: true,
      configurable: true,
      enumerable: Object.getOwnPropertyDescriptor(target, name)?.enumerable ?? true,
    });
  };

  const READ_1 = [
    "access",
    "readFile",
    "readdir",
    "readlink",
    "realpath",
    "stat",
    "lstat",
    "statfs",
    "opendir",
    "watch",
    "watchFile",
    "openAsBlob",
    "glob",
  ];
  const WRITE_1 = [
    "appendFile",
    "chmod",
    "chown",
    "lchown",
    "lchmod",
    "lutimes",
    "utimes",
    "mkdir",
    "mkdtemp",
    "rm",
    "rmdir",
    "truncate",
    "unlink",
    "writeFile",
  ];
  const patchFsLike = (target: Target, suffixes: string[]) => {
    for (const suffix of suffixes) {
      for (const base of READ_1) wrap(target, base + suffix, (a) => checkPath(a[0], "Read"));
      for (const base of WRITE_1) wrap(target, base + suffix, (a) => checkPath(a[0], "Write"));
      wrap(target, `open${suffix}`, (a) => {
        checkPath(a[0], "Read");
        if (isWriteFlag(a[1])) checkPath(a[0], "Write");
      });
      for (const base of ["copyFile", "cp"]) {
        wrap(target, base + suffix, (a) => {
          checkPath(a[0], "Read");
          checkPath(a[1], "Write");
        });
      }
      for (const base of ["rename", "link"]) {
        wrap(target, base + suffix, (a) => {
          checkPath(a[0], "Read");
          checkPath(a[0], "Write");
          checkPath(a[1], "Write");
        });
      }
      wrap(target, `symlink${suffix}`, (a) => {
        const link = toPath(a[1]);
        const linkTarget = toPath(a[0]);
        if (link !== null && linkTarget !== null) {
          checkPath(
            canonicalPath(
              linkTarget,
              canonicalPath(`${link}/..`, cwdOriginal(), (p) => p),
              (p) => p,
            ),
            "Read",
          );
        }
        checkPath(a[1], "Write");
      });
    }
  };
  const fsTarget = fs as unknown as Target;
  const nativeRealpath = fs.realpath.native;
  const nativeRealpathSync = fs.realpathSync.native;
  patchFsLike(fsTarget, ["", "Sync"]);
  // `exists` answers, it does not throw: a path the tool may not read does not exist for it (audited as Deny).
  wrap(
    fsTarget,
    "existsSync",
    (a) => checkPath(a[0], "Read"),
    () => false,
  );
  wrap(
    fsTarget,
    "exists",
    (a) => checkPath(a[0], "Read"),
    (a) => {
      const callback = a.at(-1);
      if (typeof callback === "function") process.nextTick(callback as AnyFunction, false);
      return undefined;
    },
  );
  wrap(fs.realpath as unknown as Target, "native", (a) => checkPath(a[0], "Read"));
  wrap(fs.realpathSync as unknown as Target, "native", (a) => checkPath(a[0], "Read"));
  (fs.realpath as unknown as Target).native ??= nativeRealpath;
  (fs.realpathSync as unknown as Target).native ??= nativeRealpathSync;
  wrap(fsTarget, "createReadStream", (a) => checkPath(a[0], "Read"));
  wrap(fsTarget, "createWriteStream", (a) => checkPath(a[0], "Write"));
  wrap(fsTarget, "unwatchFile", () => {});
  patchFsLike(fs.promises as unknown as Target, [""]);

  // ---- network -----------------------------------------------------------------------------
  const netResource = (options: Record<string, unknown>, fallbackHost: string): string => {
    if (typeof options.path === "string") return `unix:${options.path}`;
    const host = typeof options.host === "string" && options.host !== "" ? options.host : fallbackHost;
    const shown = host.includes(":") ? `[${host}]` : host;
    return `${shown}:${options.port ?? 0}`;
  };
  const normalize = (net as unknown as { _normalizeArgs: (a: unknown[]) => unknown[] })._normalizeArgs;
  wrap(net.Socket.prototype as unknown as Target, "connect", (a) => {
    const first = a[0];
    const options = (Array.isArray(first) ? first[0] : normalize(a)[0]) as Record<string, unknown>;
    check("Network", "Connect", netResource(options ?? {}, "localhost"));
  });
  wrap(net.Server.prototype as unknown as Target, "listen", (a) => {
    const first = a[0];
    let options: Record<string, unknown>;
    if (typeof first === "object" && first !== null && !Array.isArray(first)) {
      const o = first as Record<string, unknown>;
      options =
        "fd" in o || "_handle" in o || "handle" in o ? { host: "fd", port: String(o.fd ?? "handle") } : o;
    } else if (typeof first === "string" && !/^\d+$/.test(first)) options = { path: first };
    else options = { port: first ?? 0, host: typeof a[1] === "string" ? a[1] : undefined };
    check("Network", "Listen", netResource(options, "0.0.0.0"));
  });
  // fetch and WebSocket (undici) connect through net.Socket, checked above, but undici reports a
  // refused connect as a bare "fetch failed". Refuse them up front instead, with the broker's own
  // error; an allowed request is audited once, by the socket connect it makes.
  const urlResource = (raw: unknown, ports: Record<string, string>): string | null => {
    let url: URL;
    try {
      url = new URL(raw instanceof Request ? raw.url : String(raw));
    } catch {
      return null; // the original reports the bad URL
    }
    const port = url.port || ports[url.protocol];
    if (port === undefined) return null; // data:, blob:, … never touch the network
    return netResource({ host: url.hostname.replace(/^\[(.*)\]$/, "$1"), port }, "localhost");
  };
  const refuseUpFront = (resource: string | null) => {
    if (resource === null || reporting) return;
    if (decide(policy, "Network", "Connect", resource) === "Deny")
      check("Network", "Connect", resource, true);
  };
  const HTTP_PORTS = { "http:": "80", "https:": "443" };
  const globals = globalThis as unknown as Target;
  if (restricted && typeof globals.fetch === "function") {
    const originalFetch = globals.fetch as AnyFunction;
    const checkedFetch = function fetch(this: unknown, ...args: unknown[]) {
      try {
        refuseUpFront(urlResource(args[0], HTTP_PORTS));
      } catch (error) {
        return Promise.reject(error);
      }
      return Reflect.apply(originalFetch, this, args);
    };
    Reflect.defineProperty(globals, "fetch", { value: checkedFetch, writable: true, configurable: true });
  }
  if (restricted && typeof globals.WebSocket === "function") {
    const OriginalWebSocket = globals.WebSocket as typeof WebSocket;
    const WS_PORTS = { "ws:": "80", "wss:": "443", ...HTTP_PORTS };
    class CheckedWebSocket extends OriginalWebSocket {
      constructor(url: string | URL, protocols?: string | string[]) {
        refuseUpFront(urlResource(url, WS_PORTS));
        super(url as string, protocols);
      }
    }
    Object.defineProperty(CheckedWebSocket, "name", { value: "WebSocket" });
    Reflect.defineProperty(globals, "WebSocket", {
      value: CheckedWebSocket,
      writable: true,
      configurable: true,
    });
  }
  const dgramTarget = dgram.Socket.prototype as unknown as Target;
  wrap(dgramTarget, "bind", (a) => {
    const o = a[0];
    const options = typeof o === "object" && o !== null ? (o as Record<string, unknown>) : { port: o };
    check("Network", "Listen", netResource({ host: options.address, port: options.port }, "0.0.0.0"));
  });
  wrap(dgramTarget, "connect", (a) =>
    check(
      "Network",
      "Connect",
      netResource({ port: a[0], host: typeof a[1] === "string" ? a[1] : undefined }, "localhost"),
    ),
  );
  wrap(dgramTarget, "send", (a) => {
    const numbers = a.filter((x) => typeof x === "number");
    const strings = a
      .filter((x) => typeof x === "string")
      .slice(a[0] === undefined || typeof a[0] !== "string" ? 0 : 1);
    if (numbers.length === 0) return; // connected socket: checked by connect()
    const port = numbers.length >= 3 ? numbers[2] : numbers[0];
    check("Network", "Connect", netResource({ port, host: strings[0] }, "localhost"));
  });
  const DNS_NAMES = [
    "lookup",
    "lookupService",
    "resolve",
    "resolve4",
    "resolve6",
    "resolveAny",
    "resolveCaa",
    "resolveCname",
    "resolveMx",
    "resolveNaptr",
    "resolveNs",
    "resolvePtr",
    "resolveSoa",
    "resolveSrv",
    "resolveTxt",
    "reverse",
  ];
  const dnsGuard = (a: unknown[]) => check("Network", "Connect", String(a[0]));
  for (const target of [dns, dns.promises, dns.Resolver.prototype, dns.promises.Resolver.prototype]) {
    for (const name of DNS_NAMES) wrap(target as unknown as Target, name, dnsGuard);
  }

  // ---- processes ---------------------------------------------------------------------------
  const commandName = (command: string): string => {
    const trimmed = command.trim();
    const quote = trimmed[0];
    if (quote === '"' || quote === "'") return (trimmed.split(quote)[1] ?? "").trim().split(/\s+/)[0] ?? "";
    return trimmed.split(/\s+/)[0] ?? "";
  };
  const checkRun = (command: unknown) => check("Process", "Execute", String(command));
  const cp = childProcess as unknown as Target;
  for (const name of ["spawn", "spawnSync", "execFile", "execFileSync"])
    wrap(cp, name, (a) => checkRun(a[0]));
  for (const name of ["exec", "execSync"]) wrap(cp, name, (a) => checkRun(commandName(String(a[0]))));
  wrap(cp, "fork", () => checkRun(process.execPath));
  wrap(childProcess.ChildProcess.prototype as unknown as Target, "spawn", (a) =>
    checkRun((a[0] as { file?: unknown } | undefined)?.file),
  );
  const checkWorker = (what: string) => {
    if (!restricted) return check("Process", "Execute", what);
    report("Process", "Execute", what, "Deny");
    throw new PermissionDeniedError("Process", "Execute", what);
  };
  const OriginalWorker = workerThreads.Worker;
  class CheckedWorker extends OriginalWorker {
    constructor(filename: string | URL, options?: import("node:worker_threads").WorkerOptions) {
      checkWorker(`worker:${String(filename).slice(0, 200)}`);
      super(filename, options);
    }
  }
  Reflect.defineProperty(workerThreads, "Worker", {
    value: CheckedWorker,
    writable: true,
    configurable: true,
    enumerable: true,
  });
  const OriginalWasi = wasi.WASI;
  class CheckedWasi extends OriginalWasi {
    constructor(options: ConstructorParameters<typeof OriginalWasi>[0]) {
      checkWorker("wasi");
      super(options);
    }
  }
  Reflect.defineProperty(wasi, "WASI", {
    value: CheckedWasi,
    writable: true,
    configurable: true,
    enumerable: true,
  });
  const processTarget = process as unknown as Target;
  for (const name of ["binding", "_linkedBinding"]) {
    wrap(processTarget, name, (a) => checkWorker(`process.${name}:${String(a[0] ?? "")}`));
  }
  wrap(processTarget, "dlopen", (a) => checkWorker(`process.dlopen:${String(a[1] ?? "")}`));
  for (const name of ["kill", "_kill"]) {
    wrap(processTarget, name, (a) => {
      if (Number(a[0]) !== process.pid) checkRun(`kill:${String(a[0])}`);
    });
  }
  wrap(inspector as unknown as Target, "open", () => checkWorker("inspector"));
  wrap(inspector.Session.prototype as unknown as Target, "connect", () => checkWorker("inspector"));
  wrap(inspector.Session.prototype as unknown as Target, "connectToMainThread", () =>
    checkWorker("inspector"),
  );
  wrap(moduleApi as unknown as Target, "register", () => checkWorker("module.register"));

  // ---- environment -------------------------------------------------------------------------
  const realEnv = process.env;
  // What generic code probes on any object (JSON.stringify, await, util.inspect, test matchers):
  // unless such a variable really exists, these are not environment reads, neither checked nor audited.
  const INSPECTION_KEYS = new Set([
    "toJSON",
    "then",
    "constructor",
    "toString",
    "toLocaleString",
    "valueOf",
    "hasOwnProperty",
    "isPrototypeOf",
    "propertyIsEnumerable",
    "__proto__",
    "inspect",
    "asymmetricMatch",
    "$$typeof",
    "nodeType",
    "@@__IMMUTABLE_ITERABLE__@@",
    "@@__IMMUTABLE_RECORD__@@",
  ]);
  const notAnEnvRead = (key: string): boolean =>
    reporting || (INSPECTION_KEYS.has(key) && !Object.hasOwn(realEnv, key));
  const calledFromNodeInternals = () => {
    const stack = new Error().stack?.split("\n") ?? [];
    // [0] "Error", [1] this function, [2] the proxy trap, [3] the reader.
    return /\(node:|at node:/.test(stack[3] ?? "");
  };
  const envProxy = new Proxy(realEnv, {
    get(target, key, receiver) {
      if (typeof key !== "string" || notAnEnvRead(key)) return Reflect.get(target, key, receiver);
      if (calledFromNodeInternals()) {
        return decide(policy, "Environment", "Read", key) === "Allow"
          ? Reflect.get(target, key, receiver)
          : undefined;
      }
      check("Environment", "Read", key);
      return Reflect.get(target, key, receiver);
    },
    has(target, key) {
      if (typeof key !== "string" || notAnEnvRead(key)) return Reflect.has(target, key);
      if (calledFromNodeInternals()) {
        return decide(policy, "Environment", "Read", key) === "Allow" && Reflect.has(target, key);
      }
      check("Environment", "Read", key);
      return Reflect.has(target, key);
    },
    getOwnPropertyDescriptor(target, key) {
      if (typeof key === "string" && decide(policy, "Environment", "Read", key) === "Deny") return undefined;
      return Reflect.getOwnPropertyDescriptor(target, key);
    },
    ownKeys(target) {
      return Reflect.ownKeys(target).filter(
        (key) => typeof key !== "string" || decide(policy, "Environment", "Read", key) === "Allow",
      );
    },
  });
  Reflect.defineProperty(process, "env", {
    value: envProxy,
    writable: true,
    configurable: true,
    enumerable: true,
  });

  moduleApi.syncBuiltinESMExports();
}
