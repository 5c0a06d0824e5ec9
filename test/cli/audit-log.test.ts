/**
 * The `--audit-log` file itself: one JSON line per record whatever a resource name holds, and no
 * appending through a symbolic link someone planted at its path (a tool with write access to the
 * directory, in an earlier run) into a file of the user's.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openAuditLog } from "../../src/cli/audit-log.ts";

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

  it("still takes a link to a device or pipe (/dev/stderr is one)", () => {
    const path = join(dir, "null.jsonl");
    symlinkSync("/dev/null", path);
    const log = openAuditLog(path);
    log.record({ kind: "Network", action: "Connect", resource: "example.com:443", decision: "Deny" });
    log.close();
  });
});
