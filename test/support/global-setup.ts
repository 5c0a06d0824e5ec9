/**
 * The node project's global setup: builds the CLIs (`amber`, its tool host, `amba`) once per run into
 * a private directory under dist/ (so parallel runs never race on dist/cli) and hands the `amber`
 * bin to every file (`inject("amberBin")`, read by `buildTestCli`). One build instead of one per
 * test file: the bins are the same either way, and each build costs a second of CPU.
 */
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { resolve } from "node:path";
import type { TestProject } from "vitest/node";
import { buildCli } from "../../scripts/build-cli.ts";

declare module "vitest" {
  export interface ProvidedContext {
    /** The `amber` bin built for this run; `amba.mjs` is next to it. */
    amberBin: string;
  }
}

export default async function setup(project: TestProject) {
  const outdir = resolve(
    import.meta.dirname,
    "../../dist",
    `.test-${process.pid}-${randomBytes(4).toString("hex")}`,
  );
  project.provide("amberBin", await buildCli(outdir));
  return () => rmSync(outdir, { recursive: true, force: true });
}
