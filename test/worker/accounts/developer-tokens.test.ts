/**
 * A developer's own tokens (/v1/admin/tokens and the `amba_tokens_*` platform tools): a new token
 * works at once, listings mark the caller's token and carry no secret, a revoked token is refused by
 * the admin REST routes, the app MCP, the platform MCP and the console — in this isolate at once,
 * though its app-MCP resolution was cached — and another developer's token is "not found".
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { MAX_LIVE_DEVELOPER_TOKENS } from "../../../src/accounts/developer-tokens.ts";
import { connectClient, resultJson } from "../app-mcp/mcp-client.ts";
import { api, apiJson, expectError, signupDeveloper, testDb } from "../helpers.ts";

const TOKENS = "/v1/admin/tokens";
const PLATFORM_MCP = "http://local/mcp";
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** Whether an SDK request failed with HTTP 401. */
const isUnauthorized = (err: unknown) => (err as { code?: number }).code === 401;

/** A tool call's parsed JSON result, failing on an `isError` result. */
// biome-ignore lint/suspicious/noExplicitAny: tests assert the shape
async function tool(client: Client, name: string, args: Record<string, unknown> = {}): Promise<any> {
  const result = await client.callTool({ name, arguments: args });
  expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
  return resultJson(result);
}

/** Whether the console, signed in with `token` as its cookie, shows the developer's pages. */
async function consoleSignedIn(token: string, email: string): Promise<boolean> {
  const res = await api("/console", { headers: { cookie: `amba_console=${token}` } });
  return (await res.text()).includes(email);
}

