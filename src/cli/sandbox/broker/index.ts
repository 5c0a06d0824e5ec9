/**
 * The in-process permission broker of the tool process. It decides nothing itself: every check is
 * forwarded to the CLI (`ask`), which decides, audits and answers; the broker enforces the answer.
 * It patches the real Node built-ins in place
 * (fs sync/callback/promises/streams, net/tls/http via `net.Socket#connect` and `net.Server#listen`,
 * dgram, dns, child_process, worker_threads, inspector, wasi, v8 heap snapshots and flags,
 * `process.env`, the machine's identity in `os`, `process.binding`, `process.dlopen`, `process.kill`,
 * `module.register`) so every route to them — `require`, dynamic
 * `import()`, `createRequire`, or `this.constructor.constructor("return process")()` — reaches the
 * same checked functions, and hooks the TCP and pipe handles so the address a socket really dials
 * (after any name lookup, whatever the arguments looked like) is checked too. Node's own permission
 * model, set up by the parent, is the second wall; `--frozen-intrinsics` keeps the built-ins the
 * broker uses out of the tool's reach, and every Node function it calls is captured at install.
 * Runs only inside the tool process; nothing here may use a patched function.
 */
import childProcess from "node:child_process";
import inspector from "node:inspector";
import moduleApi from "node:module";
import os from "node:os";
import { types } from "node:util";
import v8 from "node:v8";
import vm from "node:vm";
import wasi from "node:wasi";
import workerThreads from "node:worker_threads";
import { PermissionDeniedError } from "../../permissions.ts";
import { DEFAULT_SHELL } from "../judge.ts";
import {
  type AnyFunction,
  type Ask,
  allows,
  type BrokerOptions,
  createBroker,
  type Target,
  wrap,
} from "./context.ts";
import { hookDescriptors } from "./fds.ts";
import { createFileArgs } from "./fs-args.ts";
import { createConfirmedOpens, hookConfirmedOpens } from "./fs-confirmed.ts";
import { hookConfirmedCopies } from "./fs-copy.ts";
import { hookFsPathCalls, hookFsPromisesPathCalls } from "./fs-paths.ts";
import { hookConfirmedStats } from "./fs-stat.ts";
import { hookFsViaCli } from "./fs-via-cli.ts";
import { hookModuleResolution } from "./modules.ts";
import { hookNetCalls } from "./net.ts";
import { hookDial, hookResolver } from "./net-handles.ts";
import { cwdOriginal, isArray, OWN_PID } from "./originals.ts";
import { hookWatching } from "./watch.ts";

export type { Ask } from "./context.ts";

/** A built-in this Node may not have (or has only behind a flag): undefined then. */
function loadOptionalBuiltin(name: string): Target | undefined {
  try {
    return moduleApi.createRequire(import.meta.url)(name) as Target;
  } catch {
    return undefined;
  }
}

/**
 * What glibc leaves out of the environment of a program it runs in secure-execution mode, besides
 * `LD_*` (its `unsecvars.h`), and its tunables: see `loaderVariable` in {@link installBroker}.
 * `TMPDIR` is on glibc's list too, but names only where temporary files go: left to the child.
 */
const LOADER_VARIABLES = new Set([
  "GCONV_PATH",
  "GETCONF_DIR",
  "GLIBC_TUNABLES",
  "HOSTALIASES",
  "LOCALDOMAIN",
  "LOCPATH",
  "MALLOC_TRACE",
  "NIS_PATH",
  "NLSPATH",
  "RESOLV_HOST_CONF",
  "RES_OPTIONS",
  "TZDIR",
]);

/**
 * The variables Node's own JavaScript reads (Node 20 and 22, found in their built-in sources):
 * colour detection (`tty.getColorDepth`, which `console` and `util.inspect` consult), debug logs,
 * warnings, child-process and cluster set-up, the REPL and test runner, bundled dependencies. A
 * read of one of these from what looks like Node's code writes no audit line; none holds a secret
 * (the proxy variables, which may carry credentials, are left out: Node reads them only when
 * asked to proxy, and such a read is a line).
 */
