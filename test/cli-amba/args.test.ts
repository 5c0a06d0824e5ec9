import { describe, expect, it } from "vitest";
import { booleanProperties, hoistGlobalFlags, splitArgs, toolArguments } from "../../src/cli/amba/args.ts";
import type { JsonSchema } from "../../src/cli/amba/catalogue.ts";

const CONFIG: JsonSchema = {
  type: "object",
  properties: {
    project_id: { type: "string" },
    enabled: { type: "boolean" },
    auth_mode: { enum: ["all", "client_only", "developer_only"], type: "string" },
    slug: { anyOf: [{ type: "string" }, { type: "null" }] },
  },
};
const EXPOSURE: JsonSchema = {
  type: "object",
  properties: {
    collections: { type: "array", items: { type: "string" } },
    functions: { type: "array", items: { type: "string" } },
  },
};

const parse = (schema: JsonSchema, argv: string[], positionals: string[] = []) =>
  toolArguments(schema, splitArgs(argv, booleanProperties(schema)), positionals);

describe("amba flags → tool arguments", () => {
  it("reads each flag by its property's schema", () => {
    expect(parse(CONFIG, ["--auth-mode", "client_only", "--enabled", "--slug=null", "--json"])).toEqual({
      auth_mode: "client_only",
      enabled: true,
      slug: null,
    });
    expect(parse(CONFIG, ["--no-enabled", "--slug", "cookbook"])).toEqual({
      enabled: false,
      slug: "cookbook",
    });
    expect(parse(EXPOSURE, ["--collections", "a, b", "--functions", ""])).toEqual({
      collections: ["a", "b"],
      functions: [],
    });
    expect(parse(EXPOSURE, ["--data", '{"collections":["x"]}'])).toEqual({ collections: ["x"] });
  });

  it("maps positionals and parses numbers", () => {
    const promote: JsonSchema = { properties: { name: { type: "string" }, version: { type: "number" } } };
    expect(parse(promote, ["greet", "2"], ["name", "version"])).toEqual({ name: "greet", version: 2 });
    expect(() => parse(promote, ["greet", "two"], ["name", "version"])).toThrow(
      '--version: expected a number, got "two"',
    );
    expect(() => parse(promote, ["a", "1", "extra"], ["name", "version"])).toThrow(
      'unexpected argument "extra"',
    );
  });

  it("rejects unknown flags, project_id as a flag, and bad JSON", () => {
    expect(() => parse(CONFIG, ["--colour", "red"])).toThrow(
      "unknown flag --colour (this command takes: --enabled, --auth-mode, --slug)",
    );
    expect(() => parse(CONFIG, ["--project-id", "p"])).toThrow("unknown flag --project-id");
    const create: JsonSchema = { properties: { columns: { type: "array", items: { type: "object" } } } };
    expect(() => parse(create, ["--columns", "[{"])).toThrow('--columns: expected JSON, got "[{"');
  });
});

describe("hoistGlobalFlags", () => {
  it("moves global flags given before the command after it (`amba --project p collections list`)", () => {
    // Before: `error: expected a command before any flag`, though --help lists them as global flags.
    expect(hoistGlobalFlags(["--project", "p1", "collections", "list"])).toEqual([
      "collections",
      "list",
      "--project",
      "p1",
    ]);
    expect(hoistGlobalFlags(["--json", "--amba-url=http://x", "--amba-token", "t", "projects"])).toEqual([
      "projects",
      "--json",
      "--amba-url=http://x",
      "--amba-token",
      "t",
    ]);
    expect(hoistGlobalFlags(["--data", "{}", "config", "set", "--slug", "a"])).toEqual([
      "config",
      "set",
      "--slug",
      "a",
      "--data",
      "{}",
    ]);
  });

  it("leaves everything else as it was: no leading flag, an unknown one, --help", () => {
    expect(hoistGlobalFlags(["collections", "list", "--project", "p"])).toEqual([
      "collections",
      "list",
      "--project",
      "p",
    ]);
    expect(hoistGlobalFlags(["--slug", "a", "config", "set"])).toEqual(["--slug", "a", "config", "set"]);
    expect(hoistGlobalFlags(["--help"])).toEqual(["--help"]);
    expect(hoistGlobalFlags(["--project"])).toEqual(["--project"]);
  });
});
