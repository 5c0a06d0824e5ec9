/**
 * The audit log's counting of repeated checks, on a real file: which repeats are counted, when the
 * count is written, and that every line keeps the contract's five fields.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type AuditEvent, openAuditLog, REPEAT_WINDOW } from "../../src/cli/audit-log.ts";
import { scratch } from "./helpers.ts";

const read = (resource: string): AuditEvent => ({
  kind: "FileSystem",
  action: "Read",
  resource,
  decision: "Deny",
});

describe("audit log", () => {
  it("counts a check repeated within the window, writes the count before the next plain line", () => {
    const file = join(scratch(), "audit.jsonl");
    const log = openAuditLog(file);
    log.recordCheck(read("/a"));
    log.recordCheck(read("/a"));
    log.recordCheck({ ...read("/a"), decision: "Allow" }); // another decision is another check
    for (let i = 0; i < REPEAT_WINDOW; i++) log.recordCheck(read(`/n${i}`)); // "/a" leaves the window
    log.recordCheck(read("/a")); // written again
    log.recordCheck(read(`/n${REPEAT_WINDOW - 1}`));
    log.record({ kind: "Process", action: "Execute", resource: "tool:t", decision: "Deny" });
    log.recordCheck(read("/a")); // a new call starts counting afresh
    log.recordCheck(read("/a"));
    log.close();
    const lines = readFileSync(file, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, string>);
    for (const line of lines)
      expect(Object.keys(line)).toEqual(["ts", "kind", "action", "resource", "decision"]);
    const shown = lines.map((l) => `${l.resource} ${l.decision}`);
    expect(shown).toEqual([
      "/a Deny",
      "/a Allow",
      ...Array.from({ length: REPEAT_WINDOW - 1 }, (_, i) => `/n${i} Deny`),
      // The oldest check leaves the window with its count when a 33rd different one comes in.
      "/a…(1 more time) Deny",
      `/n${REPEAT_WINDOW - 1} Deny`,
      "/a Deny",
      `/n${REPEAT_WINDOW - 1}…(1 more time) Deny`,
      "tool:t Deny",
      "/a Deny",
      "/a…(1 more time) Deny",
    ]);
  });
});
