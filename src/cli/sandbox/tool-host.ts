/**
 * Entry point of the tool host (bundled to `dist/cli/tool-host.mjs`, started by tool-process.ts as a
 * child process, under Node's permission model and `--frozen-intrinsics` whenever anything is
 * restricted or audited). Everything the host and its broker need is captured here, before any
 * tool code runs: the pipes to the CLI (plain file descriptors, see protocol.ts), the functions
 * that read and write them, and the global bindings of the built-ins. The tool module is evaluated
 * once; `--isolate-per-call` gives each call a fresh host.
 */
import { randomFillSync } from "node:crypto";
import fs from "node:fs";
import moduleApi from "node:module";
import net from "node:net";
import path from "node:path";
import vm from "node:vm";
import { type PermissionAction, PermissionDeniedError, type PermissionKind } from "../permissions.ts";
import { type Ask, installBroker } from "./broker/index.ts";
import {
  type Answer,
  type CallMessage,
  type ChildMessage,
  HOST_ANSWERS_FD,
  HOST_CALLS_FD,
  HOST_OUT_FD,
  type InitMessage,
  type ParentMessage,
  WARM_UP_ID,
} from "./protocol.ts";

/** Runs the module body; a body with top-level await returns the promise of its evaluation. */
type ModuleFactory = (
  exports: unknown,
  require: NodeJS.Require,
  module: { exports: unknown },
  filename: string,
  dirname: string,
) => undefined | Promise<void>;

type Exports = Record<string, unknown>;
type WithoutKey<T> = T extends unknown ? Omit<T, "k"> : never;

// ---- captured before any tool code ------------------------------------------------------------
const writeSync = fs.writeSync;
const readSync = fs.readSync;
const stringify = JSON.stringify;
const parse = JSON.parse;
const decoder = new TextDecoder();
const decode = decoder.decode.bind(decoder);
const encoder = new TextEncoder();
const encode = encoder.encode.bind(encoder);
const answerBuffer = new Uint8Array(64 * 1024);
const randomFill = randomFillSync;
const nonceBits = new Uint32Array(2);
const exitOriginal = process.exit.bind(process);
const reallyExit = (process as unknown as { reallyExit: (code: number) => never }).reallyExit.bind(process);
const dirnameOf = path.dirname;
const hasOwn = Object.hasOwn;
const resolvePath = path.resolve;
const isAbsolutePath = path.isAbsolute;
/** Node's own permission check (absent without its permission model: then Node refuses nothing). */
const nodePermission = (process as { permission?: { has(scope: string, reference?: string): boolean } })
  .permission;
const permissionHas = nodePermission?.has.bind(nodePermission);

/**
 * Global bindings of the built-ins become read-only, so tool code cannot swap `JSON`, `Reflect`,
 * `Array`, … under the host (the objects themselves are frozen by `--frozen-intrinsics`).
 */
const LOCKED_GLOBALS = [
  "Object",
  "Function",
  "Array",
  "String",
  "Number",
  "Boolean",
  "Symbol",
  "BigInt",
  "Math",
  "JSON",
  "Reflect",
  "Proxy",
  "Promise",
  "RegExp",
  "Date",
  "Error",
  "TypeError",
  "RangeError",
  "SyntaxError",
  "Map",
  "Set",
  "WeakMap",
  "WeakSet",
  "ArrayBuffer",
  "SharedArrayBuffer",
  "DataView",
  "Uint8Array",
  "Atomics",
  "Buffer",
  "URL",
  "TextDecoder",
  "TextEncoder",
  "globalThis",
];
function lockGlobals(): void {
  for (const name of LOCKED_GLOBALS) {
    const descriptor = Reflect.getOwnPropertyDescriptor(globalThis, name);
    if (descriptor && "value" in descriptor)
      Reflect.defineProperty(globalThis, name, {
        value: descriptor.value,
        writable: false,
        configurable: false,
      });
  }
  // Node's ES module resolver and the broker's resolve hook read a URL through its prototype's
  // getters: one the tool redefined could name one file to the check and another to Node.
  Object.freeze(URL.prototype);
  Object.freeze(URL);
  // The broker resolves paths with node:path; nothing may replace its functions.
  Object.freeze(path.posix);
  Object.freeze(path.win32);
  Object.freeze(path);
}

let key = "";

/** Sends at once, in order (a call's checks before its result). */
function send(message: WithoutKey<ChildMessage>): void {
  let line: string;
  try {
    line = stringify({ ...message, k: key });
  } catch {
    line = stringify({
      t: "result",
      k: key,
      id: (message as { id?: number }).id ?? -1,
      ok: false,
      error: "result is not JSON-serializable",
    });
  }
  // Whole, even on a descriptor tool code made non-blocking (a handle of its own opened on it).
  const bytes = encode(`${line}\n`);
  let written = 0;
  while (written < bytes.length) {
    try {
      written += writeSync(HOST_OUT_FD, bytes, written, bytes.length - written);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EAGAIN") reallyExit(71);
    }
  }
}

