/**
 * The measuring half of the CPU benchmarks (`npm run bench -- cpu`, `… cpuworst`): one request type
 * against one Worker under `wrangler dev`, measured two ways — the kernel run time of the workerd
 * process that runs the isolate (no profiler attached; the upper bound) and the V8 sampling
 * profiler's JavaScript time in the isolate (the lower bound) — per request. A case may have a
 * `prepare` step (say, a change that makes the next request cold): it runs before each request,
 * outside the measured window, and the case is then measured request by request.
 */
import { readFileSync } from "node:fs";
import { BENCH_HOST } from "./bench-app.ts";
import {
  type CallFrame,
  type CpuTimes,
  cpuTimes,
  descendantsNamed,
  type Inspector,
  processCpuMs,
} from "./cpu-profile.ts";

export interface CpuCase {
  worker: string;
  /** The checkout the Worker's sources are in (paths in the profile are relative to it). */
  root: string;
  name: string;
  inspector: Inspector;
  /** The workerd that runs the Worker's isolate, and `wrangler dev`'s proxy in front of it. */
  runtime: number;
  proxy: number;
  run: () => Promise<void>;
  /** Run before each request, not measured. */
  prepare?: () => Promise<void>;
}

export interface Cpu {
  runtimeMs: number;
  proxyMs: number;
  wallMs: number;
}

/** `wrangler dev`'s two workerd processes for `port`: the proxy listens on it, the runtime not. */
export function workerdOf(wranglerPid: number, port: number): { runtime: number; proxy: number } {
  const pids = descendantsNamed(wranglerPid, "workerd");
  const listens = (pid: number) =>
    readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(`entry=${BENCH_HOST}:${port}\0`);
  const proxy = pids.find(listens);
  const runtime = pids.find((pid) => !listens(pid));
  if (pids.length !== 2 || proxy === undefined || runtime === undefined) {
    throw new Error(`expected wrangler dev's proxy and runtime workerd for port ${port}, found ${pids}`);
  }
  return { runtime, proxy };
}

/**
 * `n` requests of `c`, with the CPU time both workerd processes spent meanwhile (no profiler), per
 * request: over the whole loop, or summed over each request's own window when `c` prepares.
 */
export async function measureCpu(c: CpuCase, n: number): Promise<Cpu> {
  const total = { runtimeMs: 0, proxyMs: 0, wallMs: 0 };
  const windows = c.prepare ? n : 1;
  for (let w = 0; w < windows; w++) {
    await c.prepare?.();
    const runtime = processCpuMs(c.runtime);
    const proxy = processCpuMs(c.proxy);
    const started = performance.now();
    for (let i = 0; i < n / windows; i++) await c.run();
    total.wallMs += performance.now() - started;
    total.runtimeMs += processCpuMs(c.runtime) - runtime;
    total.proxyMs += processCpuMs(c.proxy) - proxy;
  }
  return { wallMs: total.wallMs / n, runtimeMs: total.runtimeMs / n, proxyMs: total.proxyMs / n };
}

const labelOf = (c: CpuCase) => (frame: CallFrame) =>
  `${c.inspector.sourceOf(frame, c.root) || "(native)"} ${frame.functionName || "(anonymous)"}`;

/** `n` requests of `c` under the sampling profiler (one profile per request when `c` prepares). */
export async function profileCase(c: CpuCase, n: number, sampleUs: number): Promise<CpuTimes> {
  const own = (name: string) => name.startsWith("src/");
  if (!c.prepare) {
    const sampled = await c.inspector.profile(sampleUs, async () => {
      for (let i = 0; i < n; i++) await c.run();
    });
    return cpuTimes(sampled, sampleUs, labelOf(c), own);
  }
  const sum: CpuTimes = { jsMs: 0, programMs: 0, gcMs: 0, idleMs: 0, self: new Map(), total: new Map() };
  for (let i = 0; i < n; i++) {
    await c.prepare();
    const one = cpuTimes(await c.inspector.profile(sampleUs, c.run), sampleUs, labelOf(c), own);
    sum.jsMs += one.jsMs;
    sum.programMs += one.programMs;
    sum.gcMs += one.gcMs;
    sum.idleMs += one.idleMs;
    for (const [into, from] of [
      [sum.self, one.self],
      [sum.total, one.total],
    ] as const) {
      for (const [k, ms] of from) into.set(k, (into.get(k) ?? 0) + ms);
    }
  }
  return sum;
}
