/**
 * The CLI side of the sandbox: starts the tool host, feeds it the compiled module, and runs calls
 * with a per-call timeout and a memory watchdog. Under any permission restriction the host is a
 * child process under Node's permission model with the broker inside; with nothing restricted
 * (the contract's "everything allowed" mode) it is a worker thread, which contains the same
 * failures (runaway loops are terminated, heaps are limited, `process.exit()` ends only the thread)
 * at half the cost per call. A call that times out, blows the memory limit or crashes the host ends
 * with an error; the next call starts a fresh host, so the session keeps serving.
 */
import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { AuditSink } from "../audit-log.ts";
import { isUnrestricted, type Policy } from "../permissions.ts";
import { nodePermissionArgs } from "./node-flags.ts";
import type { CallMessage, ChildMessage, InitMessage, ParentMessage, ResultMessage } from "./protocol.ts";

/** The outcome of one call: the tool's return value, or the message of what went wrong. */
export type CallOutcome = { ok: true; value: unknown } | { ok: false; error: string };

/** Options of {@link ToolProcess}. */
export interface ToolProcessOptions {
  entry: string;
  manifest?: string;
  policy: Policy;
  audit: AuditSink;
  isolatePerCall: boolean;
  timeoutMs?: number;
  maxMemoryMb?: number;
  /** Path of the bundled tool-host script. */
  hostScript: string;
  /** Produces the compiled CommonJS bundle of the tool file (cached by the caller). */
  compile: () => Promise<string>;
  /** Where the tool process's stdout/stderr go (never the protocol stream). */
  diagnostics?: NodeJS.WritableStream;
  /**
   * `"process"`: a child process (required whenever the policy restricts anything); `"thread"`: a
   * worker thread, only for unrestricted runs. Default: `"process"`.
   */
  host?: "process" | "thread";
}

/** A call waiting for its answer. */
interface Pending {
  resolve: (outcome: CallOutcome) => void;
  timer?: NodeJS.Timeout;
}

/** The running tool host, child process or worker thread. */
interface Host {
  post(message: ParentMessage): void;
  kill(): void;
  /** Resident memory that grows with the tool's allocations, in bytes. */
  rss(): number;
}

interface Worker {
  host: Host;
  thread: boolean;
  key: string;
  ready: Promise<string | undefined>;
  pending: Map<number, Pending>;
  stderrTail: string;
  baselineRss: number;
  killedFor?: string;
  /** Why the host died on its own (worker threads report it as an event before exiting). */
  crashedFor?: string;
  aborted?: boolean;
  exited: boolean;
}

/** What a host reports back to {@link ToolProcess}. */
interface HostEvents {
  onStdout(chunk: Buffer): void;
  onStderr(chunk: Buffer): void;
  onMessage(message: ChildMessage): void;
  onExit(code: number | null, signal: NodeJS.Signals | null): void;
}

const PAGE_SIZE = 4096;

// child_process costs ~8 ms to load; keep it off the cold-start path (the first answers).
const requireBuiltin = createRequire(import.meta.url);
const loadFork = () => (requireBuiltin("node:child_process") as typeof import("node:child_process")).fork;
const loadWorkerThreads = () => requireBuiltin("node:worker_threads") as typeof import("node:worker_threads");

/** Load failures that only a worker thread has (non-context-aware addons, process-wide APIs). */
const THREAD_ONLY_FAILURE = /did not self-register|not supported in workers|ERR_DLOPEN_FAILED/i;

function rssBytes(pid: number): number {
  try {
    const statm = readFileSync(`/proc/${pid}/statm`, "utf8").split(" ");
    return Number(statm[1]) * PAGE_SIZE;
  } catch {
    return 0;
  }
}

/** A restartable sandboxed tool process. */
export class ToolProcess {
  #options: ToolProcessOptions;
  #worker: Worker | undefined;
  #nextId = 1;
  #closed = false;
  #watchdog: NodeJS.Timeout | undefined;
  #threadHost: boolean;
  #queue: Promise<void> = Promise.resolve();

  constructor(options: ToolProcessOptions) {
    this.#options = options;
    this.#threadHost = options.host === "thread";
  }

  /** Starts the tool process ahead of the first call (cold-start latency off the critical path). */
  warm(): void {
    if (!this.#closed) this.#ensureWorker();
  }

  /**
   * Calls export `name` with `args`. Never rejects. Calls run strictly one at a time, in the order
   * they were made: the next one reaches the tool host only after the previous one has settled, so
   * a call that ends the host (timeout, memory, crash) fails alone and the ones queued behind it
   * start on a fresh host.
   */
  call(name: string, args: unknown): Promise<CallOutcome> {
    const outcome = this.#queue.then(() => this.#run(name, args));
    this.#queue = outcome.then(
      () => undefined,
      () => undefined,
    );
    return outcome;
  }