/** A fresh unguessable check nonce (64 random bits, drawn per check: no future nonce sits in memory). */
function nextNonce(): string {
  randomFill(nonceBits);
  return `${nonceBits[0]}.${nonceBits[1]}`;
}

/** Answer text read past the last complete line (only ever answers to checks tool code forged). */
let answerRest = "";

/**
 * Asks the CLI and waits for its answer (the host blocks; the CLI's event loop is free). Lines
 * that do not echo this check's nonce answer checks tool code forged with a stolen key: skipped.
 */
const ask: Ask = (kind, action, resource, extra) => {
  const nonce = nextNonce();
  send({ t: "check", n: nonce, kind, action, resource, ...extra });
  for (;;) {
    let nl = answerRest.indexOf("\n");
    while (nl !== -1) {
      const line = answerRest.slice(0, nl);
      answerRest = answerRest.slice(nl + 1);
      const answer = parse(line) as Answer;
      if (answer.n === nonce) return answer;
      nl = answerRest.indexOf("\n");
    }
    let n = 0;
    try {
      n = readSync(HOST_ANSWERS_FD, answerBuffer, 0, answerBuffer.length, null);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "EAGAIN") continue;
      reallyExit(71);
    }
    if (n === 0) reallyExit(71);
    answerRest += decode(answerBuffer.subarray(0, n), { stream: true });
  }
};