const NODE_OWN_VARIABLES = new Set([
  "AGENT_NAME",
  "APPVEYOR",
  "BUILDKITE",
  "CI",
  "CI_NAME",
  "CIRCLECI",
  "COLORTERM",
  "DRONE",
  "FORCE_COLOR",
  "GITEA_ACTIONS",
  "GITHUB_ACTIONS",
  "GITLAB_CI",
  "JEST_WORKER_ID",
  "NO_COLOR",
  "NODE_CHANNEL_FD",
  "NODE_CHANNEL_SERIALIZATION_MODE",
  "NODE_CLUSTER_SCHED_POLICY",
  "NODE_DEBUG",
  "NODE_DISABLE_COLORS",
  "NODE_EXTRA_CA_CERTS",
  "NODE_INSPECT_RESUME_ON_START",
  "NODE_MANY_ACCEPTS",
  "NODE_NO_READLINE",
  "NODE_NO_WARNINGS",
  "NODE_OPTIONS",
  "NODE_PATH",
  "NODE_PENDING_PIPE_INSTANCES",
  "NODE_REPL_EXTERNAL_MODULE",
  "NODE_REPL_HISTORY",
  "NODE_REPL_HISTORY_SIZE",
  "NODE_REPL_MODE",
  "NODE_TEST_CONTEXT",
  "NODE_TLS_REJECT_UNAUTHORIZED",
  "NODE_UNIQUE_ID",
  "NODE_V8_COVERAGE",
  "TEAMCITY_VERSION",
  "TERM",
  "TERM_PROGRAM",
  "TERM_PROGRAM_VERSION",
  "TF_BUILD",
  "TMUX",
  "TRAVIS",
  "UNDICI_NO_FG",
  "WATCH_REPORT_DEPENDENCIES",
  "__MINIMATCH_TESTING_PLATFORM__",
]);

