/**
 * What `session`, `mcp` and `serve` share: the permission options, resolving the entry, discovering
 * its tools, the audit log and the tool host (a sandboxed child process, or a worker thread when no
 * permission option is given), plus the `tool:<name>` audit line per call.
 */
import { readFileSync, statSync, watch } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { printable } from "../printable.ts";
import { type AuditSink, NO_AUDIT, openAuditLog } from "./audit-log.ts";
import { CliError, type OptionSpec } from "./command.ts";
import { compileToolFile } from "./compile.ts";
import { discoverTools, type ToolSchema } from "./export-tools.ts";
import {
  buildPolicy,
  canonicalPath,
  decide,
  isUnrestricted,
  isWithin,
  PermissionDeniedError,
  type PermissionFlags,
  type Policy,
} from "./permissions.ts";
import { type CallOutcome, type CancelSignal, ToolProcess } from "./sandbox/tool-process.ts";
import { checkArguments, compileResultCheck } from "./validate-args.ts";

/** The permission options every command takes. */
export const PERMISSION_OPTIONS: Record<string, OptionSpec> = {
  sandbox: { type: "boolean", description: "deny file, network, environment and process access" },
  "allow-read": {
    type: "list",
    value: "[PATH]",
    optionalValue: true,
    description: "grant reading PATH (a directory is a jail; no PATH: every file)",
  },
  "allow-write": {
    type: "list",
    value: "[PATH]",
    optionalValue: true,
    description: "grant writing PATH (no PATH: every file)",
  },
  "allow-net": {
    type: "list",
    value: "[HOST]",
    optionalValue: true,
    description: "grant network access to HOST[:PORT] (no HOST: any)",
  },
  "allow-listen": {
    type: "list",
    value: "[HOST]",
    optionalValue: true,
    description: "grant listening on HOST[:PORT] only (no HOST: any)",
  },
  "allow-env": {
    type: "list",
    value: "[NAME]",
    optionalValue: true,
    description: "grant reading environment variable NAME (no NAME: all)",
  },
  "allow-run": {
    type: "list",
    value: "[CMD]",
    optionalValue: true,
    description: "grant running CMD (no CMD: any program)",
  },
  "deny-fs": { type: "boolean", description: "deny file access" },
  "deny-net": { type: "boolean", description: "deny network access" },
  "deny-env": { type: "boolean", description: "deny environment access" },
  "deny-run": { type: "boolean", description: "deny running processes" },
  "permission-policy": {
    type: "string",
    value: "FILE",
    aliases: ["policy"],
    description: "JSON policy {permissions:{…}}",
  },
  "audit-log": { type: "string", value: "FILE", description: "append one JSON line per permission check" },
};

/** The options of the commands that call tools. */
export const TOOL_SERVER_OPTIONS: Record<string, OptionSpec> = {
  ...PERMISSION_OPTIONS,
  "isolate-per-call": { type: "boolean", description: "fresh module instance for every tools/call" },
  timeout: {
    type: "number",
    value: "MS",
    description: "end a tool call after MS milliseconds (default 60000; 0: never)",
  },
  "max-memory": { type: "number", value: "MB", description: "memory limit of the tool process" },
  typed: {
    type: "boolean",
    description: "list and validate JSON Schemas from TypeScript types (default in mcp, serve)",
  },
};

/** The options of the commands whose schemas a model reads (`mcp`, `serve`): typed by default. */
export const MODEL_FACING_OPTIONS: Record<string, OptionSpec> = {
  ...TOOL_SERVER_OPTIONS,
  watch: {
    type: "boolean",
    description: "reload when the tool file changes (mcp: notifications/tools/list_changed)",
  },
  untyped: { type: "boolean", description: 'list the contract\'s {"type":"object"} schemas, no validation' },
};

/** Parsed options of a tool-serving command. */
export interface ToolServerArgs extends PermissionFlags {
  auditLog?: string;
  isolatePerCall?: boolean;
  timeout?: number;
  maxMemory?: number;
  typed?: boolean;
  untyped?: boolean;
  watch?: boolean;
}

/**
 * `AMBER_REPLY_ORDER_GRACE_MS`: how long a stdio reply waits for the replies to earlier requests
 * (unset: the loop's default; `0`: every reply leaves as soon as it is ready, for hosts that match
 * replies by id).
 */
export function replyOrderGraceMs(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const raw = env.AMBER_REPLY_ORDER_GRACE_MS?.trim();
  const value = raw ? Number(raw) : Number.NaN;
  return Number.isFinite(value) && value >= 0 ? value : undefined;
}

/** Default per-call timeout: a forgotten promise cannot hold a session forever. */
export const DEFAULT_TIMEOUT_MS = 60_000;