  async #run(name: string, args: unknown): Promise<CallOutcome> {
    if (this.#closed) return { ok: false, error: "tool process is closed" };
    const worker = this.#ensureWorker();
    const loadError = await worker.ready;
    if (loadError !== undefined) return { ok: false, error: loadError };
    if (worker.exited) return this.#run(name, args);
    const id = this.#nextId++;
    return new Promise<CallOutcome>((resolve) => {
      const pending: Pending = { resolve };
      worker.pending.set(id, pending);
      const { timeoutMs } = this.#options;
      if (timeoutMs !== undefined && timeoutMs > 0) {
        pending.timer = setTimeout(() => {
          this.#kill(worker, `tool call timed out after ${timeoutMs} ms`, id);
        }, timeoutMs);
      }
      this.#startWatchdog();
      const message: CallMessage = { t: "call", id, name, args };
      worker.host.post(message);
    });
  }

  /** Stops the tool process. */
  close(): void {
    this.#closed = true;
    if (this.#worker) this.#kill(this.#worker, "tool process is closed");
  }

  #ensureWorker(): Worker {
    if (this.#worker && !this.#worker.exited) return this.#worker;
    const o = this.#options;
    const env: Record<string, string | undefined> = {};
    for (const [name, value] of Object.entries(process.env)) {
      if (
        isUnrestricted(o.policy) ||
        !o.policy.denied.includes("env.read") ||
        o.policy.allowEnv.includes(name)
      )
        env[name] = value;
    }
    // Node options meant for the CLI (loaders, preloads) must not reach the tool process.
    delete env.NODE_OPTIONS;
    const thread = this.#threadHost && isUnrestricted(o.policy);
    const key = randomBytes(16).toString("hex");
    const worker: Worker = {
      host: undefined as unknown as Host,
      thread,
      key,
      pending: new Map(),
      stderrTail: "",
      baselineRss: 0,
      exited: false,
      ready: Promise.resolve(undefined),
    };
    let markReady: (error: string | undefined) => void = () => {};
    worker.ready = new Promise((resolve) => {
      markReady = resolve;
    });
    const diagnostics = o.diagnostics ?? process.stderr;
    const onStdout = (chunk: Buffer) => diagnostics.write(chunk);
    const onStderr = (chunk: Buffer) => {
      worker.stderrTail = (worker.stderrTail + chunk.toString()).slice(-4096);
      diagnostics.write(chunk);
    };
    const onMessage = (message: ChildMessage) => this.#onMessage(worker, message, markReady);
    const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
      if (worker.exited && worker.killedFor === undefined) return;
      worker.exited = true;
      const reason =
        worker.killedFor ??
        worker.crashedFor ??
        (/heap out of memory|Allocation failed/i.test(worker.stderrTail)
          ? `tool exceeded the memory limit${o.maxMemoryMb ? ` (${o.maxMemoryMb} MB)` : ""}`
          : `tool process exited unexpectedly (${signal ? `signal ${signal}` : `code ${code}`})`);
      markReady(reason);
      this.#failAll(worker, reason);
    };
    worker.host = thread
      ? this.#startThread(worker, env, { onStdout, onStderr, onMessage, onExit })
      : this.#startProcess(worker, env, { onStdout, onStderr, onMessage, onExit });
    this.#worker = worker;
    o.compile().then(
      (code) => {
        if (worker.exited) return;
        const init: InitMessage = {
          t: "init",
          key,
          policy: o.policy,
          code,
          filename: o.entry,
          isolatePerCall: o.isolatePerCall,
          audit: o.audit.enabled,
        };
        worker.host.post(init);
      },
      (error: Error) => {
        markReady(error.message);
        this.#kill(worker, error.message);
      },
    );
    return worker;
  }

  #startProcess(worker: Worker, env: Record<string, string | undefined>, on: HostEvents): Host {
    const o = this.#options;
    const execArgv = [
      ...nodePermissionArgs(o.policy, { hostScript: o.hostScript, entry: o.entry, manifest: o.manifest }),
      "--no-warnings",
    ];
    if (o.maxMemoryMb) execArgv.push(`--max-old-space-size=${o.maxMemoryMb}`);
    const child: ChildProcess = loadFork()(o.hostScript, [], {
      execArgv,
      env,
      stdio: ["ignore", "pipe", "pipe", "ipc"],
      serialization: "json",
    });
    child.stdout?.on("data", on.onStdout);
    child.stderr?.on("data", on.onStderr);
    child.on("message", on.onMessage);
    child.on("error", () => {});
    // A crash also disconnects; give the exit (and its stderr) a moment to explain it.
    child.on("disconnect", () => {
      setTimeout(() => this.#kill(worker, "tool process closed its IPC channel"), 500).unref();
    });
    child.on("close", on.onExit);
    return {
      post: (message) => child.send(message),
      kill: () => child.kill("SIGKILL"),
      rss: () => rssBytes(child.pid ?? 0),
    };
  }