/** Installs the broker. Call once, before any tool code runs; `reserved` are the host's own pipes. */
export function installBroker(ask: Ask, options: BrokerOptions): void {
  // Tool code meets this class in every denial (`error.constructor`): a setter on its prototype would
  // run inside the broker's own paths, a `Symbol.hasInstance` would change what counts as a denial.
  Object.freeze(PermissionDeniedError.prototype);
  Object.freeze(PermissionDeniedError);
  const broker = createBroker(ask, options);
  const { check, guardFd, guardClose } = broker;
  // First, while net.Socket#connect is still Node's own.
  const handleFd = hookDial(ask, guardFd, guardClose);
  hookResolver(ask);

  // ---- file system -------------------------------------------------------------------------
  const files = createFileArgs(broker);
  const { checkArg } = files;
  hookDescriptors(broker);
  hookFsPathCalls(broker, files);
  hookModuleResolution(broker, files);
  hookFsPromisesPathCalls(broker, files);
  const opens = createConfirmedOpens(broker, files);
  hookWatching(broker, files, opens);
  hookConfirmedOpens(broker, files, opens);
  hookConfirmedStats(broker, files, opens);
  hookConfirmedCopies(files, opens);
  hookFsViaCli(broker, files, opens);

  hookNetCalls(broker);

  // ---- processes ---------------------------------------------------------------------------
  // The CLI resolves the program (a bare name through its own PATH, anything else from our cwd) and
  // answers with the executable to run: that path is what gets started, not what the tool named.
  const program = (file: unknown): string => {
    const answer = ask("Process", "Execute", String(file), { exec: { cwd: cwdOriginal() } });
    if (!allows(answer)) throw new PermissionDeniedError("Process", "Execute", answer.r);
    return answer.x ?? String(file);
  };
  const shellOf = (shell: unknown): string => (typeof shell === "string" ? shell : DEFAULT_SHELL);
  /**
   * A child's environment can make any program run code of the tool's: the dynamic loader and the C
   * library load what these variables name (a library to preload or audit, a library path, iconv
   * modules, locale data, tunables, …). glibc ignores exactly these in a program it does not trust
   * its caller with (its secure-execution list; every `LD_*` is the loader's), and macOS's loader
   * reads `DYLD_*`. A granted program is a grant of that program, not of whatever library the tool
   * wrote in a writable grant: such a variable goes to a child only when every program may run —
   * the resource `env:<NAME>`, decided like a program.
   */
  const loaderVariable = (name: string): boolean =>
    name.startsWith("LD_") || name.startsWith("DYLD_") || LOADER_VARIABLES.has(name);
  // Such a variable the host started with (granted, its value the user's) is not the tool's choice.
  const startedWith = new Map<string, string>();
  for (const key in process.env) {
    const value = process.env[key];
    if (loaderVariable(key) && value !== undefined) startedWith.set(key, value);
  }
  /**
   * One `NAME=value` entry as the child's C library reads it: the name ends at the first `=` (a key
   * `GCONV_PATH=/x` with any value is the variable `GCONV_PATH`).
   */
  const checkChildPair = (pair: string) => {
    const equals = pair.indexOf("=");
    const name = equals === -1 ? pair : pair.slice(0, equals);
    const value = equals === -1 ? "" : pair.slice(equals + 1);
    if (loaderVariable(name) && startedWith.get(name) !== value) check("Process", "Execute", `env:${name}`);
  };
  /**
   * What a child gets as its stdio: none of the host's own pipes (a granted program handed the
   * call or answer pipe reads what is meant for the host; handed the channel, writes to it). As the
   * Process handle takes it (`{type, fd}` or `{type, handle}` each, read once by Node's C++): copied,
   * each field read once, and the descriptor each names — the number, or the one its handle holds —
   * checked.
   */
  const childStdioEntries = (stdio: unknown): unknown => {
    if (!isArray(stdio)) return stdio;
    const copy: unknown[] = [];
    for (let i = 0, n = stdio.length; i < n; i++) {
      const entry = stdio[i] as Record<string, unknown> | null;
      if (typeof entry !== "object" || entry === null) {
        copy.push(entry);
        continue;
      }
      const type = entry.type;
      if (type === "ignore" || type === "pipe" || type === "overlapped" || type === "wrap") {
        const handle = entry.handle;
        if (type === "wrap") guardFd(handleFd(handle));
        copy.push({ type, handle });
      } else {
        // As a C++ int (a number past 2³¹ would wrap around to a small one).
        const read = entry.fd;
        const fd = typeof read === "number" ? read | 0 : read;
        guardFd(fd);
        copy.push({ type, fd });
      }
    }
    return copy;
  };
  /**
   * The same for a synchronous spawn's `stdio` option, before Node normalizes it (reading a
   * stream's `fd` twice): an entry naming a descriptor becomes that number, read once, and checked;
   * `inherit` at index `i` is descriptor `i`. A handle (or an object holding one) is checked on the
   * descriptor it holds, and an object that names neither is passed as a copy of what Node reads.
   */
  const childStdioOption = (stdio: unknown): unknown => {
    if (!isArray(stdio)) return stdio; // a string: descriptors 0–2 only
    const copy: unknown[] = [];
    for (let i = 0, n = stdio.length; i < n; i++) {
      const entry = stdio[i] as unknown;
      if (entry === "inherit") guardFd(i);
      if (typeof entry === "number") {
        // As Node's C++ takes it (ToInt32: a number past 2³¹ wraps around to a small one).
        guardFd(entry | 0);
        copy.push(entry | 0);
        continue;
      }
      if (typeof entry !== "object" || entry === null || types.isArrayBufferView(entry)) {
        copy.push(entry);
        continue;
      }
      const native = handleFd(entry);
      if (native !== undefined) {
        guardFd(native);
        copy.push(entry);
        continue;
      }
      const { fd, handle, _handle } = entry as Record<string, unknown>;
      if (typeof fd === "number") {
        guardFd(fd | 0);
        copy.push(fd | 0);
        continue;
      }
      guardFd(handleFd(handle));
      guardFd(handleFd(_handle));
      copy.push({ handle, _handle });
    }
    return copy;
  };
  /**
   * The environment a synchronous spawn passes on, as Node reads it (`options.env || process.env`,
   * inherited keys included), copied once — each key and value read once — and checked: Node gets
   * the copy, so a getter or a proxy cannot show the check one set and Node another.
   */
  const childEnv = (given: unknown): Record<string, string | undefined> => {
    const source = (given || realEnv) as Record<string, unknown>;
    const copy: Record<string, string | undefined> = {};
    for (const key in source) {
      const value = source[key];
      // As Node makes the pair (`${key}=${value}`; an undefined value is left out).
      copy[key] = value === undefined ? undefined : `${value}`;
    }
    for (const key in copy) {
      const value = copy[key];
      if (value !== undefined) checkChildPair(`${key}=${value}`);
    }
    return copy;
  };
  /**
   * The `envPairs` a Process handle gets (`NAME=value` strings), copied once as strings and checked;
   * none given means the host's own environment (what the child would inherit), made explicit.
   */
  const childEnvPairs = (given: unknown): string[] => {
    const pairs: string[] = [];
    if (isArray(given)) {
      for (let i = 0, n = given.length; i < n; i++) pairs.push(String(given[i]));
    } else {
      for (const key in realEnv) pairs.push(`${key}=${realEnv[key]}`);
    }
    for (const pair of pairs) checkChildPair(pair);
    return pairs;
  };
  const cp = childProcess as unknown as Target;
  const optionsAt = (a: unknown[], index: number): Record<string, unknown> | undefined => {
    const o = a[index];
    return typeof o === "object" && o !== null && !isArray(o)
      ? { ...(o as Record<string, unknown>) }
      : undefined;
  };
  // Synchronous spawns do not go through ChildProcess#spawn: check them at the top, reading the
  // arguments as Node does — `(file, args, options)`, options second when `args` is a non-array
  // object, none after a function (`execFileSync(file, cb, {shell})` ignores the third), else third
  // (`spawnSync(file, null, {shell})` reads it) — and run exactly the executable the CLI resolved,
  // the shell included (a shell name would go through the tool's `env.PATH`).
  const syncOptionsIndex = (a: unknown[]) => {
    if (typeof a[1] === "function") return -1;
    return typeof a[1] === "object" && a[1] !== null && !isArray(a[1]) ? 1 : 2;
  };
  for (const name of ["spawnSync", "execFileSync"]) {
    wrap(cp, name, (a) => {
      const index = syncOptionsIndex(a);
      const o = optionsAt(a, index);
      if (o?.shell) o.shell = program(shellOf(o.shell));
      else a[0] = program(a[0]);
      // Options Node ignores (after a callback): the child inherits the host's environment.
      if (index === -1) {
        childEnv(undefined);
        return;
      }
      const options = o ?? {};
      options.env = childEnv(options.env);
      if (options.stdio !== undefined) options.stdio = childStdioOption(options.stdio);
      a[index] = options;
    });
  }
  wrap(cp, "execSync", (a) => {
    const o = optionsAt(a, 1) ?? {};
    o.shell = program(shellOf(o.shell));
    o.env = childEnv(o.env);
    if (o.stdio !== undefined) o.stdio = childStdioOption(o.stdio);
    a[1] = o;
  });
  // Every asynchronous spawn (spawn, exec, execFile, fork, a bare ChildProcess, and its `_handle`
  // called directly, or a handle of that class) ends in the Process handle's `spawn`, with the
  // shell already in `file` when one is used: checked there, its options read once. The class is
  // taken from a throw-away ChildProcess (never spawned) before any tool code.
  const probe = new childProcess.ChildProcess() as unknown as { _handle?: object };
  const processHandle = probe._handle ? (Object.getPrototypeOf(probe._handle) as Target) : undefined;
  const originalSpawn = processHandle?.spawn;
  if (processHandle && typeof originalSpawn === "function") {
    Reflect.defineProperty(processHandle, "spawn", {
      value: function spawn(this: object, spawnOptions: unknown) {
        const o = (
          typeof spawnOptions === "object" && spawnOptions !== null ? { ...spawnOptions } : {}
        ) as Record<string, unknown>;
        o.file = program(o.file);
        o.envPairs = childEnvPairs(o.envPairs);
        o.stdio = childStdioEntries(o.stdio);
        return Reflect.apply(originalSpawn as AnyFunction, this, [o]);
      },
      writable: false,
      configurable: false,
    });
    Object.freeze(processHandle);
  }
  const checkRun = (command: unknown) => check("Process", "Execute", String(command));
  const checkWorker = (what: string) => check("Process", "Execute", what, options.noWorkers);
  /**
   * Replaces class `target[name]` with a constructor that runs `guard` first. Not a subclass: its
   * prototype would be the original, constructed unchecked (`Object.getPrototypeOf(Worker)`); and
   * the instances' prototype names the replacement as its `constructor`, for good.
   */
  const guardClass = (target: Target, name: string, guard: (args: unknown[]) => void) => {
    const Original = target[name] as new (...args: unknown[]) => object;
    const Checked = function (this: unknown, ...args: unknown[]) {
      if (new.target === undefined)
        throw new TypeError(`Class constructor ${name} cannot be invoked without 'new'`);
      guard(args);
      return Reflect.construct(Original, args, new.target);
    };
    Object.defineProperty(Checked, "name", { value: name });
    Object.defineProperty(Checked, "prototype", { value: Original.prototype, writable: false });
    Reflect.defineProperty(Original.prototype, "constructor", {
      value: Checked,
      writable: false,
      configurable: false,
    });
    Reflect.defineProperty(target, name, {
      value: Checked,
      writable: true,
      configurable: true,
      enumerable: true,
    });
  };
  guardClass(workerThreads as unknown as Target, "Worker", (a) =>
    checkWorker(`worker:${String(a[0]).slice(0, 200)}`),
  );
  guardClass(wasi as unknown as Target, "WASI", () => checkWorker("wasi"));
  // V8 runs the bytecode in a code cache (`cachedData`) as its own: crafted bytes are code V8 never
  // checked, past everything above. Every `vm` entry that takes one reads its options once (a copy
  // goes on) and refuses one under a restriction.
  const vmTarget = vm as unknown as Target;
  const refuseCachedData = (a: unknown[], index: number) => {
    const o = a[index];
    if (typeof o !== "object" || o === null) return;
    const copy = { ...(o as Record<string, unknown>) };
    if (copy.cachedData !== undefined) checkWorker("vm.cachedData");
    a[index] = copy;
  };
  guardClass(vmTarget, "Script", (a) => refuseCachedData(a, 1));
  wrap(vmTarget, "runInThisContext", (a) => refuseCachedData(a, 1));
  wrap(vmTarget, "runInContext", (a) => refuseCachedData(a, 2));
  wrap(vmTarget, "runInNewContext", (a) => refuseCachedData(a, 2));
  wrap(vmTarget, "compileFunction", (a) => refuseCachedData(a, 2));
  if (typeof vmTarget.SourceTextModule === "function")
    guardClass(vmTarget, "SourceTextModule", (a) => refuseCachedData(a, 1));
  // SQLite (Node ≥ 22.5) opens, creates and attaches database files itself, past the broker and
  // Node's permission model: under a restriction the class is replaced, not wrapped (a subclass
  // would hand its original out as its prototype), and every database is refused.
  const sqlite = loadOptionalBuiltin("node:sqlite");
  if (sqlite && options.noWorkers) {
    const refused = function DatabaseSync() {
      checkWorker("sqlite");
    };
    Reflect.defineProperty(sqlite, "DatabaseSync", {
      value: refused,
      writable: true,
      configurable: true,
      enumerable: true,
    });
  }
  const processTarget = process as unknown as Target;
  for (const name of ["binding", "_linkedBinding"]) {
    wrap(processTarget, name, (a) => checkWorker(`process.${name}:${String(a[0] ?? "")}`));
  }
  wrap(processTarget, "dlopen", (a) => checkWorker(`process.dlopen:${String(a[1] ?? "")}`));
  // Node ≥ 22.15 replaces the host with a program, which its permission model allows whenever any
  // child process is: the program is checked and resolved like a spawn's.
  wrap(processTarget, "execve", (a) => {
    a[0] = program(a[0]);
    // Its environment (`process.env` by default), as Node reads it — own keys — copied once.
    const given = a[2] === undefined ? realEnv : a[2];
    if (typeof given !== "object" || given === null) return; // Node refuses it
    const copy: Record<string, unknown> = {};
    for (const key of Object.keys(given)) copy[key] = (given as Record<string, unknown>)[key];
    for (const key in copy) {
      const value = copy[key];
      if (typeof value === "string") checkChildPair(`${key}=${value}`);
    }
    a[2] = copy;
  });
  // Variables from a file land in the real environment: the file is read like any other.
  wrap(processTarget, "loadEnvFile", (a) => {
    a[0] ??= ".env";
    checkArg(a, 0, "Read");
  });
  // A diagnostic report is a file Node writes itself, where `directory`/`filename` say, also on a
  // crash or a signal: none is written under a restriction.
  const report = process.report as unknown as Target | undefined;
  if (report) {
    wrap(report, "writeReport", () => checkWorker("process.report.writeReport"));
    for (const name of Reflect.ownKeys(report)) {
      const descriptor = Reflect.getOwnPropertyDescriptor(report, name);
      const set = descriptor?.set;
      if (!descriptor || !set) continue;
      Reflect.defineProperty(report, name, {
        ...descriptor,
        set(value: unknown) {
          checkWorker(`process.report.${String(name)}`);
          Reflect.apply(set, this, [value]);
        },
      });
    }
  }
  // A signal to another process (`_debugProcess` sends SIGUSR1: Node opens an inspector in the CLI).
  // The pid is read once: an object's `valueOf` could name the host here and the CLI to Node.
  for (const name of ["kill", "_kill", "_debugProcess"]) {
    wrap(processTarget, name, (a) => {
      const pid = Number(a[0]);
      a[0] = pid;
      if (pid !== OWN_PID) checkRun(`kill:${pid}`);
    });
  }
  // Another process's scheduling priority is as much its own business as a signal to it.
  wrap(os as unknown as Target, "setPriority", (a) => {
    const pid = a.length >= 2 ? Number(a[0]) : 0;
    if (a.length >= 2) a[0] = pid;
    if (pid !== 0 && pid !== OWN_PID) checkRun(`priority:${pid}`);
  });
  // Tracing writes its file (`node_trace.<n>.log` in the cwd) from Node's C++, past the broker and
  // Node's permission model: refused under a restriction, like a diagnostic report.
  const traceEvents = loadOptionalBuiltin("node:trace_events");
  if (traceEvents) wrap(traceEvents, "createTracing", () => checkWorker("trace_events"));
  wrap(inspector as unknown as Target, "open", () => checkWorker("inspector"));
  wrap(inspector.Session.prototype as unknown as Target, "connect", () => checkWorker("inspector"));
  wrap(inspector.Session.prototype as unknown as Target, "connectToMainThread", () =>
    checkWorker("inspector"),
  );
  wrap(moduleApi as unknown as Target, "register", () => checkWorker("module.register"));
  // A hook of the tool's would run before the broker's resolve hook, and could skip it.
  wrap(moduleApi as unknown as Target, "registerHooks", () => checkWorker("module.registerHooks"));
  // Node ≥ 22.1 writes V8's code cache into any directory named here, checked only by its
  // permission model (no line, and a write grant over the files the sandbox stands on would do).
  wrap(moduleApi as unknown as Target, "enableCompileCache", () => checkWorker("module.enableCompileCache"));
  // A heap snapshot shows every string of the host (its channel key among them), and so does a
  // query of the heap's objects (Node 22); V8 flags set at run time are, in Node's words,
  // undefined behaviour.
  for (const name of [
    "getHeapSnapshot",
    "writeHeapSnapshot",
    "setHeapSnapshotNearHeapLimit",
    "setFlagsFromString",
    "queryObjects",
  ])
    wrap(v8 as unknown as Target, name, () => checkWorker(`v8.${name}`));

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
  // The tool process only has the granted variables: enumerating shows those, reading one
  // that is not there is a check (Deny under --sandbox, audited).
  const notAnEnvRead = (key: string): boolean => INSPECTION_KEYS.has(key) && !Object.hasOwn(realEnv, key);
  /**
   * Whether the reader looks like Node's own code. Only a hint: a frame's script name is the
   * tool's to choose (`//# sourceURL=node:…` on code it evaluates, a `filename` given to `vm`),
   * so it decides only whether a refusal is thrown, never whether a line is written — see
   * {@link checkEnvRead}.
   */
  const calledFromNodeInternals = () => {
    const stack = new Error().stack?.split("\n") ?? [];
    // [0] "Error", [1] this function, [2] checkEnvRead, [3] the proxy trap, then the reader — past
    // the built-ins in between (`Object.hasOwn`, `Reflect.get`: "at Proxy.hasOwn (<anonymous>)"),
    // which are nobody's: what called them decides.
    let reader = 4;
    while (stack[reader]?.endsWith("(<anonymous>)")) reader++;
    return /\(node:|at node:/.test(stack[reader] ?? "");
  };
  /**
   * A variable read: checked, audited, and refused by throwing when the tool reads it. A read that
   * looks like Node's own (colours, debug logs, a spawn copying the environment) never throws —
   * Node's code must not fail — and whoever chose the script name, it is audited too when it asks
   * about a variable that is not there, unless Node itself reads that name
   * ({@link NODE_OWN_VARIABLES}). One that is there is granted, and enumerating shows its value anyway.
   */
  const checkEnvRead = (key: string) => {
    if (!calledFromNodeInternals()) check("Environment", "Read", key);
    else if (!Object.hasOwn(realEnv, key) && !NODE_OWN_VARIABLES.has(key)) ask("Environment", "Read", key);
  };
  const envProxy = new Proxy(realEnv, {
    get(target, key, receiver) {
      if (typeof key === "string" && !notAnEnvRead(key)) checkEnvRead(key);
      return Reflect.get(target, key, receiver);
    },
    has(target, key) {
      if (typeof key === "string" && !notAnEnvRead(key)) checkEnvRead(key);
      return Reflect.has(target, key);
    },
    // `Object.getOwnPropertyDescriptor(process.env, name)` (and `Object.hasOwn`) probe a name as
    // much as reading it does; the granted ones, which enumerating shows anyway, pass unaudited.
    getOwnPropertyDescriptor(target, key) {
      if (typeof key === "string" && !Object.hasOwn(target, key) && !notAnEnvRead(key)) checkEnvRead(key);
      return Reflect.getOwnPropertyDescriptor(target, key);
    },
  });
  Reflect.defineProperty(process, "env", {
    value: envProxy,
    writable: true,
    configurable: true,
    enumerable: true,
  });
  // What the machine says of itself — its name, its addresses, its user — is read like a variable
  // (`os.<function>`, granted by `--allow-env os.hostname`): Node asks the system, not `process.env`.
  // `os.homedir()` reads the user's passwd entry only when `HOME` is not set (libuv's
  // `uv_os_homedir`); with it set, it answers the variable, which is granted. A diagnostic report
  // carries the host name and the interfaces too. `process.binding("os")` is refused above.
  const osTarget = os as unknown as Target;
  for (const name of ["hostname", "networkInterfaces", "userInfo"])
    wrap(osTarget, name, () => check("Environment", "Read", `os.${name}`));
  wrap(osTarget, "homedir", () => {
    if (!Object.hasOwn(realEnv, "HOME")) check("Environment", "Read", "os.homedir");
  });
  if (report)
    wrap(report, "getReport", () => {
      check("Environment", "Read", "os.hostname");
      check("Environment", "Read", "os.networkInterfaces");
    });

  moduleApi.syncBuiltinESMExports();
}
