/**
 * ES module resolution out of the read grants answers alike whether the file is there or not: a
 * uniform refusal (a `Deny` line each), decided before Node's resolver looks at the file — through
 * `import()` of a path or file URL, a `data:` module's static import, `import.meta.resolve`, a
 * relative specifier and one with a query, and a package name looked for in the `node_modules`
 * above the grants. Tool code cannot take the hook away or run its own
 * ahead of it. Needs `module.registerHooks` (Node ≥ 22.15): run on the test runner's Node (the
 * project's Node 22), not the machine's Node 20, which keeps the oracle (README).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestCli, LineClient, scratch } from "./helpers.ts";

const TOOLS = `
const module = require("node:module");
const answer = (promise) =>
  promise.then(
    () => "loaded",
    (error) => \`\${error.code}: \${error.message}\`,
  );
export function importPath({ path }) { return answer(import(path)); }
export function importUrl({ url }) { return answer(import(url)); }
export function importFromData({ url }) {
  return answer(import("data:text/javascript,import " + encodeURIComponent(JSON.stringify(url)) + ";"));
}
export function resolveFromData({ url }) {
  return answer(import("data:text/javascript,import.meta.resolve(" + encodeURIComponent(JSON.stringify(url)) + ");"));
}
export function importRelative({ specifier }) { return answer(import(specifier)); }
export function findPackage({ specifier }) {
  try {
    return String(module.findPackageJSON(specifier, __filename));
  } catch (error) {
    return \`\${error.code}: \${error.message}\`;
  }
}
export function ownHooks() {
  module.registerHooks({ resolve: (specifier, context, next) => ({ url: specifier, shortCircuit: true }) });
  return "registered";
}
`;

describe("ES module resolution out of the grants", () => {
  let bin: string;
  let dir: string;
  let session: LineClient;
  const log = () => join(dir, "audit.jsonl");
  beforeAll(async () => {
    ({ bin } = await buildTestCli());
    dir = scratch({
      "jail/tools.js": TOOLS,
      "jail/inside.mjs": "export default 1;\n",
      "secret.mjs": "export default 'secret';\n",
      "jail/node_modules/inpkg/package.json": '{"name":"inpkg","exports":"./index.mjs"}',
      "jail/node_modules/inpkg/index.mjs": "export default 1;\n",
      "node_modules/outpkg/package.json": '{"name":"outpkg","exports":"./index.mjs"}',
      "node_modules/outpkg/index.mjs": "export default 'secret';\n",
      "package.json": '{"name":"outside"}',
    });
    session = new LineClient(
      bin,
      ["session", "--sandbox", "--allow-read", "jail", "--audit-log", log(), "jail/tools.js"],
      { cwd: dir, node: process.execPath },
    );
  });
  afterAll(async () => {
    await session.close();
  });

  const denied = (path: string) => `ERR_PERMISSION_DENIED: permission denied: FileSystem Read ${path}`;
  const result = async (tool: string, args: Record<string, string>) =>
    (await session.call(tool, args)).result as string;

  it("refuses a file that is there and one that is not alike, by every route", async () => {
    const there = join(dir, "secret.mjs");
    const absent = join(dir, "absent.mjs");
    for (const path of [there, absent]) {
      const url = pathToFileURL(path).href;
      const name = path.slice(dir.length + 1);
      expect(await result("importPath", { path }), path).toBe(denied(path));
      expect(await result("importUrl", { url: `${url}?x#y` }), path).toBe(denied(path));
      expect(await result("importFromData", { url }), path).toBe(denied(path));
      expect(await result("resolveFromData", { url }), path).toBe(denied(path));
      expect(await result("importRelative", { specifier: `../${name}` }), path).toBe(denied(path));
    }
    // A package is looked for in each node_modules above: one out of the grants is not looked at.
    for (const name of ["outpkg", "nopkg"])
      expect(await result("importRelative", { specifier: name }), name).toBe(
        denied(join(dir, "node_modules", name)),
      );
    const lines = readFileSync(log(), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, string>)
      .filter((line) => line.kind === "FileSystem")
      .map((line) => `${line.resource} ${line.decision}`);
    expect(lines.filter((line) => line === `${there} Deny`).length).toBe(5);
    expect(lines.filter((line) => line === `${absent} Deny`).length).toBe(5);
  });

  it("still loads what the grants cover, and says what is missing there", async () => {
    expect(await result("importRelative", { specifier: "./inside.mjs" })).toBe("loaded");
    expect(await result("importRelative", { specifier: "./missing.mjs" })).toMatch(/^ERR_MODULE_NOT_FOUND: /);
    expect(await result("importRelative", { specifier: "inpkg" })).toBe("loaded");
    expect(await result("importRelative", { specifier: "node:os" })).toBe("loaded");
  });

  // module.findPackageJSON (Node ≥ 22.14) looks for a package, or the package.json above a file.
  it("finds no package.json out of the grants, and tells no package there from none", async () => {
    for (const name of ["outpkg", "nopkg"])
      expect(await result("findPackage", { specifier: name }), name).toBe(
        denied(join(dir, "node_modules", name)),
      );
    expect(await result("findPackage", { specifier: "inpkg" })).toBe(
      join(dir, "jail/node_modules/inpkg/package.json"),
    );
    // The package.json above the jail is out of the grants: as if there were none.
    expect(await result("findPackage", { specifier: "./inside.mjs" })).toBe("undefined");
  });

  it("keeps tool code from putting hooks of its own ahead of the check", async () => {
    expect((await session.call("ownHooks")).error).toEqual({
      code: -32000,
      message: "permission denied: Process Execute module.registerHooks",
    });
    expect(await result("importPath", { path: join(dir, "absent.mjs") })).toBe(
      denied(join(dir, "absent.mjs")),
    );
  });
});
