/**
 * The CLI side of the sandbox: starts the tool host (always a child process: its fd 1 and 2 are
 * pipes to our stderr, bounded per call by tool-output.ts, and its `process.kill(process.pid)` ends only itself, which a worker thread sharing
 * our descriptors and pid cannot promise), feeds it the compiled module, answers its permission
 * checks (judge.ts), and runs calls with a per-call timeout and a memory watchdog. Under any
 * restriction the host runs under Node's permission model and `--frozen-intrinsics` with the broker
 * inside. A call that times out, blows the memory limit or crashes the host ends with an error; the
 * next call starts a fresh host, so the session keeps serving. With `--isolate-per-call` every call
 * gets a host of its own, taken from a spare started (and loaded) after the previous answer.
 */
import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { printable } from "../../printable.ts";
import type { AuditSink } from "../audit-log.ts";
import { amberCacheDir } from "../compile.ts";
import { isUnrestricted, type Policy } from "../permissions.ts";
import { Judge } from "./judge.ts";
import { nodePermissionArgs } from "./node-flags.ts";
import type {
  Answer,
  CallMessage,
  ChildMessage,
  InitMessage,
  ResultMessage,
  WarmMessage,
} from "./protocol.ts";
import { escapedPipe, FatalReport, ToolOutput } from "./tool-output.ts";

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
  /** The `--permission-policy` file the grants came from (the next start reads it again). */
  policyFile?: string;
}

/** A call waiting for its answer. */
interface Pending {
  resolve: (outcome: CallOutcome) => void;
  timer?: NodeJS.Timeout;
  /** Set once the call was cancelled: ends the host if the call has not settled by then. */
  cancelTimer?: NodeJS.Timeout;
}

/**
 * What cancels a call: `aborted` once cancelled, `onCancel` runs its listener then (at once if
 * already cancelled). A lighter stand-in for AbortSignal, which costs too much on every call.
 */
export interface CancelSignal {
  readonly aborted: boolean;
  onCancel(listener: () => void): void;
}

/** How long a cancelled call may take to settle before its host is replaced. */
export const CANCEL_GRACE_MS = 200;

/**
 * How long after an `--isolate-per-call` answer the next spare host starts: the client's turn to
 * read the answer without a process start competing for the CPU (see ToolProcess#retire).
 */
export const SPARE_START_DELAY_MS = 20;

/** The outcome of a cancelled call. */
export const CANCELLED = "tool call was cancelled";

/** The running tool host, child process or worker thread. */
interface Host {
  /** Writes one serialized message line to the host's call pipe. */
  post(line: string): void;
  /** Writes one answer line to the host's check pipe. */
  answer(line: string): void;
  kill(): void;
  /** Resident memory that grows with the tool's allocations, in bytes. */
  rss(): number;
  /** The host's process id (its descriptors are read in `/proc/<pid>/fd`). */
  pid: number | undefined;
}

interface Worker {
  host: Host;
  key: string;
  ready: Promise<string | undefined>;
  pending: Map<number, Pending>;
  /** V8's report of a fatal error (out of memory), held back from our stderr. */
  fatal: FatalReport;
  /** Sends a chunk of the host's stderr on to ours (escaped under a restriction). */
  forwardStderr: (chunk: Buffer) => void;
  /** What the host prints, on its way to our stderr (bounded per call). */
  output: ToolOutput;
  baselineRss: number;
  /** Checks being answered, in order. */
  checks: Promise<void>;
  killedFor?: string;
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

/** Asks a ready host to run its call path once (its `result` settles no call: ids start at 1). */
const WARM_UP_LINE = `${JSON.stringify({ t: "warm" } satisfies WarmMessage)}\n`;

/** The longest message the host may send (a result's JSON, in UTF-16 units): beyond it the call fails. */
export const MAX_HOST_LINE_CHARS = 16 * 1024 * 1024;

// child_process costs ~8 ms to load; keep it off the cold-start path (the first answers).
const requireBuiltin = createRequire(import.meta.url);
const loadSpawn = () => (requireBuiltin("node:child_process") as typeof import("node:child_process")).spawn;

function isRegularFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

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
  #queue: Promise<void> = Promise.resolve();
  /** The next host of an `--isolate-per-call` session, started once the previous answer is out. */
  #spare: Worker | undefined;
  #judge: Judge;
  /** The host of the last `--isolate-per-call` call, ended once its answer is out. */
  #retired: Worker | undefined;
  #spareTimer: NodeJS.Timeout | undefined;