describe("/v1/admin/tokens", () => {
  it("creates a working token, lists both without secrets, and revokes the old one everywhere", async () => {
    const dev = await signupDeveloper();
    const appMcp = `http://local/app/${dev.projectId}/mcp`;
    // The old token's app-MCP and platform-MCP connections, made before the revocation.
    const oldApp = await connectClient(appMcp, bearer(dev.token));
    const oldPlatform = await connectClient(PLATFORM_MCP, bearer(dev.token));
    expect(await consoleSignedIn(dev.token, dev.email)).toBe(true);

    const created = await apiJson(TOKENS, { token: dev.token, json: { name: "laptop" } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      id: expect.any(String),
      name: "laptop",
      revoked: false,
      current: false,
      token: expect.stringMatching(/^amba_dev_/),
    });
    const fresh = created.body.token as string;
    expect((await apiJson("/v1/admin/projects", { token: fresh })).status).toBe(200);

    const list = await apiJson(TOKENS, { token: fresh });
    expect(list.status).toBe(200);
    const tokens = list.body.tokens as { id: string; name: string; current: boolean }[];
    expect(tokens.map((t) => [t.name, t.current])).toEqual([
      ["default", false],
      ["laptop", true],
    ]);
    for (const t of tokens)
      expect(Object.keys(t).sort()).toEqual(["created_at", "current", "id", "name", "revoked", "revoked_at"]);
    const text = JSON.stringify(list.body);
    for (const secret of [dev.token.slice(-43), fresh.slice(-43)]) expect(text).not.toContain(secret);
    const { rows } = await testDb().execute(
      sql`select secret_hash from developer_tokens where developer_id = ${dev.developerId}::uuid`,
    );
    for (const row of rows as { secret_hash: string }[]) expect(text).not.toContain(row.secret_hash);
    const oldId = tokens[0]?.id as string;

    await oldApp.listTools(); // its resolution is in the isolate's credential cache now
    const revoked = await apiJson(`${TOKENS}/${oldId}`, { token: fresh, method: "DELETE" });
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({
      id: oldId,
      revoked: true,
      revoked_at: expect.any(String),
      current: false,
    });
    const again = await apiJson(`${TOKENS}/${oldId}`, { token: fresh, method: "DELETE" });
    expect(again.body.revoked_at).toBe(revoked.body.revoked_at);

    // The old token: refused on REST, the app MCP (its resolution was cached), the platform MCP, the console.
    expectError(await apiJson("/v1/admin/projects", { token: dev.token }), 401);
    await expect(oldApp.listTools()).rejects.toSatisfy(isUnauthorized);
    await expect(oldPlatform.callTool({ name: "amba_whoami", arguments: {} })).rejects.toSatisfy(
      isUnauthorized,
    );
    await expect(connectClient(PLATFORM_MCP, bearer(dev.token))).rejects.toSatisfy(isUnauthorized);
    expect(await consoleSignedIn(dev.token, dev.email)).toBe(false);
    // The new one still works everywhere.
    expect((await apiJson("/v1/admin/projects", { token: fresh })).status).toBe(200);
    const newApp = await connectClient(appMcp, bearer(fresh));
    await newApp.listTools();
    expect(await consoleSignedIn(fresh, dev.email)).toBe(true);
    await Promise.all([oldApp.close(), oldPlatform.close(), newApp.close()]);
  });

  it("lets a token revoke itself while another live token remains", async () => {
    const dev = await signupDeveloper();
    const spare = await apiJson(TOKENS, { token: dev.token, json: { name: "spare" } });
    const [own] = (await apiJson(TOKENS, { token: dev.token })).body.tokens;
    expect(own.current).toBe(true);
    const revoked = await apiJson(`${TOKENS}/${own.id}`, { token: dev.token, method: "DELETE" });
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ id: own.id, revoked: true, current: true });
    expectError(await apiJson(TOKENS, { token: dev.token }), 401);
    expect((await apiJson(TOKENS, { token: spare.body.token })).status).toBe(200);
  });

  it("refuses to revoke the last live token (409): there is no other way back into the account", async () => {
    const dev = await signupDeveloper();
    const [own] = (await apiJson(TOKENS, { token: dev.token })).body.tokens;
    const refused = await apiJson(`${TOKENS}/${own.id}`, { token: dev.token, method: "DELETE" });
    expectError(refused, 409, "last live developer token");
    expect(refused.body.error.code).toBe("conflict");
    const [still] = (await apiJson(TOKENS, { token: dev.token })).body.tokens;
    expect(still).toMatchObject({ id: own.id, revoked: false, revoked_at: null });

    // With a second token the first may go; then the second is the last one.
    const spare = await apiJson(TOKENS, { token: dev.token, json: { name: "spare" } });
    expect((await apiJson(`${TOKENS}/${own.id}`, { token: spare.body.token, method: "DELETE" })).status).toBe(
      200,
    );
    expectError(
      await apiJson(`${TOKENS}/${spare.body.id}`, { token: spare.body.token, method: "DELETE" }),
      409,
      "last live developer token",
    );
    // Revoking an already revoked token stays idempotent.
    const again = await apiJson(`${TOKENS}/${own.id}`, { token: spare.body.token, method: "DELETE" });
    expect(again.status).toBe(200);
    expect((await apiJson("/v1/admin/projects", { token: spare.body.token })).status).toBe(200);
  });

  it("two tokens revoking each other at once: one revocation wins, one token stays live", async () => {
    const dev = await signupDeveloper();
    const spare = await apiJson(TOKENS, { token: dev.token, json: { name: "spare" } });
    const [own] = (await apiJson(TOKENS, { token: dev.token })).body.tokens;
    const results = await Promise.all([
      apiJson(`${TOKENS}/${spare.body.id}`, { token: dev.token, method: "DELETE" }),
      apiJson(`${TOKENS}/${own.id}`, { token: spare.body.token, method: "DELETE" }),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
    const { rows } = await testDb().execute(
      sql`select count(*)::int as live from developer_tokens where developer_id = ${dev.developerId}::uuid and revoked_at is null`,
    );
    expect(rows[0]).toEqual({ live: 1 });
  });

  it("answers 404 for another developer's, unknown and malformed token ids", async () => {
    const dev = await signupDeveloper();
    const other = await signupDeveloper();
    const [theirs] = (await apiJson(TOKENS, { token: other.token })).body.tokens;
    const mine = (await apiJson(TOKENS, { token: dev.token })).body.tokens;
    expect(mine.map((t: { id: string }) => t.id)).not.toContain(theirs.id);
    const unknown = await apiJson(`${TOKENS}/${crypto.randomUUID()}`, { token: dev.token, method: "DELETE" });
    expectError(unknown, 404);
    const foreign = await apiJson(`${TOKENS}/${theirs.id}`, { token: dev.token, method: "DELETE" });
    expect(foreign).toEqual({ status: 404, body: unknown.body });
    expectError(await apiJson(`${TOKENS}/nope`, { token: dev.token, method: "DELETE" }), 404);
    expect((await apiJson(TOKENS, { token: other.token })).status).toBe(200);
    expectError(await apiJson(TOKENS, { token: dev.token, json: { name: "" } }), 400, "name");
  });

  it(`holds at most ${MAX_LIVE_DEVELOPER_TOKENS} live tokens; a revoked one frees a place`, async () => {
    const dev = await signupDeveloper();
    const ids: string[] = [];
    for (let i = 1; i < MAX_LIVE_DEVELOPER_TOKENS; i++) {
      const res = await apiJson(TOKENS, { token: dev.token, method: "POST" });
      expect(res.status).toBe(201);
      ids.push(res.body.id);
    }
    const over = await apiJson(TOKENS, { token: dev.token, method: "POST" });
    expectError(over, 403);
    expect(over.body.error.code).toBe("quota_exceeded");
    await apiJson(`${TOKENS}/${ids[0]}`, { token: dev.token, method: "DELETE" });
    expect((await apiJson(TOKENS, { token: dev.token, method: "POST" })).status).toBe(201);
  });
});

