import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { goldenDefinitions } from "./definitions-golden.ts";

const golden = readFileSync(join(import.meta.dirname, "fixtures/definitions.golden.json"), "utf8");

describe("tool definitions on the wire", () => {
  it("are byte for byte the ones before the input-schema conversion was restructured", () => {
    // Compared as JSON text (the fixture's layout aside): key order is part of what `tools/list` sends.
    expect(JSON.stringify(goldenDefinitions())).toBe(JSON.stringify(JSON.parse(golden)));
  });
});