/** A permission denial somewhere in `error`'s `cause` chain (libraries wrap it, e.g. "fetch failed"). */
function deniedCause(error: unknown): Error | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 8 && typeof current === "object" && current !== null; depth++) {
    if (current instanceof PermissionDeniedError) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * What each of Node's permission names is asked as (`process.permission.has`) and audited as.
 * Node's other refusals (a symlink, an addon, WASI, the inspector) never reach a tool: the broker
 * refuses those first, so no other name in an error is taken for one.
 */
const NODE_PERMISSIONS: Record<string, { scope: string; kind: PermissionKind; action: PermissionAction }> = {
  FileSystemRead: { scope: "fs.read", kind: "FileSystem", action: "Read" },
  FileSystemWrite: { scope: "fs.write", kind: "FileSystem", action: "Write" },
  ChildProcess: { scope: "child", kind: "Process", action: "Execute" },
  WorkerThreads: { scope: "worker", kind: "Process", action: "Execute" },
};

/**
 * A refusal by Node's permission model that reached the call boundary (the broker never saw it:
 * `require` of a file out of the jail), made the broker's denial. Tool code can throw an object
 * that looks like one, so the error only says what to ask: it counts when Node's permission model
 * itself refuses what it names — asked through `process.permission.has`, captured before any tool
 * code — and the line names the path Node checks (a file) or Node's permission (anything else),
 * never the error's text. A forged error thus writes only the line a real attempt would.
 */
function nodeDenial(error: unknown): Error | undefined {
  if (!permissionHas) return undefined;
  let current: unknown = error;
  for (let depth = 0; depth < 8 && typeof current === "object" && current !== null; depth++) {
    // Each field read once: a getter could answer differently the second time.
    const { code, permission: name, resource: named } = current as Record<string, unknown>;
    const permission =
      typeof name === "string" && hasOwn(NODE_PERMISSIONS, name) ? NODE_PERMISSIONS[name] : undefined;
    if (code === "ERR_ACCESS_DENIED" && permission) {
      const { scope, kind, action } = permission;
      const file = kind === "FileSystem";
      // Node names the absolute path it checked (resolved here without the cwd, which tool code can fake).
      if (file && (typeof named !== "string" || !isAbsolutePath(named))) return undefined;
      const resource = file ? resolvePath(named as string) : (name as string);
      if (permissionHas(scope, file ? resource : undefined)) return undefined;
      const answer = ask(kind, action, resource, { denied: true });
      return new PermissionDeniedError(kind, action, answer.r);
    }
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

function errorText(error: unknown, broker: boolean): string {
  const denied = deniedCause(error) ?? (broker ? nodeDenial(error) : undefined);
  if (denied) return denied.message;
  if (error instanceof Error) return error.message;
  // A thrown error-like object ({message: "…"}, or an Error from another realm) reads as its message.
  const message =
    typeof error === "object" && error !== null ? (error as { message?: unknown }).message : undefined;
  if (typeof message === "string") return message;
  try {
    return typeof error === "string" ? error : (stringify(error) ?? String(error));
  } catch {
    return String(error);
  }
}

/**
 * The module's exports come boxed: a module that exports `then` is a thenable, and awaiting it bare
 * called that tool with the promise's resolvers (which it never called: every call of the session hung).
 */
type Loaded = { exports: Exports };

function compile(init: InitMessage): () => Loaded | Promise<Loaded> {
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
  const dir = dirnameOf(init.filename);
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
    const loaded = () => ({ exports: module.exports as Exports });
    if (evaluated instanceof Promise) return evaluated.then(loaded);
    return loaded();
  };
}

/** The call's arguments: the one object, or its members in parameter order. */
function spread(args: unknown, params: (string | null)[] | undefined): unknown[] {
  if (!params) return [args];
  const bag = typeof args === "object" && args !== null ? (args as Record<string, unknown>) : {};
  const out: unknown[] = [];
  for (let i = 0; i < params.length; i++) {
    const name = params[i];
    out[i] = typeof name === "string" && hasOwn(bag, name) ? bag[name] : undefined;
  }
  return out;
}

/** Receives what the host serves once the module is loaded: calls, and the warm-up run. */
type Serve = (call: (message: CallMessage) => void, warmUp: () => void) => void;

/** What the warm-up run calls instead of an export: the host's own, so no tool code runs. */
const warmUpTool = (args: unknown) => args;

/**
 * The tool's stdout and stderr (pipes to the CLI) written synchronously, as Node writes a file or a
 * terminal: what a call printed is in the pipe before its answer is sent, so the CLI charges it to
 * that call (tool-output.ts), and a flood waits for the CLI to read it rather than piling up here.
 */
function blockingStdio(): void {
  for (const stream of [process.stdout, process.stderr]) {
    const handle = (stream as unknown as { _handle?: { setBlocking?: (on: boolean) => number } })._handle;
    handle?.setBlocking?.(true);
  }
}

async function start(init: InitMessage, serve: Serve): Promise<void> {
  key = init.key;
  const broker = init.broker;
  blockingStdio();
  if (broker) {
    installBroker(ask, {
      reserved: [HOST_OUT_FD, HOST_CALLS_FD, HOST_ANSWERS_FD],
      fsRestricted: init.fsRestricted,
      noWorkers: init.noWorkers,
    });
    lockGlobals();
  }
  process.exit = ((code?: number) => {
    throw new Error(`process.exit(${code ?? ""}) was called by the tool`);
  }) as typeof process.exit;

  const inFlight = new Set<number>();
  const fault = (error: unknown) => {
    const text = errorText(error, broker);
    if (inFlight.size === 0) {
      send({ t: "fault", error: text });
      return;
    }
    for (const id of inFlight) send({ t: "result", id, ok: false, error: text });
    inFlight.clear();
  };
  process.on("uncaughtException", fault);
  process.on("unhandledRejection", fault);

  let exports: Exports;
  try {
    exports = (await compile(init)()).exports;
  } catch (error) {
    send({ t: "ready", error: errorText(error, broker) });
    return;
  }
  send({ t: "ready" });

  // One call: `lookup` finds the function inside the try (an export's getter may throw).
  const run = async (
    id: number,
    name: string,
    lookup: () => unknown,
    args: unknown,
    params?: (string | null)[],
  ) => {
    inFlight.add(id);
    let ok = true;
    let value: unknown;
    try {
      const fn = lookup();
      if (typeof fn !== "function") throw new Error(`tool not found: ${name}`);
      value = await (fn as (...args: unknown[]) => unknown)(...spread(args, params));
    } catch (error) {
      ok = false;
      value = errorText(error, broker);
    }
    if (!inFlight.delete(id)) return;
    if (ok) send({ t: "result", id, ok: true, value: value === undefined ? null : value });
    else send({ t: "result", id, ok: false, error: value as string });
  };
  serve(
    ({ id, name, args, params }) => void run(id, name, () => exports[name], args, params),
    () => void run(WARM_UP_ID, "", () => warmUpTool, {}),
  );
}

// Calls arrive as lines on fd 4; the CLI sends the next call only after this one's result.
const calls = new net.Socket({ fd: HOST_CALLS_FD, readable: true, writable: false });
calls.setEncoding("utf8");
let buffered = "";
let listener: ((message: CallMessage) => void) | undefined;
let warmUp: (() => void) | undefined;
let started = false;
calls.on("data", (chunk: string) => {
  buffered += chunk;
  let nl = buffered.indexOf("\n");
  while (nl !== -1) {
    const line = buffered.slice(0, nl);
    buffered = buffered.slice(nl + 1);
    nl = buffered.indexOf("\n");
    let message: ParentMessage;
    try {
      message = parse(line) as ParentMessage;
    } catch {
      exitOriginal(70);
      return;
    }
    if (!started) {
      started = true;
      if (message?.t !== "init") exitOriginal(70);
      else
        void start(message, (call, warm) => {
          listener = call;
          warmUp = warm;
        });
    } else if (message?.t === "call") listener?.(message);
    else if (message?.t === "warm") warmUp?.();
  }
});
// The CLI went away (killed, or closed us): nothing is left to serve.
calls.on("end", () => exitOriginal(0));
calls.on("error", () => exitOriginal(0));
