/**
 * Every platform catalogue operation a signed-in developer can call is an `amba` command (the CLI is
 * the catalogue on a terminal: an operation without one was reachable over REST and the platform
 * MCP only), and the commands added for the last ones send what they should — run by the built bin
 * against a loopback server standing in for the platform MCP.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TOOL_COMMANDS } from "../../src/cli/amba/commands.ts";
import { PLATFORM_TOOLS } from "../../src/platform-mcp/tools.ts";
import { type StandIn, startStandIn, type ToolCall } from "./stand-in.ts";

const TOKEN = "amba_dev_catalogue-commands-token";

let standIn: StandIn;
let calls: ToolCall[];

beforeAll(async () => {
  standIn = await startStandIn(TOKEN, (call) =>
    call.name === "amba_projects_list"
      ? { value: { projects: [{ id: "p1" }, { id: "p2" }] } }
      : { value: { ok: true } },
  );
  calls = standIn.calls;
});

afterAll(() => standIn.close());

describe("amba covers the platform catalogue", () => {
  it("has one command per operation but the sign-up (no token yet: the platform MCP or REST)", () => {
    const commanded = TOOL_COMMANDS.map((command) => command.tool);
    const operations = Object.keys(PLATFORM_TOOLS).filter((name) => name !== "amba_developer_signup");
    expect([...commanded].sort()).toEqual([...new Set(operations)].sort());
  });

  for (const [args, sent] of [
    [
      [
        "collections",
        "alter",
        "notes",
        "--add-columns",
        '[{"name":"rating","type":"integer"}]',
        "--drop-columns",
        "old",
      ],
      {
        name: "amba_collections_alter",
        arguments: {
          name: "notes",
          add_columns: [{ name: "rating", type: "integer" }],
          drop_columns: ["old"],
        },
      },
    ],
    [
      ["client-keys", "create", "--name", "web"],
      { name: "amba_client_keys_create", arguments: { name: "web" } },
    ],
    [["expose", "get"], { name: "amba_app_mcp_get_exposure", arguments: {} }],
    [["functions", "delete", "add"], { name: "amba_functions_delete", arguments: { name: "add" } }],
  ] as const) {
    it(`amba ${args.slice(0, 2).join(" ")} sends ${sent.name}`, async () => {
      calls.length = 0;
      const run = await standIn.amba([...args, "--project", "p1"]);
      expect(run.stderr).toBe("");
      expect(run.code).toBe(0);
      expect(calls).toEqual([{ name: sent.name, arguments: { ...sent.arguments, project_id: "p1" } }]);
    });
  }

  it("deletes a function only with --project when there are several projects", async () => {
    calls.length = 0;
    const run = await standIn.amba(["functions", "delete", "add"]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^error: --project is required for a command that deletes or replaces/);
    expect(calls.map((c) => c.name)).toEqual(["amba_projects_list"]);
  });
});
