import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { APP_VERSION } from "../../src/version.ts";

const root = join(import.meta.dirname, "../..");

describe("APP_VERSION", () => {
  it("is the package version", () => {
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string };
    expect(APP_VERSION).toBe(pkg.version);
  });

  it("is the APP_VERSION var the Worker's /healthz reports", () => {
    const toml = readFileSync(join(root, "wrangler.toml"), "utf8");
    expect(toml).toMatch(new RegExp(`^APP_VERSION = "${APP_VERSION.replaceAll(".", "\\.")}"$`, "m"));
  });
});
