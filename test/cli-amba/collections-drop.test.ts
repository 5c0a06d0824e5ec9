/**
 * `amba collections drop <name>`: the `amba_collections_drop` catalogue operation as a command (the
 * README names it among the commands that delete), run by the built bin against a loopback server
 * standing in for the platform MCP — the arguments it sends, and no default project when there are
 * several.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findCommand } from "../../src/cli/amba/commands.ts";
import { type StandIn, startStandIn, type ToolCall } from "./stand-in.ts";

const TOKEN = "amba_dev_collections-drop-token";

let standIn: StandIn;
let calls: ToolCall[];
const amba = (args: string[]) => standIn.amba(args);

beforeAll(async () => {
  standIn = await startStandIn(TOKEN, (call) =>
    call.name === "amba_projects_list"
      ? { value: { projects: [{ id: "p1" }, { id: "p2" }] } }
      : { value: { name: call.arguments.name, deleted: true } },
  );
  calls = standIn.calls;
});

afterAll(() => standIn.close());

describe("amba collections drop", () => {
  it("is the amba_collections_drop operation, the name given positionally", () => {
    expect(findCommand(["collections", "drop", "notes"])).toEqual({
      command: expect.objectContaining({ path: ["collections", "drop"], tool: "amba_collections_drop" }),
      rest: ["notes"],
    });
  });

  it("sends the name and --project and prints the answer", async () => {
    calls.length = 0;
    const run = await amba(["collections", "drop", "notes", "--project", "p1"]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(calls).toEqual([
      { name: "amba_collections_drop", arguments: { name: "notes", project_id: "p1" } },
    ]);
    expect(run.stdout).toBe("name: notes\ndeleted: true\n");
  });

  it("with several projects and no --project, drops nothing", async () => {
    calls.length = 0;
    const run = await amba(["collections", "drop", "notes"]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe("");
    expect(run.stderr).toMatch(/^error: --project is required for a command that deletes or replaces/);
    expect(calls.map((c) => c.name)).toEqual(["amba_projects_list"]);
  });
});
