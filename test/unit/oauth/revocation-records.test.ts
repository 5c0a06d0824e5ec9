/** How the Worker revokes a grant (src/oauth/revocation-records.ts): recorded first, then deleted by the provider. */
import { describe, expect, it } from "vitest";
import type { Db } from "../../../src/db.ts";
import { recordingRevoker } from "../../../src/oauth/revocation-records.ts";

/** A database whose statements are logged (or fail), and a provider whose revocations are. */
function fakes(recordFails = false) {
  const calls: string[] = [];
  const db = {
    execute: async () => {
      if (recordFails) throw new Error("database unavailable");
      calls.push("record");
      return { rows: [] };
    },
  } as unknown as Db;
  const oauth = {
    revokeGrant: async (grantId: string, subject: string) => {
      calls.push(`provider ${subject} ${grantId}`);
    },
  };
  return { calls, db, oauth };
}

describe("recordingRevoker", () => {
  it("records the revocation before the provider deletes the grant", async () => {
    const { calls, db, oauth } = fakes();
    await recordingRevoker(db, oauth)({ subject: "u_0123", grantId: "g1" });
    expect(calls).toEqual(["record", "provider u_0123 g1"]);
  });

  it("leaves the grant alone when the record fails, so the revocation can be retried", async () => {
    const { calls, db, oauth } = fakes(true);
    await expect(recordingRevoker(db, oauth)({ subject: "u_0123", grantId: "g1" })).rejects.toThrow(
      "database unavailable",
    );
    expect(calls).toEqual([]);
  });
});
