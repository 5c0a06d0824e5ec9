/** The `--audit-log` file itself: one JSON line per record whatever a resource name holds. */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
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
});
