/**
 * The `--audit-log` file itself: one JSON line per record whatever a resource name holds, no
 * appending through a symbolic link someone planted at its path (a tool with write access to the
 * directory, in an earlier run) into a file of the user's, and no start that waits on a pipe
 * planted there (black-box, on the built bin: a hang would block a test's own thread).
 */
import { spawnSync } from "node:child_process";
import {
  closeSync,
  constants,
  existsSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openAuditLog } from "../../src/cli/audit-log.ts";
import { buildTestCli, cleanEnv, NODE, runCli } from "./helpers.ts";

const dir = mkdtempSync(join(tmpdir(), "amber-audit-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the audit log file", () => {
  it("keeps each record one JSON line a terminal or a line splitter reads as written", () => {
    const path = join(dir, "lines.jsonl");
    const log = openAuditLog(path);
    const resources = [
      'a\nb\r{"forged":true}',
      "\u2028\u2029\u0085 Python's splitlines breaks here",
      "\u001b]52;c;Y3VybCBldmlsIHwgc2g=\u0007\u009b2J\u202eobj.exe",
    ];
    for (const resource of resources)
      log.record({ kind: "FileSystem", action: "Read", resource, decision: "Deny" });
    log.close();
    const text = readFileSync(path, "utf8");
    expect(text).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e]/);
    const lines = text.split(/\r\n|[\n\r\u2028\u2029\u0085]/);
    expect(lines.pop()).toBe("");
    expect(lines.map((line) => JSON.parse(line).resource)).toEqual(resources);
  });

  it("refuses a symbolic link to a file, and neither writes nor creates its target", () => {
    const target = join(dir, "bashrc");
    writeFileSync(target, "# the user's file\n");
    const path = join(dir, "planted.jsonl");
    symlinkSync(target, path);
    expect(() => openAuditLog(path)).toThrow(`failed to open audit log ${path}: a symbolic link to a file`);
    expect(readFileSync(target, "utf8")).toBe("# the user's file\n");
    const dangling = join(dir, "dangling.jsonl");
    symlinkSync(join(dir, "authorized_keys"), dangling);
    expect(() => openAuditLog(dangling)).toThrow(`failed to open audit log ${dangling}: ENOENT`);
    expect(existsSync(join(dir, "authorized_keys"))).toBe(false);
  });

  it("takes a device given as itself, but no link to one (a planted link to /dev/null would hide every line)", () => {
    const log = openAuditLog("/dev/null");
    log.record({ kind: "Network", action: "Connect", resource: "example.com:443", decision: "Deny" });
    log.close();
    const path = join(dir, "null.jsonl");
    symlinkSync("/dev/null", path);
    expect(() => openAuditLog(path)).toThrow(
      `failed to open audit log ${path}: a symbolic link to a device (give the device itself)`,
    );
  });
});

describe("the audit log path, as the CLI opens it", () => {
  let bin: string;
  beforeAll(async () => {
    ({ bin } = await buildTestCli());
    writeFileSync(join(dir, "tools.js"), "export function add(a, b) { return a + b; }\n");
    expect(spawnSync("mkfifo", [join(dir, "fifo.jsonl")]).status).toBe(0);
    symlinkSync(join(dir, "fifo.jsonl"), join(dir, "to-fifo.jsonl"));
  });
  const call = `${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "add", arguments: { a: 1, b: 2 } } })}\n`;
  const session = (log: string) =>
    runCli(bin, ["session", "--sandbox", "--audit-log", log, "tools.js"], { cwd: dir, input: call });

  it("refuses a pipe planted at the path, or a link to one, at once (nobody reading it, or its planter)", () => {
    for (const log of ["fifo.jsonl", "to-fifo.jsonl"]) {
      const result = session(log);
      expect(result.stderr, log).toBe(
        `error: amber session: failed to open audit log ${join(dir, log)}: not a regular file (a pipe or socket)\n`,
      );
      expect([result.status, result.stdout], log).toEqual([1, ""]);
    }
    // Someone reading the pipe (a process the tool left behind in an earlier run) gets no line either.
    const reader = openSync(join(dir, "fifo.jsonl"), constants.O_RDONLY | constants.O_NONBLOCK);
    try {
      for (const log of ["fifo.jsonl", "to-fifo.jsonl"]) {
        const result = session(log);
        expect(result.stderr, log).toBe(
          `error: amber session: failed to open audit log ${join(dir, log)}: not a regular file (a pipe or socket)\n`,
        );
        expect(result.status, log).toBe(1);
      }
    } finally {
      closeSync(reader);
    }
  });

  /** A session whose stdout and stderr are real pipes (Node gives its children sockets, which no path opens). */
  const piped = (redirect: string, log: string) =>
    spawnSync(
      "sh",
      [
        "-c",
        `"$0" "$@" ${redirect} | cat`,
        NODE,
        bin,
        "session",
        "--sandbox",
        "--audit-log",
        log,
        "tools.js",
      ],
      { cwd: dir, input: call, encoding: "utf8", timeout: 20_000, env: cleanEnv() },
    );

  it("never writes its lines into the protocol stream; the CLI's own stderr still takes them", () => {
    const stdout = piped("", "/dev/stdout");
    expect(stdout.stderr).toBe(
      "error: amber session: failed to open audit log /dev/stdout: not a regular file (a pipe or socket)\n",
    );
    expect(stdout.stdout).toBe("");
    const stderr = piped("2>&1 >/dev/null", "/dev/stderr");
    expect(stderr.status).toBe(0);
    expect(stderr.stdout).toMatch(
      /^\{"ts":"[^"]+","kind":"Process","action":"Execute","resource":"tool:add","decision":"Allow"\}\n$/,
    );
  });

  it("fails `run --export-tools` with the contract's one prefixed line", () => {
    const result = runCli(bin, ["run", "--audit-log", "fifo.jsonl", "--export-tools", "tools.js"], {
      cwd: dir,
    });
    expect(result.stderr).toBe(
      `error: amber run --export-tools: failed to open audit log ${join(dir, "fifo.jsonl")}: not a regular file (a pipe or socket)\n`,
    );
    expect([result.status, result.stdout]).toEqual([1, ""]);
  });
});
