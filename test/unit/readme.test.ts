/**
 * README.md is the product's front door, and it drifts as code moves: a path it names that no longer
 * exists, an `amba` command in its command block that the CLI does not have (`amba collections drop`
 * was listed before it was a command). Checked here against the tree and the CLI's command table.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { findCommand } from "../../src/cli/amba/commands.ts";

const ROOT = join(import.meta.dirname, "../..");
const README = readFileSync(join(ROOT, "README.md"), "utf8");

/** The commands `amba` runs itself rather than through the catalogue. */
const OWN_COMMANDS = new Set(["login", "mcp"]);

describe("README.md", () => {
  it("names only files and folders that exist", () => {
    const named = new Set(
      [...README.matchAll(/`((?:src|test|scripts|docs|schema)\/[A-Za-z0-9_./-]*[A-Za-z0-9_/])`/g)].map(
        (match) => (match[1] as string).replace(/\/$/, ""),
      ),
    );
    expect(named.size).toBeGreaterThan(50);
    expect([...named].filter((path) => !path.includes("*") && !existsSync(join(ROOT, path)))).toEqual([]);
  });

  it("shows only amba commands the CLI has", () => {
    const block = /## `amba` CLI[\s\S]*?```bash\n[\s\S]*?```\n[\s\S]*?```bash\n([\s\S]*?)```/.exec(README);
    expect(block, "the amba command block").not.toBeNull();
    const invocations = (block?.[1] ?? "")
      .split("\n")
      .filter((line) => line.startsWith("amba "))
      .flatMap((line) => line.replace(/#.*$/, "").split(" ; "))
      .map((part) =>
        part
          .trim()
          .replace(/^amba /, "")
          .split(/\s+/),
      );
    expect(invocations.length).toBeGreaterThan(15);
    const unknown = invocations
      .filter((words) => !OWN_COMMANDS.has(words[0] as string))
      .filter((words) => findCommand(words) === undefined)
      .map((words) => words.join(" "));
    expect(unknown).toEqual([]);
  });
});
