/**
 * What the deploy build's start-up compiles (scripts/build-worker.ts, README "Decisions"): the entry
 * and the chunks it imports statically. The hot path's routing, authentication and MCP framing are
 * there; what only a later step needs (the database handle with drizzle's pg-core and the schema's
 * tables, the services behind authentication, tool generation, the Neon driver, the OAuth provider,
 * the cold app) is reached through `import()` only. A static import added on the way in (say, a
 * table imported by a hot route) puts its module back into start-up and fails here. Sizes and
 * timings are the start-up bench's (`npm run bench -- startup`), not this test's.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Metafile } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildWorker, startupClosure } from "../../scripts/build-worker.ts";

const outdir = mkdtempSync(join(tmpdir(), "amba-startup-closure-"));
let meta: Metafile;
/** The source modules in the start-up closure (`node_modules/…`, `src/…`, `schema/…`). */
let modules: string[];

beforeAll(async () => {
  meta = await buildWorker(outdir);
  modules = startupClosure(meta).flatMap((output) =>
    Object.keys(meta.outputs[output]?.inputs ?? {}).map(fromNodeModules),
  );
}, 60_000);

afterAll(() => rmSync(outdir, { recursive: true, force: true }));

/**
 * A package's module as `node_modules/…`, however esbuild reached it: in a checkout whose
 * `node_modules` is a link to another's (a git worktree) it names `../../main/node_modules/…`, and a
 * check for `node_modules/x/` would pass there for nothing.
 */
function fromNodeModules(path: string): string {
  const at = path.indexOf("node_modules/");
  return at > 0 ? path.slice(at) : path;
}

const inClosure = (path: string) => modules.some((m) => m.startsWith(path));

describe("the Worker's start-up closure", () => {
  it("holds the hot path's routing, authentication and MCP framing", () => {
    for (const path of [
      "src/worker/app.ts",
      "src/worker/routes/app-mcp.ts",
      "src/worker/routes/data.ts",
      "src/worker/auth.ts",
      "src/mcp/http.ts",
      "node_modules/hono/",
    ])
      expect([path, inClosure(path)]).toEqual([path, true]);
  });

  it("leaves out what the first query, tools/list or a cold route loads", () => {
    for (const path of [
      "schema/index.ts",
      "src/worker/db.ts",
      "src/worker/hot-services.ts",
      "node_modules/drizzle-orm/pg-core/table.js",
      "node_modules/drizzle-orm/pg-core/db.js",
      "node_modules/drizzle-orm/pg-core/dialect.js",
      "src/data/service.ts",
      "src/functions/service.ts",
      "src/app-mcp/handlers.ts",
      "src/app-mcp/tools.ts",
      "src/app-mcp/definitions.ts",
      "node_modules/@valibot/to-json-schema/",
      "node_modules/@neondatabase/serverless/",
      "node_modules/@cloudflare/workers-oauth-provider/",
      "src/worker/cold-app.ts",
      // The SDK routes' CORS checks an origin's syntax at start-up (src/app-mcp/exact-origin.ts),
      // not the config service beside it.
      "src/app-mcp/admin.ts",
    ])
      expect([path, inClosure(path)]).toEqual([path, false]);
  });

  it("is the entry plus chunks, and every module left out is still in the build", () => {
    const all = Object.values(meta.outputs).flatMap((output) => Object.keys(output.inputs));
    expect(all).toContain("schema/index.ts");
    expect(all).toContain("src/app-mcp/tools.ts");
    expect(startupClosure(meta).some((output) => output.endsWith("index.mjs"))).toBe(true);
  });
});
