/**
 * Entry point of the tool host (bundled to `dist/cli/tool-host.mjs`, started by tool-process.ts):
 * either a child process under Node's permission model (any permission flag), or a worker thread
 * when nothing is restricted. It installs the broker, evaluates the compiled tool module and answers
 * `call` messages. Per-call isolation re-runs the module wrapper, which gives a fresh module instance
 * for a few microseconds instead of a new process.
 */
import fs from "node:fs";
import moduleApi from "node:module";
import { dirname } from "node:path";
import vm from "node:vm";
import { isMainThread, parentPort } from "node:worker_threads";
import { PermissionDeniedError, type Policy } from "../permissions.ts";
import { installBroker } from "./broker.ts";
import type { CallMessage, ChildMessage, InitMessage, ParentMessage } from "./protocol.ts";

/** Runs the module body; a body with top-level await returns the promise of its evaluation. */
type ModuleFactory = (
  exports: unknown,
  require: NodeJS.Require,
  module: { exports: unknown },
  filename: string,
  dirname: string,
) => undefined | Promise<void>;

type Exports = Record<string, unknown>;

// In a worker thread messages go out as JSON text, so results have the same JSON semantics
// (and the same "not JSON-serializable" failure) as over the child process's JSON IPC channel.
const port = isMainThread ? null : parentPort;
const sendRaw: (message: unknown) => void = port
  ? (message) => port.postMessage(JSON.stringify(message))
  : process.send!.bind(process);
const onMessage = (listener: (message: ParentMessage) => void) =>
  port ? port.on("message", listener) : process.on("message", listener);
const exitOriginal = process.exit.bind(process);
let key = "";

type WithoutKey<T> = T extends unknown ? Omit<T, "k"> : never;

/** Sends at once, in order (a call's audit lines before its result). */
function send(message: WithoutKey<ChildMessage>): void {
  try {
    sendRaw({ ...message, k: key });
  } catch {
    sendRaw({
      t: "result",
      k: key,
      id: (message as { id?: number }).id ?? -1,
      ok: false,
      error: "result is not JSON-serializable",
    });
  }
}

