/**
 * `amba events delete`: the `amba_events_delete` catalogue operation as a command, run by the built
 * bin against a loopback server standing in for the platform MCP — the arguments it sends, the
 * `{deleted, more, freed_bytes}` answer as `key: value` lines or `--json`, and a refusal of `before`
 * as one `error:` line with the server's message.
 */
import { execFile } from "node:child_process";
import { createServer, type Server } from "node:http";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { findCommand } from "../../src/cli/amba/commands.ts";
import { cleanEnv, NODE } from "../cli/helpers.ts";

const TOKEN = "amba_dev_events-delete-token";
const ANSWER = { deleted: 10000, more: true, freed_bytes: 2060000 };
/** The REST delete's message for a bad `before` (src/events/service.ts). */
const BAD_BEFORE =
  "before: required, an ISO-8601 date-time with a time zone (2026-12-01T12:00:00Z); events received before it are deleted";

/** The `tools/call` requests the server saw. */
const calls: { name: string; arguments: Record<string, unknown> }[] = [];
let server: Server;
let url: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => {
      body += chunk;
    });
    req.on("end", () => {
      const rpc = JSON.parse(body) as {
        id: number;
        params: { name: string; arguments: Record<string, unknown> };
      };
      calls.push(rpc.params);
      // The service refuses what is no ISO date-time with a time zone; here, anything not ending in Z.
      const refused = !String(rpc.params.arguments.before ?? "").endsWith("Z");
      const value = refused ? { error: { code: "invalid_input", message: BAD_BEFORE } } : ANSWER;
      res.setHeader("content-type", "application/json");
      res.end(
        JSON.stringify({
          jsonrpc: "2.0",
          id: rpc.id,
          result: {
            content: [{ type: "text", text: JSON.stringify(value) }],
            structuredContent: value,
            ...(refused ? { isError: true } : {}),
          },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});

afterAll(() => {
  server.closeAllConnections();
  server.close();
});

/** Run the built `amba` with `args`; its stdout, stderr and exit status. */
function amba(args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  const bin = join(dirname(inject("amberBin")), "amba.mjs");
  const env = cleanEnv({ AMBA_URL: url, AMBA_TOKEN: TOKEN, XDG_CONFIG_HOME: "/nonexistent" });
  return new Promise((resolve) =>
    execFile(NODE, [bin, ...args], { env, timeout: 20_000 }, (error, stdout, stderr) =>
      resolve({ stdout, stderr, code: error ? Number(error.code ?? 1) : 0 }),
    ),
  );
}

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
