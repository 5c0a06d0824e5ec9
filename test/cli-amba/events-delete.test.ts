/**
 * `amba events delete`: the `amba_events_delete` catalogue operation as a command, run by the built
 * bin against a loopback server standing in for the platform MCP — the arguments it sends, the
 * `{deleted, more, freed_bytes}` answer as `key: value` lines or `--json`, and a refusal of `before`
 * as one `error:` line with the server's message.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findCommand } from "../../src/cli/amba/commands.ts";
import { type StandIn, startStandIn, type ToolCall } from "./stand-in.ts";

const TOKEN = "amba_dev_events-delete-token";
const ANSWER = { deleted: 10000, more: true, freed_bytes: 2060000 };
/** The REST delete's message for a bad `before` (src/events/service.ts). */
const BAD_BEFORE =
  "before: required, an ISO-8601 date-time with a time zone (2026-12-01T12:00:00Z); events received before it are deleted";

let standIn: StandIn;
/** The `tools/call` requests the server saw. */
let calls: ToolCall[];
const amba = (args: string[]) => standIn.amba(args);

beforeAll(async () => {
  standIn = await startStandIn(TOKEN, (call) => {
    if (call.name === "amba_projects_list") return { value: { projects: [{ id: "p1" }, { id: "p2" }] } };
    // The service refuses what is no ISO date-time with a time zone; here, anything not ending in Z.
    const refused = !String(call.arguments.before ?? "").endsWith("Z");
    return refused
      ? { value: { error: { code: "invalid_input", message: BAD_BEFORE } }, isError: true }
      : { value: ANSWER };
  });
  calls = standIn.calls;
});

afterAll(() => standIn.close());

describe("amba events delete", () => {
  it("is the amba_events_delete operation", () => {
    expect(findCommand(["events", "delete", "--before", "2026-12-01T00:00:00Z"])).toEqual({
      command: expect.objectContaining({ path: ["events", "delete"], tool: "amba_events_delete" }),
      rest: ["--before", "2026-12-01T00:00:00Z"],
    });
  });

  it("sends --project, --before and --name as the tool's arguments and prints the answer", async () => {
    calls.length = 0;
    const run = await amba([
      "events",
      "delete",
      "--project",
      "p1",
      "--before",
      "2026-12-01T00:00:00Z",
      "--name",
      "signup",
    ]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(calls).toEqual([
      {
        name: "amba_events_delete",
        arguments: { before: "2026-12-01T00:00:00Z", name: "signup", project_id: "p1" },
      },
    ]);
    expect(run.stdout).toBe("deleted: 10000\nmore: true\nfreed_bytes: 2060000\n");
  });

  it("with several projects and no --project, deletes nothing (a read still takes the first project)", async () => {
    calls.length = 0;
    const run = await amba(["events", "delete", "--before", "2026-12-01T00:00:00Z"]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe("");
    expect(run.stderr).toBe(
      "error: --project is required for a command that deletes or replaces: you have 2 projects (amba projects list)\n",
    );
    expect(calls.map((c) => c.name)).toEqual(["amba_projects_list"]);

    // A missing argument is reported before the project is asked for (and nothing is sent).
    calls.length = 0;
    const noBefore = await amba(["events", "delete"]);
    expect(noBefore.code).toBe(1);
    expect(noBefore.stderr).toBe("error: before: is required\n");
    expect(calls).toEqual([]);

    calls.length = 0;
    // (This stand-in answers every other tool as the delete: only the arguments sent matter here.)
    await amba(["events", "list", "--json"]);
    expect(calls.map((c) => [c.name, c.arguments.project_id])).toEqual([
      ["amba_projects_list", undefined],
      ["amba_events_list", "p1"],
    ]);
  });

  it("prints --json as the tool's value", async () => {
    const run = await amba([
      "events",
      "delete",
      "--project",
      "p1",
      "--before",
      "2026-12-01T00:00:00Z",
      "--json",
    ]);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual(ANSWER);
  });

  it("prints a refused before as the server's message on stderr, exit 1, stdout empty", async () => {
    const run = await amba(["events", "delete", "--project", "p1", "--before", "yesterday"]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe("");
    expect(run.stderr).toBe(`error: ${BAD_BEFORE}\n`);
  });

  it("shows --before as required and --name in --help, without calling the server", async () => {
    calls.length = 0;
    const run = await amba(["events", "delete", "--help"]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^amba events delete — Delete events/);
    expect(run.stdout).toMatch(/--before <string> \(required\)/);
    expect(run.stdout).toContain("--name <string>");
    expect(calls).toEqual([]);
  });
});
