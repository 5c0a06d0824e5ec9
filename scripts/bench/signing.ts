/**
 * `npm run bench -- signing`: the cost of signing a function call inside workerd (what the Worker
 * pays per invocation), per op, as a ratio to building the signed text (`canonicalRequest`: the body
 * digest and the join, which every signed call pays anyway). Cases: WebCrypto `importKey` + `sign`
 * (one signature as src/functions/signing.ts makes it), `sign` with a key imported once (what a
 * per-secret key cache would leave), and `signatureHeader` with one secret and with two (a
 * rotation's overlap) — the question being whether caching imported keys is worth its state.
 *
 * src/functions/signing.ts is bundled with esbuild into a Worker run by the workerd binary of
 * node_modules (no wrangler: nothing else in the process); each case is one request running N ops,
 * timed from here (inside a Worker the clock stands still between I/O), so the loopback round trip
 * is spread over N. Env: `BENCH_N` (default 20,000), `BENCH_PORT` (default 8841).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as esbuild from "esbuild";

const root = join(import.meta.dirname, "../..");
const N = Number(process.env.BENCH_N ?? 20_000);
const PORT = Number(process.env.BENCH_PORT ?? 8841);

const ENTRY = `
import { canonicalRequest, signatureHeader } from ${JSON.stringify(join(root, "src/functions/signing.ts"))};
const enc = new TextEncoder();
const HMAC = { name: "HMAC", hash: "SHA-256" };
const NEW = "amba_fsig_" + "ab".repeat(32);
const OLD = "amba_fsig_" + "cd".repeat(32);
const request = {
  method: "POST",
  url: "https://fn.example.com/hooks/welcome?src=amba",
  headers: {
    "x-amba-project-id": "0b5c6a8e-52f4-4a57-9d39-3f0a4f7e2f1a", "x-amba-user-id": "2c1f0e4b-8d0a-4f0e-9a51-7d7b5f3f9c11",
    "x-amba-user-email": "user@example.com", "x-amba-function": "welcome", "x-amba-function-version": "3",
    "x-amba-request-id": "6f9d3c2e-1b4a-4c8d-a2f7-5e0b9d8c7a61",
  },
  body: JSON.stringify({ user_id: "u-1", template: "full", tags: ["a", "b"] }),
};
const CASES = {
  canonical: () => canonicalRequest(request, 1_700_000_000),
  importSign: async (text) =>
    crypto.subtle.sign("HMAC", await crypto.subtle.importKey("raw", enc.encode(NEW), HMAC, false, ["sign"]), text),
  sign: (text, key) => crypto.subtle.sign("HMAC", key, text),
  header1: () => signatureHeader(request, [NEW]),
  header2: () => signatureHeader(request, [NEW, OLD]),
};
export default {
  async fetch(req) {
    const url = new URL(req.url);
    const run = CASES[url.searchParams.get("case")];
    const n = Number(url.searchParams.get("n"));
    const text = enc.encode(await canonicalRequest(request, 1_700_000_000));
    const key = await crypto.subtle.importKey("raw", enc.encode(NEW), HMAC, false, ["sign"]);
    for (let i = 0; i < n; i++) await run(text, key);
    return new Response("ok");
  },
};
`;

const dir = mkdtempSync(join(tmpdir(), "amba-bench-signing-"));
try {
  writeFileSync(join(dir, "entry.js"), ENTRY);
  await esbuild.build({
    entryPoints: [join(dir, "entry.js")],
    bundle: true,
    format: "esm",
    platform: "neutral",
    outfile: join(dir, "worker.js"),
    logLevel: "error",
  });
  writeFileSync(
    join(dir, "config.capnp"),
    `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [(name = "main", worker = .bench)],
  sockets = [(name = "http", address = "127.0.0.1:${PORT}", http = (), service = "main")],
);
const bench :Workerd.Worker = (modules = [(name = "worker.js", esModule = embed "worker.js")], compatibilityDate = "2025-09-01");
`,
  );
  const workerd = spawn(join(root, "node_modules/.bin/workerd"), ["serve", "config.capnp"], {
    cwd: dir,
    stdio: ["ignore", "inherit", "inherit"],
  });
  try {
    const perOp = async (name: string, n: number): Promise<number> => {
      const start = performance.now();
      const res = await fetch(`http://127.0.0.1:${PORT}/?case=${name}&n=${n}`);
      if ((await res.text()) !== "ok") throw new Error(`${name}: ${res.status}`);
      return ((performance.now() - start) * 1000) / n;
    };
    for (let tries = 0; ; tries++) {
      try {
        await perOp("canonical", 1);
        break;
      } catch (error) {
        if (tries > 50) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    const cases: Array<[string, string]> = [
      ["canonical", "`canonicalRequest` (baseline)"],
      ["importSign", "`importKey` + `sign` (one signature, as signed)"],
      ["sign", "`sign`, key imported once (with a key cache)"],
      ["header1", "`signatureHeader`, 1 secret"],
      ["header2", "`signatureHeader`, 2 secrets (overlap)"],
    ];
    for (const [name] of cases) await perOp(name, N / 10); // warm-up
    // Three rounds, interleaved; the median of each case.
    const runs = new Map<string, number[]>(cases.map(([name]) => [name, []]));
    for (let round = 0; round < 3; round++) {
      for (const [name] of cases) runs.get(name)?.push(await perOp(name, N));
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[1] as number;
    const baseline = median(runs.get("canonical") as number[]);
    for (const [name, label] of cases) {
      const us = median(runs.get(name) as number[]);
      process.stdout.write(
        `${label.padEnd(56)} ${us.toFixed(2).padStart(7)} µs/op  ${(us / baseline).toFixed(1)}×\n`,
      );
    }
  } finally {
    workerd.kill("SIGTERM");
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
