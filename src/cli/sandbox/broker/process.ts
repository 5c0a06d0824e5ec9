/**
 * What would run code, or reach another process, past the broker and Node's permission model:
 * workers and WASI, V8 code caches given to `vm`, SQLite, native bindings and addons, `execve`,
 * diagnostic reports and tracing (files Node writes itself), signals and priorities of other
 * processes, the inspector, loader hooks and the compile cache, heap snapshots and V8 flags.
 * Refused under a restriction (`noWorkers`), or checked like a program.
 */
import inspector from "node:inspector";
import moduleApi from "node:module";
import os from "node:os";
import v8 from "node:v8";
import vm from "node:vm";
import wasi from "node:wasi";
import workerThreads from "node:worker_threads";
import type { ChildChecks } from "./child-process.ts";
import { type Broker, type Target, wrap } from "./context.ts";
import type { FileArgs } from "./fs-args.ts";
import { OWN_PID, UrlClass } from "./originals.ts";

/** A built-in this Node may not have (or has only behind a flag): undefined then. */
function loadOptionalBuiltin(name: string): Target | undefined {
  try {
    return moduleApi.createRequire(import.meta.url)(name) as Target;
  } catch {
    return undefined;
  }
}

/** Installs the refusals and checks of what runs outside the broker. */
export function hookProcessRuntime(broker: Broker, files: FileArgs, children: ChildChecks): void {
  const { check, options, realEnv } = broker;
  const { checkArg } = files;
  const { program, checkChildPair } = children;
  const checkRun = (command: unknown) => check("Process", "Execute", String(command));
  const checkWorker = (what: string) => check("Process", "Execute", what, options.noWorkers);
  /**
   * Argument `index` as the name Node makes of it, read once: an object becomes that string, so a
   * `toString` cannot name one binding or addon to the check (and the audit log) and another to Node.
   */
  const nameAt = (a: unknown[], index: number): string => {
    const given = a[index];
    if (given === undefined || given === null) return "";
    const name = String(given);
    if (typeof given === "object" || typeof given === "function") a[index] = name;
    return name;
  };
  /**
   * A worker's file as Node takes it, read once: a path string as it is; any object (Node takes one
   * with `href` and `protocol` as a URL and reads it again, its `toString` never) a URL made here
   * from its `href`, which Node then gets — what is not one fails, as Node would fail it.
   */
  const workerFile = (a: unknown[]): string => {
    const given = a[0];
    if ((typeof given !== "object" && typeof given !== "function") || given === null) return String(given);
    const url = new UrlClass(String((given as { href?: unknown }).href));
    a[0] = url;
    return url.href;
  };
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
    checkWorker(`worker:${workerFile(a).slice(0, 200)}`),
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
    wrap(processTarget, name, (a) => checkWorker(`process.${name}:${nameAt(a, 0)}`));
  }
  wrap(processTarget, "dlopen", (a) => checkWorker(`process.dlopen:${nameAt(a, 1)}`));
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
}