/** A permission denial somewhere in `error`'s `cause` chain (libraries wrap it, e.g. "fetch failed"). */
function deniedCause(error: unknown): Error | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 8 && typeof current === "object" && current !== null; depth++) {
    if (current instanceof PermissionDeniedError) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

function errorText(error: unknown): string {
  const denied = deniedCause(error);
  if (denied) return denied.message;
  if (error instanceof Error) return error.message;
  // A thrown error-like object ({message: "…"}, or an Error from another realm) reads as its message.
  const message =
    typeof error === "object" && error !== null ? (error as { message?: unknown }).message : undefined;
  if (typeof message === "string") return message;
  try {
    return typeof error === "string" ? error : (JSON.stringify(error) ?? String(error));
  } catch {
    return String(error);
  }
}

function hideChannel(): void {
  if (port) return;
  // Tool code gets the real `process`. Without `send` it cannot talk to the parent the easy way;
  // anything lower-level lacks the key, and closing the channel makes the parent restart us.
  Reflect.defineProperty(process, "send", { value: undefined, writable: true, configurable: true });
}

const STDOUT_ALIASES = new Set(["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"]);
const STDIN_ALIASES = new Set(["/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"]);

/**
 * A worker thread shares the CLI's file descriptors, where fd 0 and fd 1 carry the protocol. As in
 * the child process (stdin /dev/null, stdout piped to the CLI's stderr), tool code that writes to
 * fd 1 (loggers such as pino write with `fs.writeSync(1)`) lands on stderr, reads of fd 0 see an
 * empty input, and closing a standard descriptor does nothing.
 */
function keepOffProtocolStreams(): void {
  const nullFd = fs.openSync("/dev/null", "r");
  const redirect = (file: unknown): unknown => {
    if (file === 1) return 2;
    if (file === 0) return nullFd;
    if (typeof file !== "string") return file;
    if (STDOUT_ALIASES.has(file)) return "/dev/stderr";
    return STDIN_ALIASES.has(file) ? "/dev/null" : file;
  };
  const patch = (owner: Record<string, unknown>, name: string, closes = false) => {
    const original = owner[name] as ((...args: unknown[]) => unknown) | undefined;
    if (typeof original !== "function") return;
    const patched = function (this: unknown, ...args: unknown[]) {
      if (closes && typeof args[0] === "number" && args[0] <= 2) {
        const callback = args.at(-1);
        if (typeof callback === "function") process.nextTick(callback as () => void, null);
        return undefined;
      }
      args[0] = redirect(args[0]);
      return Reflect.apply(original, this, args);
    };
    owner[name] = Object.defineProperty(patched, "name", { value: original.name });
  };
  const target = fs as unknown as Record<string, unknown>;
  for (const base of ["write", "writev", "read", "readv", "readFile", "writeFile", "appendFile", "open"]) {
    patch(target, base);
    patch(target, `${base}Sync`);
  }
  for (const name of ["close", "closeSync"]) patch(target, name, true);
  for (const name of ["open", "readFile", "writeFile", "appendFile"])
    patch(fs.promises as unknown as Record<string, unknown>, name);
}

function compile(init: InitMessage): () => Exports | Promise<Exports> {
  const options: Record<string, unknown> = { filename: init.filename };
  const mainLoader = (vm as unknown as { constants?: Record<string, symbol> }).constants
    ?.USE_MAIN_CONTEXT_DEFAULT_LOADER;
  if (mainLoader) options.importModuleDynamically = mainLoader;
  const factory = vm.compileFunction(
    init.code,
    ["exports", "require", "module", "__filename", "__dirname"],
    options as unknown as vm.CompileFunctionOptions,
  ) as unknown as ModuleFactory;
  const requireFromEntry = moduleApi.createRequire(init.filename);
  const dir = dirname(init.filename);
  return () => {
    const module = { exports: {} as unknown };
    const evaluated = factory.call(
      module.exports,
      module.exports,
      requireFromEntry,
      module,
      init.filename,
      dir,
    );
    if (evaluated instanceof Promise) return evaluated.then(() => module.exports as Exports);
    return module.exports as Exports;
  };
}

async function start(init: InitMessage): Promise<void> {
  key = init.key;
  hideChannel();
  if (port) keepOffProtocolStreams();
  const policy: Policy = init.policy;
  installBroker(policy, (kind, action, resource, decision) => {
    if (init.audit) send({ t: "audit", e: [kind, action, resource, decision] });
  });
  process.exit = ((code?: number) => {
    throw new Error(`process.exit(${code ?? ""}) was called by the tool`);
  }) as typeof process.exit;
  if (port) {
    // Workers cannot abort; end the thread the way an aborting child process would end.
    process.abort = (() => {
      send({ t: "abort" });
      exitOriginal(134);
    }) as typeof process.abort;
  }

  const inFlight = new Set<number>();
  const fault = (error: unknown) => {
    const text = errorText(error);
    if (inFlight.size === 0) {
      send({ t: "fault", error: text });
      return;
    }
    for (const id of inFlight) send({ t: "result", id, ok: false, error: text });
    inFlight.clear();
  };
  process.on("uncaughtException", fault);
  process.on("unhandledRejection", fault);

  let instantiate: () => Exports | Promise<Exports>;
  let shared: Exports | undefined;
  try {
    instantiate = compile(init);
    if (!init.isolatePerCall) shared = await instantiate();
  } catch (error) {
    send({ t: "ready", error: errorText(error) });
    return;
  }
  send({ t: "ready" });

  const call = async ({ id, name, args }: CallMessage) => {
    inFlight.add(id);
    let ok = true;
    let value: unknown;
    try {
      const exports = shared ?? (await instantiate());
      const fn = exports[name];
      if (typeof fn !== "function") throw new Error(`tool not found: ${name}`);
      value = await (fn as (args: unknown) => unknown)(args);
    } catch (error) {
      ok = false;
      value = errorText(error);
    }
    if (!inFlight.delete(id)) return;
    if (ok) send({ t: "result", id, ok: true, value: value === undefined ? null : value });
    else send({ t: "result", id, ok: false, error: value as string });
  };
  // The CLI sends the next call only after this one's result: calls never overlap.
  onMessage((raw: ParentMessage) => {
    if (raw?.t === "call") void call(raw);
  });
}

// The CLI went away (killed, or closed us): nothing is left to serve.
if (!port) process.on("disconnect", () => exitOriginal(0));

let started = false;
onMessage((message: ParentMessage) => {
  if (started) return;
  started = true;
  if (message?.t !== "init") exitOriginal(70);
  else void start(message);
});
