/**
 * Red team as a legitimate tenant (its own developer, project, client key and end users) trying to
 * reach another tenant, starve it, or make the service answer 500. One regression test per hole
 * found (each failed before its fix); the attacks that were already blocked are listed in the
 * report of the branch, not repeated here (tenants.test.ts, hostile.test.ts and the other audit
 * files cover them). Every case makes its own developers and projects.
 */
import { describe, expect, it } from "vitest";
import { apiJson, expectError, signupDeveloper } from "./helpers.ts";

describe("edge red team", () => {
  it("refuses a column named after a property every JavaScript object has (was a 500 on every insert, find and aggregate)", async () => {
    const dev = await signupDeveloper();
    const collections = `/v1/admin/projects/${dev.projectId}/collections`;
    const columns = [{ name: "constructor", type: "text" }];
    expectError(
      await apiJson(collections, { token: dev.token, json: { name: "notes", columns } }),
      400,
      '"constructor" is reserved',
    );
    const made = await apiJson(collections, {
      token: dev.token,
      json: { name: "notes", columns: [{ name: "body", type: "text" }] },
    });
    expect(made.status).toBe(201);
    expectError(
      await apiJson(`${collections}/notes`, {
        token: dev.token,
        method: "PATCH",
        json: { add_columns: columns },
      }),
      400,
      '"constructor" is reserved',
    );
    // A collection of that name is fine: collections are looked up in maps, never on plain objects.
    const named = await apiJson(collections, {
      token: dev.token,
      json: { name: "constructor", columns: [{ name: "body", type: "text" }] },
    });
    expect(named.status).toBe(201);
    const rows = `/v1/projects/${dev.projectId}/collections/constructor/rows`;
    expect((await apiJson(rows, { token: dev.token, json: { body: "x" } })).status).toBe(201);
  });
});
