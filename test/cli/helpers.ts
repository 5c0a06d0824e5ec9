/**
 * Black-box harness for the `amber` CLI: the bin built once per run into a private directory (so
 * parallel runs never race on dist/cli), runs it with the system Node 20 the way `npx amber`
 * would, and talks to `session` / `mcp` processes line by line or frame by frame.
 */
import { type ChildProcess, type ChildProcessWithoutNullStreams, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { inject } from "vitest";

/** The first `node` on PATH outside node_modules (the machine's Node 20), else the current one. */
export function systemNode(): string {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (dir.includes("node_modules")) continue;
    const candidate = join(dir, "node");
    if (existsSync(candidate)) return candidate;
  }
  return process.execPath;
}

export const NODE = systemNode();

/**
 * The CLI of this run: built once by the node project's global setup (test/support/global-setup.ts)
 * into a private directory under dist/, which its teardown removes; `cleanup` is kept for the callers
 * and has nothing left to do.
 */
export async function buildTestCli(): Promise<{ bin: string; cleanup: () => void }> {
  return { bin: inject("amberBin"), cleanup: () => {} };
}

/**
 * What most CLI suites start from, made when the suite is collected: this run's CLI and a scratch
 * directory with `files` (call it in the `describe` body).
 */
export function cliSuite(files: Record<string, string>): { bin: string; dir: string } {
  return { bin: inject("amberBin"), dir: scratch(files) };
}

/** A scratch directory with the given files (paths relative to it). */
export function scratch(files: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), "amber-cli-"));
  for (const [name, text] of Object.entries(files)) {
    const path = join(dir, name);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
  }
  return dir;
}

/** One message as a Content-Length frame (`amber mcp`'s LSP-style framing). */
export function frame(message: unknown): string {
  const body = JSON.stringify(message);
  return `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

/** The base URL an `amber serve` child prints once it listens (rejects if it exits first). */
export function listeningUrl(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let stderr = "";
    child.stderr!.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(stderr);
      if (match) resolve(match[1]!);
    });
    child.on("exit", () => reject(new Error(`serve exited: ${stderr}`)));
  });
}

/** Result of a finished CLI run. */
export interface RunResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI to completion. */
export function runCli(
  bin: string,
  args: string[],
  options: { cwd?: string; input?: string; env?: Record<string, string> } = {},
): RunResult {
  const result = spawnSync(NODE, [bin, ...args], {
    cwd: options.cwd,
    input: options.input ?? "",
    encoding: "utf8",
    timeout: 45_000,
    env: cleanEnv(options.env),
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** The test environment minus what vitest injects for its own Node (NODE_OPTIONS loaders). */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env, ...extra };
  delete env.NODE_OPTIONS;
  return env;
}

/** A running `amber session` (or any line-oriented JSON-RPC CLI process). */
export class LineClient {
  readonly child: ChildProcessWithoutNullStreams;
  stderr = "";
  #buffer = "";
  #lines: string[] = [];
  #waiters: ((line: string) => void)[] = [];
  #nextId = 1;
  exited: Promise<number | null>;

  /** `node`: the Node that runs the CLI (default {@link NODE}, the machine's). */
  constructor(
    bin: string,
    args: string[],
    options: { cwd?: string; env?: Record<string, string>; node?: string } = {},
  ) {
    this.child = spawn(options.node ?? NODE, [bin, ...args], {
      cwd: options.cwd,
      env: cleanEnv(options.env),
    });
    this.child.stdout.setEncoding("utf8");
    this.child.stdout.on("data", (chunk: string) => this.#feed(chunk));
    this.child.stderr.on("data", (chunk: Buffer) => {
      this.stderr += chunk.toString();
    });
    this.exited = new Promise((resolve) => this.child.on("exit", (code) => resolve(code)));
  }

  #feed(chunk: string): void {
    this.#buffer += chunk;
    let nl = this.#buffer.indexOf("\n");
    while (nl !== -1) {
      const line = this.#buffer.slice(0, nl);
      this.#buffer = this.#buffer.slice(nl + 1);
      const waiter = this.#waiters.shift();
      if (waiter) waiter(line);
      else this.#lines.push(line);
      nl = this.#buffer.indexOf("\n");
    }
  }

  /** Resolves once stderr holds `text` (rejects after `timeoutMs`). */
  stderrHolds(text: string, timeoutMs = 45_000): Promise<void> {
    if (this.stderr.includes(text)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const onData = () => {
        if (!this.stderr.includes(text)) return;
        clearTimeout(timer);
        this.child.stderr.off("data", onData);
        resolve();
      };
      const timer = setTimeout(() => {
        this.child.stderr.off("data", onData);
        reject(new Error(`stderr did not show ${JSON.stringify(text)} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.child.stderr.on("data", onData);
    });
  }

  /** Writes raw text to stdin. */
  write(text: string): void {
    this.child.stdin.write(text);
  }

  /** The next stdout line. */
  nextLine(timeoutMs = 45_000): Promise<string> {
    const queued = this.#lines.shift();
    if (queued !== undefined) return Promise.resolve(queued);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no line within ${timeoutMs} ms; stderr: ${this.stderr}`)),
        timeoutMs,
      );
      this.#waiters.push((line) => {
        clearTimeout(timer);
        resolve(line);
      });
    });
  }

  /** Exactly `bytes` bytes of stdout that follow (a Content-Length body without a trailing newline). */
  async nextBody(bytes: number, timeoutMs = 45_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const pending = [...this.#lines.map((l) => `${l}\n`), this.#buffer].join("");
      if (Buffer.byteLength(pending) >= bytes) {
        const buf = Buffer.from(pending);
        const body = buf.subarray(0, bytes).toString();
        const rest = buf.subarray(bytes).toString();
        this.#lines = [];
        this.#buffer = "";
        this.#feed(rest);
        return body;
      }
      if (Date.now() > deadline) throw new Error(`no body within ${timeoutMs} ms; stderr: ${this.stderr}`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  /** Sends a request and returns the parsed response line. */
  async request(method: string, params?: unknown, timeoutMs?: number): Promise<Record<string, unknown>> {
    const id = this.#nextId++;
    this.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`);
    const response = JSON.parse(await this.nextLine(timeoutMs)) as Record<string, unknown>;
    if (response.id !== id) throw new Error(`expected id ${id}, got ${JSON.stringify(response)}`);
    return response;
  }

  /** `tools/call` shortcut. */
  call(name: string, args: unknown = {}, timeoutMs?: number): Promise<Record<string, unknown>> {
    return this.request("tools/call", { name, arguments: args }, timeoutMs);
  }

  /** Closes stdin and waits for the exit status. */
  async close(): Promise<number | null> {
    this.child.stdin.end();
    return this.exited;
  }

  kill(): void {
    this.child.kill("SIGKILL");
  }
}

/** The jail the sandbox suites share: reads under `jail`, writes under `jail/out`. */
/** An audit log's lines (`--audit-log`), parsed. */
export function auditLines(file: string): Record<string, string>[] {
  return readFileSync(file, "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as Record<string, string>);
}

export const JAIL_FLAGS = ["--sandbox", "--allow-read", "jail", "--allow-write", "jail/out"];

/**
 * `amber session --sandbox --allow-read jail --allow-write jail/out …args` in `dir`: `args` are the
 * suite's own flags and its tools file, in order.
 */
export function jailedSession(
  bin: string,
  dir: string,
  args: string[],
  options: { env?: Record<string, string>; node?: string } = {},
): LineClient {
  return new LineClient(bin, ["session", ...JAIL_FLAGS, ...args], { cwd: dir, ...options });
}
