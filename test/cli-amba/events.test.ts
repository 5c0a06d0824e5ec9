/**
 * `amba events list`: the `amba_events_list` catalogue operation as a command, run by the built bin
 * against a loopback server standing in for the platform MCP. Event names and properties are written
 * by an app's client code (its client key is public), so the server's answer here is hostile: the
 * terminal must get every control character escaped, in the table and in `--json`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findCommand } from "../../src/cli/amba/commands.ts";
import { render } from "../../src/cli/amba/output.ts";
import { type StandIn, startStandIn, type ToolCall } from "./stand-in.ts";

const TOKEN = "amba_dev_events-token";
/** Writes the clipboard (OSC 52), clears the screen, CSI as one C1 byte, reverses the line. */
const HOSTILE = "\u001b]52;c;Y3VybCBldmlsIHwgc2g=\u0007\u001b[2J\u009b31m\u202eok\r\nnext";
/** Characters a terminal acts on; none may reach stdout raw. */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

const PAGE = {
  events: [
    {
      id: "0193a5b0-0000-7000-8000-000000000002",
      name: "signup",
      properties: { [`k${HOSTILE}`]: HOSTILE },
      user_id: null,
      occurred_at: "2026-12-01T12:00:01.000Z",
      received_at: "2026-12-01T12:00:01.000Z",
    },
    {
      id: "0193a5b0-0000-7000-8000-000000000001",
      name: "signup",
      properties: { nested: { deep: [HOSTILE] } },
      user_id: "0193a5b0-0000-7000-8000-0000000000aa",
      occurred_at: "2026-12-01T12:00:00.000Z",
      received_at: "2026-12-01T12:00:00.500Z",
    },
  ],
  next_cursor: "WyJldmVudHMi",
};

let standIn: StandIn;
/** The `tools/call` requests the server saw. */
let calls: ToolCall[];
const amba = (args: string[]) => standIn.amba(args);

beforeAll(async () => {
  standIn = await startStandIn(TOKEN, () => ({ value: PAGE }));
  calls = standIn.calls;
});

afterAll(() => standIn.close());

describe("amba events list", () => {
  it("is the amba_events_list operation", () => {
    expect(findCommand(["events", "list", "--limit", "2"])).toEqual({
      command: expect.objectContaining({ path: ["events", "list"], tool: "amba_events_list" }),
      rest: ["--limit", "2"],
    });
  });

  it("sends --project, --name, --limit and --cursor as the tool's arguments", async () => {
    calls.length = 0;
    const run = await amba([
      "events",
      "list",
      "--project",
      "p1",
      "--name",
      "signup",
      "--limit",
      "2",
      "--cursor",
      "WyJhIg",
    ]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(calls).toEqual([
      {
        name: "amba_events_list",
        arguments: { name: "signup", limit: 2, cursor: "WyJhIg", project_id: "p1" },
      },
    ]);
  });

  it("prints a table with every control character of a name or property escaped", async () => {
    const run = await amba(["events", "list", "--project", "p1"]);
    expect(run.code).toBe(0);
    expect(run.stdout).not.toMatch(CONTROL);
    expect(run.stdout).toContain(
      "\\u001b]52;c;Y3VybCBldmlsIHwgc2g=\\u0007\\u001b[2J\\u009b31m\\u202eok\\r\\nnext",
    );
    const lines = run.stdout.trimEnd().split("\n");
    // A header, one row per event (no value broke a row), then the cursor to pass back.
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatch(/^id\s+name\s+properties\s+user_id\s+occurred_at\s+received_at$/);
    expect(lines[1]).toContain("0193a5b0-0000-7000-8000-000000000002  signup");
    expect(lines[3]).toBe("next_cursor: WyJldmVudHMi");
    // The same rendering as the pure function (one code path).
    expect(run.stdout).toBe(render(PAGE));
  });

  it("prints --json as the same value, with what JSON leaves raw escaped too", async () => {
    const run = await amba(["events", "list", "--project", "p1", "--json"]);
    expect(run.code).toBe(0);
    expect(run.stdout).not.toMatch(CONTROL);
    expect(JSON.parse(run.stdout)).toEqual(PAGE);
  });

  it("shows the tool's flags in --help, without calling the server", async () => {
    calls.length = 0;
    const run = await amba(["events", "list", "--help"]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^amba events list — List events/);
    for (const flag of ["--limit <integer>", "--cursor <string>", "--name <string>"])
      expect(run.stdout).toContain(flag);
    expect(calls).toEqual([]);
  });
});