describe("amba_tokens_* platform tools", () => {
  it("create, list and revoke through the platform MCP", async () => {
    const dev = await signupDeveloper();
    const first = await connectClient(PLATFORM_MCP, bearer(dev.token));
    const created = await tool(first, "amba_tokens_create", { name: "agent" });
    expect(created).toMatchObject({
      name: "agent",
      current: false,
      token: expect.stringMatching(/^amba_dev_/),
    });
    const second = await connectClient(PLATFORM_MCP, bearer(created.token));
    const { tokens } = await tool(second, "amba_tokens_list");
    expect(tokens.map((t: { name: string; current: boolean }) => [t.name, t.current])).toEqual([
      ["default", false],
      ["agent", true],
    ]);
    expect(JSON.stringify(tokens)).not.toContain(created.token.slice(-43));
    const revoked = await tool(second, "amba_tokens_revoke", { token_id: tokens[0].id });
    expect(revoked).toMatchObject({ id: tokens[0].id, revoked: true });
    await expect(first.callTool({ name: "amba_tokens_list", arguments: {} })).rejects.toSatisfy(
      isUnauthorized,
    );
    const foreign = await signupDeveloper();
    const outsider = await connectClient(PLATFORM_MCP, bearer(foreign.token));
    const result = await outsider.callTool({
      name: "amba_tokens_revoke",
      arguments: { token_id: created.id },
    });
    expect(result.isError).toBe(true);
    expect(resultJson(result).error.code).toBe("not_found");
    expect((await tool(second, "amba_whoami")).developer.id).toBe(dev.developerId);
    // The caller's token is now the developer's last live one: revoking it is an isError result.
    const last = await second.callTool({ name: "amba_tokens_revoke", arguments: { token_id: created.id } });
    expect(last.isError).toBe(true);
    expect(resultJson(last).error).toMatchObject({
      code: "conflict",
      message: expect.stringContaining("last live developer token"),
    });
    expect((await tool(second, "amba_whoami")).developer.id).toBe(dev.developerId);
    await Promise.all([first.close(), second.close(), outsider.close()]);
  });
});
