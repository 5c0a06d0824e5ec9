import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const dir = join(import.meta.dirname, "../../src/mcp");
const files = readdirSync(dir).filter((f) => f.endsWith(".ts"));

describe("src/mcp stays runtime-neutral", () => {
  it("has source files to check", () => {
    expect(files).toContain("index.ts");
  });

  it.each(files)("%s imports only valibot and sibling modules", (file) => {
    const source = readFileSync(join(dir, file), "utf8");
    const specifiers = [
      ...source.matchAll(/\bimport\s+(?:type\s+)?(?:[^'"]*?\sfrom\s+)?["']([^"']+)["']/g),
      ...source.matchAll(/\bexport\s+(?:type\s+)?[^'"]*?\sfrom\s+["']([^"']+)["']/g),
      ...source.matchAll(/\bimport\(\s*["']([^"']+)["']\s*\)/g),
      ...source.matchAll(/\brequire\(\s*["']([^"']+)["']\s*\)/g),
    ].map((m) => m[1]!);
    for (const spec of specifiers) {
      const sibling = /^\.\/[a-z0-9-]+\.ts$/.test(spec);
      expect(sibling || spec === "valibot", `${file} imports ${spec}`).toBe(true);
    }
    const code = source.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
    expect(code, `${file} uses a runtime global`).not.toMatch(/\b(process|Buffer|Deno|Bun)\./);
  });
});