  constructor(options: ToolProcessOptions) {
    this.#options = options;
    // What every new host starts from (the Node binary, the host script, the compiled bundles), and
    // the policy file the next start takes its grants from.
    this.#judge = new Judge(options.policy, options.audit, [
      process.execPath,
      options.hostScript,
      amberCacheDir(),
      ...(options.policyFile === undefined ? [] : [options.policyFile]),
    ]);
  }

  /** Starts the tool process ahead of the first call (cold-start latency off the critical path). */
  warm(): void {
    if (this.#closed) return;
    this.#ensureWorker();
    if (this.#options.isolatePerCall) setImmediate(() => this.#closed || this.#ensureSpare());
  }

  /**
   * Calls export `name` with `args`. Never rejects. Calls run strictly one at a time, in the order
   * they were made: the next one reaches the tool host only after the previous one has settled, so
   * a call that ends the host (timeout, memory, crash) fails alone and the ones queued behind it
   * start on a fresh host.
   */
  call(name: string, args: unknown, params?: (string | null)[], signal?: CancelSignal): Promise<CallOutcome> {
    const outcome = this.#queue.then(() => this.#run(name, args, params, signal));
    this.#queue = outcome.then(
      () => undefined,
      () => undefined,
    );
    return outcome;
  }

  async #run(
    name: string,
    args: unknown,
    params?: (string | null)[],
    signal?: CancelSignal,
  ): Promise<CallOutcome> {
    if (this.#closed) return { ok: false, error: "tool process is closed" };
    if (signal?.aborted) return { ok: false, error: CANCELLED };
    // The previous host is gone before this call reaches any host.
    this.#endRetired();
    const worker = this.#ensureWorker();
    const isolated = this.#options.isolatePerCall;
    const loadError = await worker.ready;
    if (loadError !== undefined) return { ok: false, error: loadError };
    if (worker.exited) return this.#run(name, args, params, signal);
    if (signal?.aborted) return { ok: false, error: CANCELLED };
    const id = this.#nextId++;
    const message: CallMessage = params
      ? { t: "call", id, name, args, params }
      : { t: "call", id, name, args };
    // Serialized before the call is registered: arguments nested deeper than JSON.stringify can go
    // (JSON.parse takes a million levels) fail this call alone, with no timer left to end a later one.
    let line: string;
    try {
      line = `${JSON.stringify(message)}\n`;
    } catch {
      return { ok: false, error: "arguments cannot be passed to the tool: nested too deeply" };
    }
    const outcome = await new Promise<CallOutcome>((resolve) => {
      const pending: Pending = { resolve };
      worker.pending.set(id, pending);
      const { timeoutMs } = this.#options;
      if (timeoutMs !== undefined && timeoutMs > 0) {
        pending.timer = setTimeout(() => {
          this.#kill(worker, `tool call timed out after ${timeoutMs} ms`, id);
        }, timeoutMs);
      }
      // A cancelled call that does not settle at once takes its host with it (the next call gets a
      // fresh one): JavaScript cannot stop a running function from outside.
      signal?.onCancel(() => {
        pending.cancelTimer ??= setTimeout(() => this.#kill(worker, CANCELLED, id), CANCEL_GRACE_MS);
      });
      this.#startWatchdog();
      // The host lived on: what looked like the start of a fatal report was the tool's own text.
      for (const part of worker.fatal.release()) worker.forwardStderr(part);
      worker.output.beginCall(name);
      worker.host.post(line);
    });
    // A fresh instance per call: this host has served its call; the spare takes the next one.
    if (isolated && this.#worker === worker) {
      this.#worker = undefined;
      this.#retire(worker);
    }
    return outcome;
  }

  /**
   * Ends an isolated call's host and starts the next call's, both once the answer is out: the kill
   * costs this thread ≈ 0.5 ms, and a starting Node process takes a core for ≈ 0.1 s (fork blocks
   * this thread first) — right after the answer, they held the CPU the client needed to wake up and
   * read it. A call that comes sooner ends the retired host itself and starts its own.
   */
  #retire(worker: Worker): void {
    this.#retired = worker;
    setImmediate(() => this.#endRetired());
    clearTimeout(this.#spareTimer);
    this.#spareTimer = setTimeout(() => {
      this.#spareTimer = undefined;
      // One process start at a time: a call that came meanwhile is waiting for its own.
      if (!this.#closed && this.#worker === undefined) this.#ensureSpare();
    }, SPARE_START_DELAY_MS);
  }

  #endRetired(): void {
    const retired = this.#retired;
    this.#retired = undefined;
    if (retired) this.#kill(retired, "tool process was retired");
  }

  /** Stops the tool process. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#spareTimer);
    this.#endRetired();
    if (this.#worker) this.#kill(this.#worker, "tool process is closed");
    if (this.#spare) this.#kill(this.#spare, "tool process is closed");
  }

  #ensureWorker(): Worker {
    if (this.#worker && !this.#worker.exited) return this.#worker;
    const spare = this.#spare;
    this.#spare = undefined;
    this.#worker = spare && !spare.exited ? spare : this.#startWorker();
    return this.#worker;
  }

  #ensureSpare(): void {
    if (this.#spare && !this.#spare.exited) return;
    this.#spare = this.#startWorker();
  }

  #startWorker(): Worker {
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
    const key = randomBytes(16).toString("hex");
    const worker: Worker = {
      host: undefined as unknown as Host,
      key,
      pending: new Map(),
      fatal: new FatalReport(),
      forwardStderr: () => {},
      output: new ToolOutput(o.diagnostics ?? process.stderr),
      baselineRss: 0,
      checks: Promise.resolve(),
      exited: false,
      ready: Promise.resolve(undefined),
    };
    let markReady: (error: string | undefined) => void = () => {};
    worker.ready = new Promise((resolve) => {
      markReady = resolve;
    });
    const restricted = !isUnrestricted(o.policy);
    // Under a restriction the tool's output reaches the terminal escaped (see escapedPipe).
    const [stdoutText, stderrText] = restricted
      ? [escapedPipe(), escapedPipe()]
      : [(c: Buffer) => c, (c: Buffer) => c];
    const onStdout = (chunk: Buffer) => worker.output.write(stdoutText(chunk));
    worker.forwardStderr = (chunk) => worker.output.write(stderrText(chunk));
    const onStderr = (chunk: Buffer) => {
      for (const part of worker.fatal.take(chunk)) worker.forwardStderr(part);
    };
    const onMessage = (message: ChildMessage) => this.#onMessage(worker, message, markReady);
    const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
      if (worker.exited && worker.killedFor === undefined) {
        worker.output.end();
        return;
      }
      worker.exited = true;
      // V8's report is not the tool's output: one line says what it would have. Held text that is
      // no report of the host's own end (it was killed, or the text was the tool's) goes out.
      const outOfMemory = worker.fatal.outOfMemory();
      const fatal = worker.killedFor === undefined && !outOfMemory ? worker.fatal.summary() : undefined;
      if (fatal !== undefined) worker.output.notice(`tool process ended on a fatal error (${fatal})`);
      else if (!outOfMemory) for (const part of worker.fatal.release()) worker.forwardStderr(part);
      const reason =
        worker.killedFor ??
        (outOfMemory
          ? this.#ranOutOfMemory(worker)
          : `tool process exited unexpectedly (${signal ? `signal ${signal}` : `code ${code}`})`);
      worker.output.end();
      markReady(reason);
      this.#failAll(worker, reason);
    };
    worker.host = this.#startProcess(worker, env, { onStdout, onStderr, onMessage, onExit });
    o.compile().then(
      (code) => {
        if (worker.exited) return;
        const init: InitMessage = {
          t: "init",
          key,
          broker: restricted || o.audit.enabled,
          fsRestricted: o.policy.denied.includes("fs.read") || o.policy.denied.includes("fs.write"),
          noWorkers: restricted,
          code,
          filename: o.entry,
        };
        worker.host.post(`${JSON.stringify(init)}\n`);
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
    const brokered = !isUnrestricted(o.policy) || o.audit.enabled;
    const execArgv = [
      ...nodePermissionArgs(o.policy, {
        hostScript: o.hostScript,
        entry: o.entry,
        // Only a file: Node's model would grant everything below a directory a link there names.
        manifest: o.manifest !== undefined && isRegularFile(o.manifest) ? o.manifest : undefined,
      }),
      ...(brokered ? ["--frozen-intrinsics"] : []),
      "--no-warnings",
    ];
    if (o.maxMemoryMb) execArgv.push(`--max-old-space-size=${o.maxMemoryMb}`);
    // fd 3: host → CLI lines; fd 4: calls; fd 5: answers to checks (see protocol.ts).
    const child: ChildProcess = loadSpawn()(process.execPath, [...execArgv, o.hostScript], {
      env,
      stdio: ["ignore", "pipe", "pipe", "pipe", "pipe", "pipe"],
    });
    const [, stdout, stderr, out, calls, answers] = child.stdio as unknown as [
      null,
      NodeJS.ReadableStream,
      NodeJS.ReadableStream,
      NodeJS.ReadableStream & { setEncoding(e: string): void },
      NodeJS.WritableStream & { on(e: string, f: () => void): void },
      NodeJS.WritableStream & { on(e: string, f: () => void): void },
    ];
    stdout.on("data", on.onStdout);
    stderr.on("data", on.onStderr);
    calls.on("error", () => {});
    answers.on("error", () => {});
    out.setEncoding("utf8");
    // Only each new chunk is searched for the end of a line: a result of many megabytes arrives in
    // thousands of chunks, and searching (so flattening) everything buffered every time cost
    // seconds per megabyte while the CLI's event loop waited.
    let parts: string[] = [];
    let partsLength = 0;
    out.on("data", (chunk: string) => {
      if (worker.exited) return;
      let rest = chunk;
      let nl = rest.indexOf("\n");
      if (partsLength + (nl === -1 ? rest.length : nl) > MAX_HOST_LINE_CHARS) {
        parts = [];
        this.#kill(worker, `tool result is larger than ${MAX_HOST_LINE_CHARS / 1024 / 1024} MiB`);
        return;
      }
      if (nl === -1) {
        parts.push(rest);
        partsLength += rest.length;
        return;
      }
      while (nl !== -1) {
        parts.push(rest.slice(0, nl));
        const line = parts.join("");
        parts = [];
        partsLength = 0;
        rest = rest.slice(nl + 1);
        nl = rest.indexOf("\n");
        let message: ChildMessage | undefined;
        try {
          message = JSON.parse(line) as ChildMessage;
        } catch {}
        // Only the host writes here, always with the key: anything else is tool code at the pipe.
        if (message?.k !== worker.key) {
          this.#kill(worker, "tool process tampered with its channel");
          return;
        }
        on.onMessage(message);
      }
      if (rest !== "") {
        parts.push(rest);
        partsLength = rest.length;
      }
    });
    out.on("end", () => {
      setTimeout(() => this.#kill(worker, "tool process closed its channel"), 500).unref();
    });
    child.on("error", () => {});
    child.on("close", on.onExit);
    return {
      post: (line) => calls.write(line),
      answer: (line) => answers.write(line),
      kill: () => child.kill("SIGKILL"),
      rss: () => rssBytes(child.pid ?? 0),
      pid: child.pid,
    };
  }

  #onMessage(worker: Worker, message: ChildMessage, markReady: (error: string | undefined) => void): void {
    switch (message.t) {
      case "ready":
        worker.baselineRss = worker.host.rss();
        if (message.error === undefined) worker.host.post(WARM_UP_LINE);
        markReady(message.error === undefined ? undefined : `Failed to load tool module: ${message.error}`);
        return;
      case "check": {
        // Answers go back in order, each after its own decision (a lookup may make one wait).
        worker.checks = worker.checks.then(async () => {
          let answer: Answer;
          try {
            answer = await this.#judge.answer(message, worker.host.pid);
          } catch (error) {
            // The decision could not be made or recorded (an audit log on a full disk): refused, and
            // the session goes on — a rejection here would end the CLI.
            (this.#options.diagnostics ?? process.stderr).write(
              `amber: permission check failed: ${printable((error as Error).message)}\n`,
            );
            answer = { d: "Deny", r: message.resource };
          }
          if (!worker.exited) worker.host.answer(`${JSON.stringify({ ...answer, n: message.n })}\n`);
        });
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
    clearTimeout(pending.cancelTimer);
    pending.resolve(
      message.ok
        ? { ok: true, value: message.value ?? null }
        : { ok: false, error: message.error ?? "tool failed" },
    );
  }

  #failAll(worker: Worker, reason: string, culprit?: number): void {
    for (const [id, pending] of worker.pending) {
      clearTimeout(pending.timer);
      clearTimeout(pending.cancelTimer);
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
    worker.output.end();
    this.#failAll(worker, reason, culprit);
    worker.host.kill();
  }

  /**
   * Says on our stderr, in one line, that the host ran out of memory in its current call (V8's heap
   * limit or the watchdog, whichever came first), and returns the call's error.
   */
  #ranOutOfMemory(worker: Worker): string {
    const { maxMemoryMb } = this.#options;
    worker.output.notice("tool ran out of memory", maxMemoryMb ? ` (--max-memory ${maxMemoryMb} MB)` : "");
    return `tool exceeded the memory limit${maxMemoryMb ? ` (${maxMemoryMb} MB)` : ""}`;
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
      if (rss > worker.baselineRss + maxMemoryMb * 1024 * 1024)
        this.#kill(worker, this.#ranOutOfMemory(worker));
    }, 20);
    this.#watchdog.unref();
  }
}
