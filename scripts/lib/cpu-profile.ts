/**
 * CPU profiles of a Worker under `wrangler dev`, over the DevTools protocol of its inspector port
 * (`wrangler dev --inspector-port`): connect, sample while a workload runs, and reduce the profile
 * to sampled CPU time by category and by function, with positions mapped back to source files
 * through the bundle's source map. Used by `npm run bench -- cpu`.
 */
import { readdirSync, readFileSync } from "node:fs";
import { SourceMap } from "node:module";
import { relative } from "node:path";
import { fileURLToPath } from "node:url";

/** Where a profile node's function is (DevTools `Runtime.CallFrame`). */
export interface CallFrame {
  functionName: string;
  scriptId: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}

/** `Profiler.stop`'s profile (the fields used here). */
export interface CpuProfile {
  nodes: { id: number; callFrame: CallFrame; children?: number[] }[];
  samples: number[];
  timeDeltas: number[];
}

/** One DevTools protocol session with a Worker's isolate. */
export class Inspector {
  #next = 1;
  readonly #pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  /** Source maps of the scripts the isolate has parsed, by script id. */
  readonly #maps = new Map<string, { map: SourceMap; url: URL } | null>();
  readonly #sourceMapUrls = new Map<string, { url: string; sourceMapURL: string }>();

  readonly #socket: WebSocket;

  private constructor(socket: WebSocket) {
    this.#socket = socket;
    socket.addEventListener("message", (event) => {
      const message = JSON.parse(String(event.data)) as {
        id?: number;
        method?: string;
        params?: { scriptId: string; url: string; sourceMapURL?: string };
        result?: unknown;
        error?: { message: string };
      };
      if (message.method === "Debugger.scriptParsed" && message.params?.sourceMapURL) {
        const { scriptId, url, sourceMapURL } = message.params;
        this.#sourceMapUrls.set(scriptId, { url, sourceMapURL });
      }
      const waiting = message.id === undefined ? undefined : this.#pending.get(message.id);
      if (!waiting || message.id === undefined) return;
      this.#pending.delete(message.id);
      if (message.error) waiting.reject(new Error(message.error.message));
      else waiting.resolve(message.result);
    });
  }

  /** The first Worker listed by the inspector proxy on `port` (one Worker per `wrangler dev`). */
  static async connect(host: string, port: number): Promise<Inspector> {
    const targets = (await (await fetch(`http://${host}:${port}/json/list`)).json()) as {
      webSocketDebuggerUrl: string;
    }[];
    const target = targets[0];
    if (!target) throw new Error(`no Worker behind the inspector on port ${port}`);
    // The proxy wants an `Origin` it knows (a loopback one); Node's WebSocket takes undici's init.
    const init = { headers: { origin: `http://${host}` } } as unknown as string[];
    const socket = new WebSocket(target.webSocketDebuggerUrl, init);
    await new Promise((resolve, reject) => {
      socket.addEventListener("open", resolve, { once: true });
      socket.addEventListener("error", () => reject(new Error(`inspector on port ${port} refused`)), {
        once: true,
      });
    });
    const inspector = new Inspector(socket);
    // The parsed scripts (and their source maps) are announced on Debugger.enable; the debugger is
    // off again before anything is measured.
    await inspector.send("Debugger.enable");
    await inspector.send("Debugger.disable");
    return inspector;
  }

  send<T = unknown>(method: string, params?: unknown): Promise<T> {
    const id = this.#next++;
    return new Promise<T>((resolve, reject) => {
      this.#pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.#socket.send(JSON.stringify({ id, method, params }));
    });
  }

  /** Sample every `intervalUs` while `workload` runs; the profile. */
  async profile(intervalUs: number, workload: () => Promise<void>): Promise<CpuProfile> {
    await this.send("Profiler.enable");
    await this.send("Profiler.setSamplingInterval", { interval: intervalUs });
    await this.send("Profiler.start");
    const failure = await workload().then(
      () => null,
      (err: unknown) => err,
    );
    const { profile } = await this.send<{ profile: CpuProfile }>("Profiler.stop");
    await this.send("Profiler.disable");
    if (failure) throw failure;
    return profile;
  }

  /** `file:line` of a call frame in the sources (the bundle position when there is no map). */
  sourceOf(frame: CallFrame, root: string): string {
    const mapped = this.#mapOf(frame.scriptId);
    const entry = mapped?.map.findEntry(frame.lineNumber, frame.columnNumber);
    if (mapped && entry && "originalSource" in entry && entry.originalSource) {
      const source = new URL(entry.originalSource, mapped.url).href;
      return `${shortPath(source, root)}:${entry.originalLine + 1}`;
    }
    return frame.url ? `${shortPath(frame.url, root)}:${frame.lineNumber + 1}` : "";
  }

