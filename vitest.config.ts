import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

/**
 * Two projects: `worker` runs inside workerd against the embedded database (started once by the
 * global setup, reached over the same Neon HTTP protocol production uses); `node` covers the
 * runtime-neutral protocol core, the CLI and the dev tooling.
 */
export default defineConfig({
  test: {
    // The most files running at once over both projects (each project caps its own below).
    maxWorkers: 4,
    projects: [
      {
        plugins: [
          cloudflareTest(({ inject }) => ({
            wrangler: { configPath: "./wrangler.toml" },
            // The TypeScript sources, not wrangler.toml's `main` (the build output in dist/edge).
            main: "./src/worker/index.ts",
            miniflare: {
              bindings: {
                DATABASE_URL: inject<string>("databaseUrl"),
                LOCAL_DB_URL: inject<string>("localDbUrl"),
                FUNCTION_URL_POLICY: "dev",
                // 2 MiB instead of 500: test/worker/data/storage-quota.test.ts passes it with one
                // filler table; every other file's projects stay far below (a table is ≈ 32 KiB).
                STORAGE_QUOTA_MIB: "2",
              },
              // wrangler.toml's rate limits, but the caller tiers and the per-app budget at a tenth
              // (600, 60, 6,000 and 6,000/min instead of 6,000, 600, 60,000 and 60,000): the tests that exhaust one (batches charged per
              // call) then stay well inside one window. The control plane's per-developer limit at a
              // third (400 instead of 1,200): test/worker/cold-audit.test.ts spends it through the
              // binding (≈ 2 ms a call here), and the busiest test developer (hostile.test.ts's
              // admin) makes ≈ 250 requests.
              ratelimits: {
                RATE_LIMITER: { namespace_id: "1001", simple: { limit: 600, period: 60 } },
                RATE_LIMITER_LOW: { namespace_id: "1004", simple: { limit: 60, period: 60 } },
                RATE_LIMITER_HIGH: { namespace_id: "1005", simple: { limit: 6000, period: 60 } },
                AUTH_RATE_LIMITER: { namespace_id: "1002", simple: { limit: 10, period: 60 } },
                AUTH_IP_RATE_LIMITER: { namespace_id: "1003", simple: { limit: 60, period: 60 } },
                ADMIN_RATE_LIMITER: { namespace_id: "1006", simple: { limit: 400, period: 60 } },
                PROJECT_RATE_LIMITER: { namespace_id: "1007", simple: { limit: 6000, period: 60 } },
                CREDENTIAL_RATE_LIMITER: { namespace_id: "1008", simple: { limit: 100, period: 60 } },
              },
            },
          })),
        ],
        test: {
          name: "worker",
          include: ["test/worker/**/*.test.ts"],
          // One file at a time: the files share the embedded database and the rate-limit buckets.
          maxWorkers: 1,
          // One isolate for all files (≈ 120 s here; an isolate per file took ≈ 300 s): module
          // state carries over between files, so every file works on projects, developers and
          // client IPs of its own. The Worker must not make a request wait on another's I/O: a
          // lazily loaded module is imported once per isolate (src/lazy-module.ts; in this pool
          // each import() is a round trip to the runner that concurrent requests shared, and the
          // waiting one was cancelled as hung — README "Test database").
          isolate: false,
          // After the node files (a group of its own: groups differing in maxWorkers run in turn).
          sequence: { groupOrder: 1 },
          globalSetup: ["./test/worker/global-setup.ts"],
          testTimeout: 20_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: "node",
          include: ["test/{mcp,cli,cli-amba,browser,dev,unit}/**/*.test.ts"],
          // Builds the CLIs once for every file that runs them.
          globalSetup: ["./test/support/global-setup.ts"],
          // These files mostly wait on child processes (CLI bins, wrangler dev, Chromium): three at a
          // time, also on a 2-core machine (vitest's default there is one).
          maxWorkers: 3,
          environment: "node",
          // Generous: a CLI's first typed start runs the TypeScript compiler, which took over 15 s
          // on a loaded 2-core box. Only a failing test waits this long.
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
