/**
 * Child processes: every way to start one (a synchronous spawn where it is called, every
 * asynchronous one where they all end, the Process handle's `spawn`) runs exactly the executable the
 * CLI resolved and allowed, with an environment that cannot make it load the tool's code and no
 * stdio that is one of the host's own pipes. Each option is read once, into the copy Node gets.
 */
import childProcess from "node:child_process";
import { PermissionDeniedError } from "../../permissions.ts";
import { DEFAULT_SHELL } from "../judge.ts";
import { type AnyFunction, allows, type Broker, type Target, wrap } from "./context.ts";
import { cwdOriginal, isArray, isArrayBufferView } from "./originals.ts";

/**
 * What glibc leaves out of the environment of a program it runs in secure-execution mode, besides
 * `LD_*` (its `unsecvars.h`), and its tunables: see `loaderVariable` in {@link hookChildProcesses}.
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
 * What makes an interpreter load a file before the script it was started for: a granted program
 * that is a script (`#!/usr/bin/env node`, `#!/bin/bash`, Python, Perl, Ruby, Java launchers) would
 * run a file the tool wrote in its write grant, outside every sandbox — what `LD_PRELOAD` does to
 * any program. `NODE_OPTIONS` (`--require`, `--import`, `--loader`), bash's `BASH_ENV` (and `ENV`,
 * which `sh` reads), Python's path and home (a `sitecustomize.py` there runs at every start) and
 * start-up file and user base (its `usercustomize.py`), Perl's and Ruby's options and library paths, the JVM's option variables
 * (`-javaagent:`). Checked like a loader variable.
 */
const INTERPRETER_VARIABLES = new Set([
  "NODE_OPTIONS",
  "BASH_ENV",
  "ENV",
  "PYTHONPATH",
  "PYTHONHOME",
  "PYTHONSTARTUP",
  "PYTHONUSERBASE",
  "PERL5OPT",
  "PERL5LIB",
  "PERLLIB",
  "RUBYOPT",
  "RUBYLIB",
  "JAVA_TOOL_OPTIONS",
  "_JAVA_OPTIONS",
  "JDK_JAVA_OPTIONS",
]);

/** What `execve` (process.ts) checks the same way as a spawn. */
export interface ChildChecks {
  /** The executable the CLI resolved for `file`, if it may run. */
  program: (file: unknown) => string;
  /** Refuses a `NAME=value` the child's loader would act on (see {@link LOADER_VARIABLES}). */
  checkChildPair: (pair: string) => void;
}

/**
 * Installs the checks of child processes; `handleFd` tells the descriptor a stream handle holds
 * (net-handles.ts).
 */
export function hookChildProcesses(broker: Broker, handleFd: (handle: unknown) => unknown): ChildChecks {
  const { ask, check, guardFd, realEnv } = broker;
  // The CLI resolves the program (a bare name through its own PATH, anything else from our cwd) and
  // answers with the executable to run: that path is what gets started, not what the tool named.
  // The name is read once: a `toString` could name one program to the check (and the audit log)
  // and another to Node (when every program may run, the CLI finds none and answers no `x`).
  const program = (file: unknown): string => {
    const name = String(file);
    const answer = ask("Process", "Execute", name, { exec: { cwd: cwdOriginal() } });
    if (!allows(answer)) throw new PermissionDeniedError("Process", "Execute", answer.r);
    return answer.x ?? name;
  };
  const shellOf = (shell: unknown): string => (typeof shell === "string" ? shell : DEFAULT_SHELL);
  /**
   * A child's environment can make any program run code of the tool's: the dynamic loader and the C
   * library load what these variables name (a library to preload or audit, a library path, iconv
   * modules, locale data, tunables, …). glibc ignores exactly these in a program it does not trust
   * its caller with (its secure-execution list; every `LD_*` is the loader's), and macOS's loader
   * reads `DYLD_*`. A granted program is a grant of that program, not of whatever library the tool
   * wrote in a writable grant: such a variable goes to a child only when every program may run —
   * the resource `env:<NAME>`, decided like a program. So does one that makes a script's
   * interpreter load a file first ({@link INTERPRETER_VARIABLES}).
   */
  const loaderVariable = (name: string): boolean =>
    name.startsWith("LD_") ||
    name.startsWith("DYLD_") ||
    LOADER_VARIABLES.has(name) ||
    INTERPRETER_VARIABLES.has(name);
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
      if (typeof entry !== "object" || entry === null || isArrayBufferView(entry)) {
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
      // The CLI answers with the program's real path; the child's `argv[0]` stays the name the
      // tool gave (Node's `argv0` otherwise), as without the broker.
      let argv0: string;
      if (o?.shell) {
        argv0 = shellOf(o.shell);
        o.shell = program(argv0);
      } else {
        argv0 = String(a[0]);
        a[0] = program(argv0);
      }
      // Options Node ignores (after a callback): the child inherits the host's environment.
      if (index === -1) {
        childEnv(undefined);
        return;
      }
      const options = o ?? {};
      options.argv0 ??= argv0;
      options.env = childEnv(options.env);
      if (options.stdio !== undefined) options.stdio = childStdioOption(options.stdio);
      a[index] = options;
    });
  }
  wrap(cp, "execSync", (a) => {
    const o = optionsAt(a, 1) ?? {};
    const shell = shellOf(o.shell);
    o.shell = program(shell);
    o.argv0 ??= shell;
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
  return { program, checkChildPair };
}