/** The package version, inlined by the build. */
declare const __AMBER_VERSION__: string | undefined;
export const AMBER_VERSION = typeof __AMBER_VERSION__ === "string" ? __AMBER_VERSION__ : "0.0.0-dev";

/** The server identity reported by `initialize`. */
export const SERVER_INFO = { name: "amber", version: AMBER_VERSION };

/** A file next to the bundled CLI (`dist/cli/`). */
export const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));

/** A loaded tool file, ready to list and call. */
export interface ToolServer {
  entry: string;
  /** The tools as `session` and `GET /tools` list them (name, description, input schema). */
  readonly tools: ToolSchema[];
  /** The tools as MCP lists them: {@link tools} plus `outputSchema` where the return type gives one. */
  readonly mcpTools: ListedTool[];
  policy: Policy;
  audit: AuditSink;
  has(name: string): boolean;
  /** A message when `value` breaks the output schema of tool `name` (none declared: undefined). */
  checkResult(name: string, value: unknown): string | undefined;
  /** True when tool `name` is listed with an `outputSchema` (typed, an object return type). */
  declaresOutput(name: string): boolean;
  /**
   * Calls a tool and writes its `tool:<name>` audit line (Deny when it failed, is unknown or its
   * arguments break the typed schema — `invalid`). Calls run one at a time in the order they were
   * made, each audit line after that call's checks.
   */
  call(name: string, args: unknown, signal?: CancelSignal): Promise<ServerCallOutcome>;
  /** Loads the tool file again (tools, schemas, a fresh tool host); throws if it no longer loads. */
  reload(): Promise<void>;
  close(): void;
}

/** A tool as MCP lists it. */
export type ListedTool = ToolSchema & { outputSchema?: Record<string, unknown> };

/** A call's outcome; `invalid`: refused before the tool ran, the arguments break its schema. */
export type ServerCallOutcome = CallOutcome | { ok: false; error: string; invalid: true };

/** Resolves `file` and checks it is a regular file, with the contract's messages. */
export function resolveEntry(command: string, file: string | undefined): string {
  if (!file) throw new CliError(`amber ${command}: missing <file>`, 2);
  const entry = resolve(file);
  let isFile: boolean;
  try {
    isFile = statSync(entry).isFile();
  } catch {
    throw new CliError(`amber ${command}: entry file not found: ${file}`);
  }
  if (!isFile) throw new CliError(`amber ${command}: entry must be a file: ${file}`);
  return entry;
}

/** A tool file's tools as listed, and how each takes its arguments. */
export interface LoadedTools {
  tools: ToolSchema[];
  /** Positional parameter names per tool (tools absent here take the one arguments object). */
  params: Map<string, (string | null)[]>;
  /** Output schemas from return types (typed only; tools absent here declare none). */
  outputs: Map<string, Record<string, unknown>>;
  /** Whether the listed schemas are typed (and calls validated against them). */
  typed: boolean;
}

/**
 * Whether every tool's declaration visibly takes nothing or one destructured object
 * (`function name({ … })`, `function name()`): then untyped serving needs no compiler pass.
 */
function allTakeOneObject(entry: string, tools: ToolSchema[]): boolean {
  let source: string;
  try {
    source = readFileSync(entry, "utf8");
  } catch {
    return false;
  }
  return tools.every((tool) => {
    const name = tool.name.replace(/[$]/g, "\\$");
    return new RegExp(`function\\s+${name}\\s*(<[^(]*>)?\\s*\\(\\s*[{)]`).test(source);
  });
}

/**
 * Loads the tool list and the tools' signatures: schemas typed when `typed`, positional parameter
 * names always, from the files `canRead` lets the compiler see. Warnings (unmappable parameters, no
 * TypeScript) go to stderr.
 */
export async function loadTools(
  command: string,
  entry: string,
  typed: boolean,
  canRead?: (path: string) => boolean,
): Promise<LoadedTools> {
  let discovered: ReturnType<typeof discoverTools>;
  try {
    discovered = discoverTools(entry);
  } catch (error) {
    throw new CliError(`amber ${command}: ${(error as Error).message}`);
  }
  const params = new Map<string, (string | null)[]>();
  const outputs = new Map<string, Record<string, unknown>>();
  const untyped = { tools: discovered.tools, params, outputs, typed: false };
  if (!typed && allTakeOneObject(entry, discovered.tools)) return untyped;
  const { analyzeToolFile } = await import("./typed-schema.ts");
  let analysis: Awaited<ReturnType<typeof analyzeToolFile>>;
  try {
    analysis = await analyzeToolFile(
      entry,
      discovered.tools.map((t) => t.name),
      AMBER_VERSION,
      canRead,
    );
  } catch (error) {
    process.stderr.write(
      `amber ${command}: warning: ${printable((error as Error).message)}; schemas stay {"type":"object"} and positional parameters are not mapped\n`,
    );
    return untyped;
  }
  for (const warning of analysis.warnings)
    process.stderr.write(`amber ${command}: warning: ${printable(warning)}\n`);
  for (const [name, signature] of Object.entries(analysis.signatures))
    if (signature.params) params.set(name, signature.params);
  if (!typed || discovered.source === "manifest") return untyped;
  const tools = discovered.tools.map((tool) => {
    const { inputSchema, outputSchema } = analysis.signatures[tool.name] ?? {};
    if (outputSchema) outputs.set(tool.name, outputSchema);
    return inputSchema ? { ...tool, inputSchema } : tool;
  });
  return { tools, params, outputs, typed: true };
}

