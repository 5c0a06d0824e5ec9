/**
 * The import graph of src/ points one way: surfaces (src/worker, src/cli) import services and pure
 * modules, never the reverse. Each module of src/ belongs to a unit — its top-level folder
 * (`src/data/…` → `data`) or, for a top-level file, the file (`src/errors.ts` → `errors.ts`).
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const SRC = join(import.meta.dirname, "../../src");

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.(ts|mts)$/.test(entry.name) && !entry.name.endsWith(".d.ts") ? [path] : [];
  });
}

/** Relative import specifiers of a module (static, re-exports, dynamic). */
function relativeImports(source: string): string[] {
  return [
    ...source.matchAll(/\bimport\s+(?:type\s+)?(?:[^'"]*?\sfrom\s+)?["']([^"']+)["']/g),
    ...source.matchAll(/\bexport\s+(?:type\s+)?[^'"]*?\sfrom\s+["']([^"']+)["']/g),
    ...source.matchAll(/\bimport\(\s*["']([^"']+)["']\s*\)/g),
  ]
    .map((m) => m[1]!)
    .filter((spec) => spec.startsWith("."));
}

/** The unit of a path under src/ (null outside src/, e.g. schema/). */
function unitOf(path: string): string | null {
  const rel = relative(SRC, path);
  if (rel.startsWith("..")) return null;
  return rel.split(/[\\/]/)[0]!;
}

interface Edge {
  from: string;
  to: string;
  file: string;
  spec: string;
}

const edges: Edge[] = sourceFiles(SRC).flatMap((file) =>
  relativeImports(readFileSync(file, "utf8")).flatMap((spec) => {
    const from = unitOf(file)!;
    const to = unitOf(resolve(dirname(file), spec));
    return to && to !== from ? [{ from, to, file: relative(SRC, file), spec }] : [];
  }),
);

describe("src/ import direction", () => {
  it("finds the graph", () => {
    expect(edges.some((e) => e.from === "worker" && e.to === "data")).toBe(true);
  });

  it("nothing outside src/worker imports src/worker", () => {
    const offenders = edges.filter((e) => e.to === "worker").map((e) => `${e.file} imports ${e.spec}`);
    expect(offenders).toEqual([]);
  });

  it("the services and pure modules import no surface (src/worker, src/cli, src/dev)", () => {
    const surfaces = ["worker", "cli", "dev"];
    const offenders = edges
      .filter((e) => !surfaces.includes(e.from) && surfaces.includes(e.to))
      .map((e) => `${e.file} imports ${e.spec}`);
    expect(offenders).toEqual([]);
  });

  it("the routes hold no SQL: they reach the database only through services", () => {
    const routes = join(SRC, "worker/routes");
    const offenders = sourceFiles(routes).flatMap((file) => {
      const source = readFileSync(file, "utf8");
      const specs = [...source.matchAll(/\bfrom\s+["']([^"']+)["']/g)].map((m) => m[1]!);
      return specs
        .filter((spec) => spec.startsWith("drizzle-orm") || /(^|\/)schema\/index\.ts$/.test(spec))
        .map((spec) => `${relative(SRC, file)} imports ${spec}`);
    });
    expect(offenders).toEqual([]);
  });

  it("no two units import each other, directly or through others", () => {
    const next = new Map<string, Set<string>>();
    for (const e of edges) next.set(e.from, (next.get(e.from) ?? new Set()).add(e.to));
    const cycles: string[] = [];
    const walk = (unit: string, path: string[]) => {
      for (const to of next.get(unit) ?? []) {
        if (to === path[0]) cycles.push([...path, to].join(" → "));
        else if (!path.includes(to) && to > path[0]!) walk(to, [...path, to]);
      }
    };
    for (const unit of next.keys()) walk(unit, [unit]);
    const example = (from: string, to: string) => edges.find((e) => e.from === from && e.to === to);
    const detail = cycles.map((cycle) => {
      const [a, b] = cycle.split(" → ");
      const e = example(a!, b!);
      return `${cycle} (e.g. ${e?.file} imports ${e?.spec})`;
    });
    expect(detail).toEqual([]);
  });
});