  #mapOf(scriptId: string): { map: SourceMap; url: URL } | null {
    if (this.#maps.has(scriptId)) return this.#maps.get(scriptId) ?? null;
    let map: { map: SourceMap; url: URL } | null = null;
    const script = this.#sourceMapUrls.get(scriptId);
    if (script) {
      try {
        const url = new URL(script.sourceMapURL, script.url);
        const text =
          url.protocol === "data:"
            ? Buffer.from(url.pathname.slice(url.pathname.indexOf(",") + 1), "base64").toString()
            : readFileSync(fileURLToPath(url), "utf8");
        map = { map: new SourceMap(JSON.parse(text)), url };
      } catch {
        map = null;
      }
    }
    this.#maps.set(scriptId, map);
    return map;
  }

  close(): void {
    this.#socket.close();
  }
}

/** A source path relative to the project (`node_modules/<package>/…` as `<package>/…`). */
function shortPath(source: string, root: string): string {
  const path = source.startsWith("file:") ? fileURLToPath(source) : source;
  const modules = path.lastIndexOf("node_modules/");
  if (modules >= 0) {
    const inPackage = path.slice(modules + "node_modules/".length);
    // drizzle-orm's published maps name its repository's `src/` one level above the package.
    return inPackage.startsWith("src/") ? `drizzle-orm/${inPackage}` : inPackage;
  }
  return path.startsWith("/") ? relative(root, path) : path;
}

/** V8's pseudo-frames: not JavaScript the Worker runs. */
const IDLE = "(idle)";
const PROGRAM = "(program)";
const GC = "(garbage collector)";
const ROOT = "(root)";

/** A profile reduced to milliseconds: JavaScript, `(program)` (native, unattributed), GC, idle. */
export interface CpuTimes {
  jsMs: number;
  programMs: number;
  gcMs: number;
  idleMs: number;
  /** Self time per function (`file:line function`), JavaScript only, ms. */
  self: Map<string, number>;
  /** Time with the function anywhere on the (synchronous) stack, for the labels `inclusive` picks. */
  total: Map<string, number>;
}

/**
 * Sum the profile's samples per category and function, each standing for `intervalUs`. Not the
 * gaps between samples, as DevTools counts: workerd samples its isolate only while it runs, so a
 * gap that follows an idle stretch (waiting for the next request or the database) would bill the
 * wait to whatever ran next.
 */
export function cpuTimes(
  profile: CpuProfile,
  intervalUs: number,
  label: (frame: CallFrame) => string,
  inclusive: (label: string) => boolean = () => false,
): CpuTimes {
  const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const parents = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);
  const ms = intervalUs / 1000;
  const times: CpuTimes = { jsMs: 0, programMs: 0, gcMs: 0, idleMs: 0, self: new Map(), total: new Map() };
  const labels = new Map<number, string>();
  const labelOf = (id: number) => {
    let known = labels.get(id);
    if (known === undefined) {
      known = label(frames.get(id) as CallFrame);
      labels.set(id, known);
    }
    return known;
  };
  for (const sample of profile.samples) {
    const frame = frames.get(sample);
    const name = frame?.functionName ?? ROOT;
    if (name === IDLE) times.idleMs += ms;
    else if (name === PROGRAM || name === ROOT) times.programMs += ms;
    else if (name === GC) times.gcMs += ms;
    else {
      times.jsMs += ms;
      const key = labelOf(sample);
      times.self.set(key, (times.self.get(key) ?? 0) + ms);
      const seen = new Set<string>();
      for (let id: number | undefined = sample; id !== undefined; id = parents.get(id)) {
        const name = frames.get(id)?.functionName;
        if (name === ROOT || name === undefined) break;
        const key = labelOf(id);
        if (inclusive(key) && !seen.has(key)) {
          seen.add(key);
          times.total.set(key, (times.total.get(key) ?? 0) + ms);
        }
      }
    }
  }
  return times;
}

/** The ids of `pid`'s descendants whose command is `name` (Linux `/proc`). */
export function descendantsNamed(pid: number, name: string): number[] {
  const parents = new Map<number, number>();
  const names = new Map<number, string>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // "pid (comm) state ppid …": comm may hold spaces and parentheses, so split at the last ")".
      const close = stat.lastIndexOf(")");
      names.set(Number(entry), stat.slice(stat.indexOf("(") + 1, close));
      parents.set(Number(entry), Number(stat.slice(close + 2).split(" ")[1]));
    } catch {}
  }
  const under = (p: number): boolean => {
    const parent = parents.get(p);
    return parent === pid || (parent !== undefined && parent > 1 && under(parent));
  };
  return [...names].filter(([p, n]) => n === name && under(p)).map(([p]) => p);
}

/**
 * CPU time `pid` has run so far, all threads, in ms: the kernel's per-thread run time
 * (`/proc/<pid>/task/<tid>/schedstat`, ns), unaffected by time spent waiting for a core.
 */
export function processCpuMs(pid: number): number {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
    } catch {}
  }
  return ns / 1e6;
}