/**
 * Whether `resource` is in a package installed where the entry's imports find packages: the
 * `node_modules` of its directory or of one above (not any `node_modules` on the disk, whose
 * caches and other projects' files are no more the tool's than their neighbours).
 */
function isInstalledPackage(resource: string, entryDir: string): boolean {
  for (let dir = entryDir; ; dir = dirname(dir)) {
    if (isWithin(resource, join(dir, "node_modules"))) return true;
    if (dirname(dir) === dir) return false;
  }
}

/**
 * Under a read restriction, the bundle may read the entry's own directory tree and installed
 * packages; anything else needs a read grant, like a read at run time would. Under any other
 * restriction, files stay open but what no file grant reaches at run time (a process's environment
 * under an environment restriction, its memory) is refused to the bundle as well: esbuild inherits
 * the CLI's environment, and `import env from "/proc/self/environ" with { type: "text" }` read it.
 */
function checkBundleInput(policy: Policy, audit: AuditSink, entry: string, path: string): void {
  if (isUnrestricted(policy)) return;
  const resource = canonicalPath(path);
  if (!policy.denied.includes("fs.read")) {
    if (decide(policy, "FileSystem", "Read", resource) === "Allow") return;
    audit.record({ kind: "FileSystem", action: "Read", resource, decision: "Deny" });
    throw new PermissionDeniedError("FileSystem", "Read", resource);
  }
  const entryDir = canonicalPath(dirname(entry));
  if (isWithin(resource, entryDir) || isInstalledPackage(resource, entryDir)) return;
  const decision = decide(policy, "FileSystem", "Read", resource);
  audit.record({ kind: "FileSystem", action: "Read", resource, decision });
  if (decision === "Deny") throw new PermissionDeniedError("FileSystem", "Read", resource);
}

/** Opens the tool file for `command`: policy, audit log, tools and the (lazily started) tool process. */
export async function openToolServer(command: string, file: string | undefined, args: ToolServerArgs) {
  const entry = resolveEntry(command, file);
  const manifest = resolve(entry, "..", "tools.json");
  let policy: Policy;
  try {
    policy = buildPolicy(args, process.cwd(), [entry, manifest]);
  } catch (error) {
    throw new CliError(`amber ${command}: ${(error as Error).message}`);
  }
  const typed = args.typed === true && args.untyped !== true;
  // Per load: one stable MCP list (its rendering is cached by identity) and each output schema
  // compiled once into its check.
  const index = (loaded: LoadedTools) => ({
    loaded,
    names: new Set(loaded.tools.map((t) => t.name)),
    schemas: new Map(loaded.tools.map((t) => [t.name, t.inputSchema])),
    listed: loaded.tools.map((t): ListedTool => {
      const outputSchema = loaded.outputs.get(t.name);
      return outputSchema ? { ...t, outputSchema } : t;
    }),
    resultChecks: new Map([...loaded.outputs].map(([name, schema]) => [name, compileResultCheck(schema)])),
  });
  let audit: AuditSink;
  try {
    audit = args.auditLog ? openAuditLog(args.auditLog) : NO_AUDIT;
  } catch (error) {
    throw new CliError(`amber ${command}: ${(error as Error).message}`);
  }
  // The types the schemas come from are read under the policy, like the bundle's inputs.
  const canRead = (path: string) => {
    try {
      checkBundleInput(policy, audit, entry, path);
      return true;
    } catch {
      return false;
    }
  };
  let current = index(await loadTools(command, entry, typed, canRead));
  let compiled: Promise<string> | undefined;
  const startRunner = () =>
    new ToolProcess({
      entry,
      manifest,
      policy,
      audit,
      isolatePerCall: args.isolatePerCall === true,
      timeoutMs: args.timeout ?? DEFAULT_TIMEOUT_MS,
      maxMemoryMb: args.maxMemory,
      hostScript: here("./tool-host.mjs"),
      policyFile: args.permissionPolicy === undefined ? undefined : resolve(args.permissionPolicy),
      compile: () => {
        compiled ??= compileToolFile(entry, {
          amberMcpPath: here("./amber-mcp.mjs"),
          cacheKey: AMBER_VERSION,
          checkInput: (path) => checkBundleInput(policy, audit, entry, path),
        });
        return compiled;
      },
    });
  let runner = startRunner();
  let queue: Promise<unknown> = Promise.resolve();
  const server: ToolServer = {
    entry,
    get tools() {
      return current.loaded.tools;
    },
    get mcpTools() {
      return current.listed;
    },
    policy,
    audit,
    has: (name) => current.names.has(name),
    checkResult: (name, value) => current.resultChecks.get(name)?.(value),
    declaresOutput: (name) => current.resultChecks.has(name),
    call(name, callArgs, signal) {
      const done = queue.then(async (): Promise<ServerCallOutcome> => {
        const { loaded, names, schemas } = current;
        const problem = loaded.typed ? checkArguments(schemas.get(name) ?? {}, callArgs) : undefined;
        const outcome: ServerCallOutcome = !names.has(name)
          ? { ok: false, error: `unknown tool: ${name}` }
          : problem !== undefined
            ? { ok: false, error: `invalid arguments for \`${name}\`: ${problem}`, invalid: true }
            : await runner.call(name, callArgs, loaded.params.get(name), signal);
        try {
          audit.record({
            kind: "Process",
            action: "Execute",
            resource: `tool:${name}`,
            decision: outcome.ok ? "Allow" : "Deny",
          });
        } catch (error) {
          // No answer goes out unaudited (an audit log on a full disk); the session goes on.
          return { ok: false, error: `audit log could not be written: ${(error as Error).message}` };
        }
        return outcome;
      });
      queue = done.catch(() => undefined);
      return done;
    },
    async reload() {
      const next = index(await loadTools(command, entry, typed, canRead));
      // The module changed: a fresh host loads the new code (state starts over, as on a restart).
      runner.close();
      compiled = undefined;
      current = next;
      runner = startRunner();
      runner.warm();
    },
    close() {
      runner.close();
      audit.close();
    },
  };
  return { server, warm: () => runner.warm() };
}