  #startThread(worker: Worker, env: Record<string, string | undefined>, on: HostEvents): Host {
    const o = this.#options;
    const { Worker: Thread } = loadWorkerThreads();
    const thread = new Thread(o.hostScript, {
      env,
      stdout: true,
      stderr: true,
      // As the child process gets: no warnings (the broker touches experimental modules).
      execArgv: ["--no-warnings"],
      resourceLimits: o.maxMemoryMb ? { maxOldGenerationSizeMb: o.maxMemoryMb } : undefined,
    });
    thread.stdout.on("data", on.onStdout);
    thread.stderr.on("data", on.onStderr);
    const receive = (raw: unknown) => {
      // Messages are JSON text; anything else was not sent by the host (and lacks the key).
      if (typeof raw !== "string") return;
      let message: ChildMessage;
      try {
        message = JSON.parse(raw) as ChildMessage;
      } catch {
        return;
      }
      on.onMessage(message);
    };
    thread.on("message", receive);
    thread.on("error", (error: Error & { code?: string }) => {
      worker.crashedFor ??=
        error.code === "ERR_WORKER_OUT_OF_MEMORY"
          ? `tool exceeded the memory limit${o.maxMemoryMb ? ` (${o.maxMemoryMb} MB)` : ""}`
          : `tool process crashed: ${error.message}`;
    });
    thread.on("exit", (code) => on.onExit(code, worker.aborted ? "SIGABRT" : null));
    return {
      post: (message) => thread.postMessage(message),
      kill: () => void thread.terminate(),
      // The thread shares the CLI's memory: the process's resident set, over the baseline taken
      // when the tool module was loaded, is what the tool allocated (heap and buffers alike).
      rss: () => rssBytes(process.pid),
    };
  }

  #onMessage(worker: Worker, message: ChildMessage, markReady: (error: string | undefined) => void): void {
    if (message?.k !== worker.key) return;
    switch (message.t) {
      case "ready":
        if (message.error !== undefined && worker.thread && THREAD_ONLY_FAILURE.test(message.error)) {
          // The module needs a process of its own (e.g. a native addon that is not thread-safe).
          this.#threadHost = false;
          this.#kill(worker, "tool process was restarted");
          markReady(undefined);
          return;
        }
        worker.baselineRss = worker.host.rss();
        markReady(message.error === undefined ? undefined : `Failed to load tool module: ${message.error}`);
        return;
      case "abort":
        worker.aborted = true;
        return;
      case "audit": {
        const [kind, action, resource, decision] = message.e;
        this.#options.audit.record({ kind, action, resource, decision });
        return;
      }
      case "result":
        this.#settle(worker, message);
        return;
      case "fault":
        this.#options.diagnostics?.write(`amber: uncaught error in tool process: ${message.error}\n`);
        return;
    }
  }

  #settle(worker: Worker, message: ResultMessage): void {
    const pending = worker.pending.get(message.id);
    if (!pending) return;
    worker.pending.delete(message.id);
    clearTimeout(pending.timer);
    pending.resolve(
      message.ok
        ? { ok: true, value: message.value ?? null }
        : { ok: false, error: message.error ?? "tool failed" },
    );
  }

  #failAll(worker: Worker, reason: string, culprit?: number): void {
    for (const [id, pending] of worker.pending) {
      clearTimeout(pending.timer);
      pending.resolve({
        ok: false,
        error: culprit === undefined || id === culprit ? reason : "tool process was restarted",
      });
    }
    worker.pending.clear();
  }

  #kill(worker: Worker, reason: string, culprit?: number): void {
    if (worker.exited) return;
    worker.killedFor = reason;
    worker.exited = true;
    this.#failAll(worker, reason, culprit);
    worker.host.kill();
  }

  #startWatchdog(): void {
    const { maxMemoryMb } = this.#options;
    if (!maxMemoryMb || this.#watchdog) return;
    this.#watchdog = setInterval(() => {
      const worker = this.#worker;
      if (!worker || worker.exited || worker.pending.size === 0) {
        clearInterval(this.#watchdog);
        this.#watchdog = undefined;
        return;
      }
      const rss = worker.host.rss();
      if (rss > worker.baselineRss + maxMemoryMb * 1024 * 1024) {
        this.#kill(worker, `tool exceeded the memory limit (${maxMemoryMb} MB)`);
      }
    }, 20);
    this.#watchdog.unref();
  }
}
