/**
 * `npm run bench [name…]`: runs every `scripts/bench/<name>.ts` (or only the named ones), one after
 * another so they don't compete for the two cores. Each prints its own ratios against a baseline
 * measured in the same run.
 */
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";

const dir = import.meta.dirname;
const all = readdirSync(dir)
  .filter((f) => f.endsWith(".ts") && f !== "index.ts")
  .map((f) => f.slice(0, -3))
  .sort();
const wanted = process.argv.slice(2);
const unknown = wanted.filter((name) => !all.includes(name));
if (unknown.length) {
  process.stderr.write(`error: unknown benchmark(s): ${unknown.join(", ")} (have: ${all.join(", ")})\n`);
  process.exit(2);
}
let failed = 0;
for (const name of wanted.length ? wanted : all) {
  process.stdout.write(`\n## ${name}\n`);
  const run = spawnSync(process.execPath, [join(dir, `${name}.ts`)], { stdio: "inherit" });
  if (run.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