/**
 * `--watch`: reloads `server` when its tool file (or the `tools.json` next to it) changes and then
 * calls `onChange`. A file that no longer loads keeps the previous tools (a warning on stderr).
 * Returns a function that stops watching.
 */
export function watchToolFile(server: ToolServer, command: string, onChange: () => void): () => void {
  const dir = dirname(server.entry);
  const names = new Set([basename(server.entry), "tools.json"]);
  let timer: NodeJS.Timeout | undefined;
  let reloading: Promise<void> = Promise.resolve();
  const watcher = watch(dir, (_event, filename) => {
    if (filename !== null && !names.has(String(filename))) return;
    // Editors write in several steps: settle first.
    clearTimeout(timer);
    timer = setTimeout(() => {
      reloading = reloading.then(async () => {
        try {
          await server.reload();
          onChange();
        } catch (error) {
          process.stderr.write(
            `amber ${command}: warning: reload failed, keeping the previous tools: ${printable((error as Error).message)}\n`,
          );
        }
      });
    }, WATCH_SETTLE_MS);
  });
  watcher.on("error", () => {});
  return () => {
    clearTimeout(timer);
    watcher.close();
  };
}

/** How long a watched file must stay quiet before it is reloaded. */
const WATCH_SETTLE_MS = 100;

const closeOnStdoutFailure: (() => void)[] = [];

/** Has `close` run (tool processes, audit log) before the process ends because stdout failed. */
export function closeIfStdoutFails(close: () => void): void {
  closeOnStdoutFailure.push(close);
}

/**
 * Installed once, before any command runs: when stdout fails — the host or pipe stopped reading
 * (EPIPE) — no output can reach anyone, so the registered closers run and the process exits quietly
 * with 0, as on EOF. Any other stdout error is one `error:` line on stderr and exit 1. Never Node's
 * unhandled-`error` stack trace.
 */
export function guardStdout(command: string): void {
  process.stdout.on("error", (error: NodeJS.ErrnoException) => {
    for (const close of closeOnStdoutFailure.splice(0)) {
      try {
        close();
      } catch {}
    }
    const gone = error.code === "EPIPE" || error.code === "ERR_STREAM_DESTROYED";
    if (!gone) process.stderr.write(`error: amber ${command}: stdout: ${printable(error.message)}\n`);
    process.exit(gone ? 0 : 1);
  });
}

/** Writes to stdout, waiting for `drain` when the pipe is full. */
export function writeStdout(data: string): Promise<void> | undefined {
  if (process.stdout.write(data)) return;
  return new Promise((resolve) => process.stdout.once("drain", () => resolve()));
}
