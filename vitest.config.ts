import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

/**
 * Two projects: `worker` runs inside workerd against the embedded database (started once by the
 * global setup, reached over the same Neon HTTP protocol production uses); `node` covers the
 * runtime-neutral protocol core, the CLI and the dev tooling.
 */
export default defineConfig({
  test: {
    projects: [
      {
        plugins: [
          cloudflareTest(({ inject }) => ({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: {
              bindings: {
                DATABASE_URL: inject<string>("databaseUrl"),
                LOCAL_DB_URL: inject<string>("localDbUrl"),
                FUNCTION_URL_POLICY: "dev",
              },
            },
          })),
        ],
        test: {
          name: "worker",
          include: ["test/worker/**/*.test.ts"],
          globalSetup: ["./test/worker/global-setup.ts"],
          testTimeout: 20_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: "node",
          include: ["test/{mcp,cli,dev,unit}/**/*.test.ts"],
          environment: "node",
          testTimeout: 20_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
