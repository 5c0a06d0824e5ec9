/**
 * A revoked grant ends everywhere at once, not when Workers KV catches up. The authorization server
 * keeps grants and tokens in `OAUTH_KV`, whose reads at other Cloudflare locations may be up to 60 s
 * stale: there, right after a revocation, the grant record and its token records still read as
 * present. These tests revoke through the real paths (REST, the end user's own, the platform MCP's
 * tool, refresh reuse detection, RFC 7009), then put the grant's KV records back exactly as they
 * were — what such a location reads — and expect its tokens refused and its refresh token to give
 * nothing: the revocation is also recorded in Postgres (`revoked_oauth_grants`), which the one
 * statement resolving an OAuth caller checks (src/credentials/statement.ts), and so does the
 * liveness check at every refresh (src/oauth/server.ts `endDeadGrants`). An access token revoked alone (RFC 7009)
 * is recorded likewise (`revoked_oauth_tokens`), and refused by the same statement.
 */
import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { sha256Hex } from "../../../src/accounts/crypto.ts";
import { connectClient } from "../app-mcp/mcp-client.ts";
import {
  apiJson,
  endUserHeaders,
  mcpPostHeaders,
  requestRoundTrips,
  signupUser,
  type TestDeveloper,
  type TestUser,
  testDb,
} from "../helpers.ts";
import {
  authorized,
  authorizeUrl,
  BASE,
  call,
  codeFrom,
  listedGrantId,
  pkce,
  rawToolsList,
  registerClient,
  resultJson,
  type SignIn,
  setupApp,
  submitSignIn,
  tokenRequest,
} from "./oauth-client.ts";

/** Every KV record of the grant `token` names (the grant record and its token records), as stored. */
async function grantRecords(token: string): Promise<[string, string][]> {
  const [subject, grantId] = token.split(":");
  const grantKey = `grant:${subject}:${grantId}`;
  const { keys } = await env.OAUTH_KV.list({ prefix: `token:${subject}:${grantId}:` });
  const records: [string, string][] = [];
  for (const key of [grantKey, ...keys.map((k) => k.name)]) {
    const value = await env.OAUTH_KV.get(key);
    if (value !== null) records.push([key, value]);
  }
  expect(records.map(([key]) => key)).toContain(grantKey);
  expect(records.length).toBeGreaterThan(1);
  return records;
}

/** Put the records back: KV at a location that has not seen the revocation yet still reads them. */
async function staleKv(records: [string, string][]): Promise<void> {
  for (const [key, value] of records) await env.OAUTH_KV.put(key, value);
}

const refresh = (clientId: string, refreshToken: string) =>
  tokenRequest({ grant_type: "refresh_token", refresh_token: refreshToken, client_id: clientId });

/** A refresh of a revoked grant: refused, and no token comes out of it. */
async function expectRefreshRefused(clientId: string, refreshToken: string): Promise<void> {
  const res = await refresh(clientId, refreshToken);
  expect(res.status).toBe(400);
  expect(res.body.error).toBe("invalid_grant");
  expect(res.body.access_token).toBeUndefined();
}

/** An RFC 7009 revocation request at the token endpoint. */
const revoke = (fields: Record<string, string>) =>
  call("/oauth/token", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(fields),
  });

/** The provider's id for a token (SHA-256 of the whole token, hex): its KV key's last part. */
const tokenHash = (token: string): Promise<string> => sha256Hex(token);

const platformToolCall = (token: string, name: string, args: Record<string, unknown> = {}) =>
  call(`${BASE}/mcp`, {
    method: "POST",
    headers: mcpPostHeaders(token),
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }),
  });

describe("a revoked grant while KV elsewhere still holds it", () => {
  let dev: TestDeveloper;
  let alice: TestUser;
  let bob: TestUser;
  let url: string;
  let aliceSignIn: SignIn;

  beforeAll(async () => {
    ({ dev, alice, bob, url } = await setupApp());
    aliceSignIn = { mode: "end_user", email: alice.email, password: alice.password };
  });

  /** A new end user of the app, signed in on the page (each email has its own sign-in budget). */
  const freshSignIn = async (): Promise<SignIn> => {
    const user = await signupUser(dev.projectId, dev.clientKey);
    return { mode: "end_user", email: user.email, password: user.password };
  };

  it("developer revocation (REST): the token is refused, the refresh gives nothing, other grants work", async () => {
    const revoked = await authorized(url, aliceSignIn);
    const kept = await authorized(url, aliceSignIn);
    // Both used before (cached resolutions in this isolate).
    expect((await rawToolsList(url, revoked.access_token)).status).toBe(200);
    expect((await rawToolsList(url, kept.access_token)).status).toBe(200);
    const records = await grantRecords(revoked.access_token);
    const res = await apiJson(
      `/v1/admin/projects/${dev.projectId}/oauth/grants/${listedGrantId(revoked.access_token)}`,
      { method: "DELETE", token: dev.token },
    );
    expect(res.status).toBe(200);
    await staleKv(records);

    const refused = await rawToolsList(url, revoked.access_token);
    expect(refused.status).toBe(401);
    expect(refused.headers.get("www-authenticate")).toContain('error="invalid_token"');
    expect((await rawToolsList(url, kept.access_token)).status).toBe(200);
    await expectRefreshRefused(revoked.clientId, revoked.refresh_token);
    // The other grant refreshes into a working token.
    const next = await refresh(kept.clientId, kept.refresh_token);
    expect(next.status).toBe(200);
    expect((await rawToolsList(url, next.body.access_token)).status).toBe(200);
  });

  it("a refresh at the stale location right after the revocation mints no usable token", async () => {
    const grant = await authorized(url, aliceSignIn);
    const records = await grantRecords(grant.access_token);
    const res = await apiJson(
      `/v1/admin/projects/${dev.projectId}/oauth/grants/${listedGrantId(grant.access_token)}`,
      { method: "DELETE", token: dev.token },
    );
    expect(res.status).toBe(200);
    await staleKv(records);
    const refreshed = await refresh(grant.clientId, grant.refresh_token);
    // Whatever the token endpoint answers, no access token of this grant works.
    if (refreshed.status === 200)
      expect((await rawToolsList(url, refreshed.body.access_token)).status).toBe(401);
    expect(refreshed.status).toBe(400);
    expect((await rawToolsList(url, grant.access_token)).status).toBe(401);
  });

  it("end user revocation of their own grant", async () => {
    const bobSignIn: SignIn = { mode: "end_user", email: bob.email, password: bob.password };
    const grant = await authorized(url, bobSignIn);
    expect((await rawToolsList(url, grant.access_token)).status).toBe(200);
    const records = await grantRecords(grant.access_token);
    const res = await apiJson(`/v1/auth/oauth/grants/${listedGrantId(grant.access_token)}`, {
      method: "DELETE",
      headers: endUserHeaders(dev.clientKey, bob.sessionToken),
    });
    expect(res.status).toBe(200);
    await staleKv(records);
    expect((await rawToolsList(url, grant.access_token)).status).toBe(401);
    await expectRefreshRefused(grant.clientId, grant.refresh_token);
  });

  it("developer revocation through the platform MCP (amba_oauth_grants_revoke) of a developer grant", async () => {
    const grant = await authorized(url, { mode: "developer", developer_token: dev.token });
    expect((await rawToolsList(url, grant.access_token)).status).toBe(200);
    const records = await grantRecords(grant.access_token);
    const platform = await connectClient(`${BASE}/mcp`, { authorization: `Bearer ${dev.token}` });
    const revoked = resultJson(
      await platform.callTool({
        name: "amba_oauth_grants_revoke",
        arguments: { project_id: dev.projectId, grant_id: listedGrantId(grant.access_token) },
      }),
    );
    await platform.close();
    expect(revoked.revoked).toBe(true);
    await staleKv(records);
    expect((await rawToolsList(url, grant.access_token)).status).toBe(401);
    await expectRefreshRefused(grant.clientId, grant.refresh_token);
  });

  it("a grant revoked by refresh reuse detection", async () => {
    const { clientId, refresh_token: r1 } = await authorized(url, aliceSignIn);
    const r2 = await refresh(clientId, r1);
    const r3 = await refresh(clientId, r2.body.refresh_token);
    expect(r3.status).toBe(200);
    expect((await rawToolsList(url, r3.body.access_token)).status).toBe(200);
    const records = await grantRecords(r3.body.access_token);
    // r1, two rotations old: a replay, which revokes the grant.
    expect((await refresh(clientId, r1)).body.error).toBe("invalid_grant");
    await staleKv(records);
    expect((await rawToolsList(url, r3.body.access_token)).status).toBe(401);
    await expectRefreshRefused(clientId, r3.body.refresh_token);
  });

  it("a platform MCP grant its client revoked (RFC 7009, refresh token)", async () => {
    const grant = await authorized(`${BASE}/mcp`, { mode: "developer", developer_token: dev.token });
    expect((await platformToolCall(grant.access_token, "amba_whoami")).status).toBe(200);
    const records = await grantRecords(grant.access_token);
    const res = await call("/oauth/token", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        token: grant.refresh_token,
        token_type_hint: "refresh_token",
        client_id: grant.clientId,
      }),
    });
    expect(res.status).toBe(200);
    await staleKv(records);
    expect((await platformToolCall(grant.access_token, "amba_whoami")).status).toBe(401);
    await expectRefreshRefused(grant.clientId, grant.refresh_token);
  });

  it("a grant revoked by its code presented again (RFC 6749 §4.1.2)", async () => {
    const clientId = await registerClient();
    const { verifier, challenge } = await pkce();
    const code = await codeFrom(
      await submitSignIn(
        authorizeUrl({ client_id: clientId, code_challenge: challenge, resource: url }),
        aliceSignIn,
      ),
    );
    const exchange = { grant_type: "authorization_code", code, code_verifier: verifier, client_id: clientId };
    const first = await tokenRequest(exchange);
    expect(first.status).toBe(200);
    const records = await grantRecords(first.body.access_token);
    const replay = await tokenRequest(exchange);
    expect(replay.body.error).toBe("invalid_grant");
    await staleKv(records);
    expect((await rawToolsList(url, first.body.access_token)).status).toBe(401);
    await expectRefreshRefused(clientId, first.body.refresh_token);
  });

  it("revoking an access token alone (RFC 7009) leaves its grant usable", async () => {
    const grant = await authorized(url, aliceSignIn);
    const res = await call("/oauth/token", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token: grant.access_token, client_id: grant.clientId }),
    });
    expect(res.status).toBe(200);
    expect((await rawToolsList(url, grant.access_token)).status).toBe(401);
    const next = await refresh(grant.clientId, grant.refresh_token);
    expect(next.status).toBe(200);
    expect((await rawToolsList(url, next.body.access_token)).status).toBe(200);
  });

  it("an access token revoked alone (RFC 7009) is refused where KV still holds it; its grant lives on", async () => {
    const grant = await authorized(url, await freshSignIn());
    const other = await refresh(grant.clientId, grant.refresh_token);
    expect(other.status).toBe(200);
    expect((await rawToolsList(url, grant.access_token)).status).toBe(200);
    const records = await grantRecords(grant.access_token);
    const res = await revoke({ token: grant.access_token, client_id: grant.clientId });
    expect(res.status).toBe(200);
    await staleKv(records);
    // The token and grant records read as before the revocation, byte for byte.
    for (const [key, value] of records) expect(await env.OAUTH_KV.get(key)).toBe(value);
    const refused = await rawToolsList(url, grant.access_token);
    expect(refused.status).toBe(401);
    expect(refused.headers.get("www-authenticate")).toContain('error="invalid_token"');
    expect(await refused.text()).toContain("access token was revoked");
    // Only that token: the grant's other access token and its refresh token still work.
    expect((await rawToolsList(url, other.body.access_token)).status).toBe(200);
    const next = await refresh(grant.clientId, other.body.refresh_token);
    expect(next.status).toBe(200);
    expect((await rawToolsList(url, next.body.access_token)).status).toBe(200);
    // Kept until the token would have expired (its KV record's expiresAt), not longer.
    const [subject, grantId] = grant.access_token.split(":");
    const id = await tokenHash(grant.access_token);
    const record = records.find(([key]) => key === `token:${subject}:${grantId}:${id}`);
    expect(record).toBeDefined();
    const rows = await testDb().execute(sql`
      select extract(epoch from expires_at)::float8 as expires_at from revoked_oauth_tokens
      where token_id = ${id}
    `);
    expect(Number((rows.rows[0] as { expires_at: number }).expires_at)).toBe(
      (JSON.parse((record as [string, string])[1]) as { expiresAt: number }).expiresAt,
    );
  });

  it("an access token revoked alone through the platform MCP's token is refused there too", async () => {
    const grant = await authorized(`${BASE}/mcp`, { mode: "developer", developer_token: dev.token });
    expect((await platformToolCall(grant.access_token, "amba_whoami")).status).toBe(200);
    const records = await grantRecords(grant.access_token);
    expect((await revoke({ token: grant.access_token, client_id: grant.clientId })).status).toBe(200);
    await staleKv(records);
    expect((await platformToolCall(grant.access_token, "amba_whoami")).status).toBe(401);
    const next = await refresh(grant.clientId, grant.refresh_token);
    expect(next.status).toBe(200);
    expect((await platformToolCall(next.body.access_token, "amba_whoami")).status).toBe(200);
  });

  it("another client's revocation of an access token revokes and records nothing", async () => {
    const grant = await authorized(url, await freshSignIn());
    const stranger = await registerClient();
    expect((await revoke({ token: grant.access_token, client_id: stranger })).status).toBe(200);
    expect((await rawToolsList(url, grant.access_token)).status).toBe(200);
    const rows = await testDb().execute(sql`
      select 1 from revoked_oauth_tokens where token_id = ${await tokenHash(grant.access_token)}
    `);
    expect(rows.rows).toHaveLength(0);
  });

  it("keeps a revoked access token until it would have expired: each such revocation prunes expired ones", async () => {
    const tag = crypto.randomUUID();
    const db = testDb();
    await db.execute(sql`
      insert into revoked_oauth_tokens (token_id, expires_at) values
        (${`expired-${tag}`}, now() - interval '1 second'), (${`live-${tag}`}, now() + interval '1 minute')
    `);
    const grant = await authorized(url, await freshSignIn());
    const id = await tokenHash(grant.access_token);
    expect((await revoke({ token: grant.access_token, client_id: grant.clientId })).status).toBe(200);
    const rows = await db.execute(sql`
      select token_id from revoked_oauth_tokens where token_id in (${`expired-${tag}`}, ${`live-${tag}`}, ${id})
    `);
    expect(rows.rows.map((r) => (r as { token_id: string }).token_id).sort()).toEqual(
      [`live-${tag}`, id].sort(),
    );
  });

  it("a refresh token revoked without a hint (RFC 7009) ends the whole grant, also where KV is stale", async () => {
    const grant = await authorized(url, await freshSignIn());
    expect((await rawToolsList(url, grant.access_token)).status).toBe(200);
    const records = await grantRecords(grant.access_token);
    expect((await revoke({ token: grant.refresh_token, client_id: grant.clientId })).status).toBe(200);
    await staleKv(records);
    expect((await rawToolsList(url, grant.access_token)).status).toBe(401);
    await expectRefreshRefused(grant.clientId, grant.refresh_token);
  });

  it("a revocation sent with an empty grant_type (the provider's revocation all the same) is recorded too", async () => {
    // The provider takes a request without a grant type — `grant_type=` included — and with a
    // token for an RFC 7009 revocation, and revokes: the record must not depend on the spelling.
    const grant = await authorized(url, await freshSignIn());
    const other = await refresh(grant.clientId, grant.refresh_token);
    expect(other.status).toBe(200);
    const records = await grantRecords(grant.access_token);
    const alone = await revoke({ grant_type: "", token: grant.access_token, client_id: grant.clientId });
    expect(alone.status).toBe(200);
    await staleKv(records);
    expect((await rawToolsList(url, grant.access_token)).status).toBe(401);
    expect((await rawToolsList(url, other.body.access_token)).status).toBe(200);
    const rest = await grantRecords(other.body.access_token);
    const ended = await revoke({
      grant_type: "",
      token: other.body.refresh_token,
      client_id: grant.clientId,
    });
    expect(ended.status).toBe(200);
    await staleKv(rest);
    expect((await rawToolsList(url, other.body.access_token)).status).toBe(401);
    await expectRefreshRefused(grant.clientId, other.body.refresh_token);
  });

  it("the previous refresh token, revoked by its client, ends the grant too; another client's revocation ends nothing", async () => {
    const grant = await authorized(url, await freshSignIn());
    const rotated = await refresh(grant.clientId, grant.refresh_token);
    expect(rotated.status).toBe(200);
    // Another client presenting it: 200 (RFC 7009 §2.2), and the grant lives on.
    const stranger = await registerClient();
    expect(
      (await revoke({ token: grant.refresh_token, token_type_hint: "refresh_token", client_id: stranger }))
        .status,
    ).toBe(200);
    expect((await rawToolsList(url, rotated.body.access_token)).status).toBe(200);
    const records = await grantRecords(rotated.body.access_token);
    expect(
      (
        await revoke({
          token: grant.refresh_token,
          token_type_hint: "refresh_token",
          client_id: grant.clientId,
        })
      ).status,
    ).toBe(200);
    await staleKv(records);
    expect((await rawToolsList(url, rotated.body.access_token)).status).toBe(401);
    await expectRefreshRefused(grant.clientId, rotated.body.refresh_token);
  });

  it("checks the revocation in the one statement that resolves an OAuth caller (no added round trip)", async () => {
    const grant = await authorized(url, aliceSignIn);
    const spy = vi.spyOn(globalThis, "fetch");
    try {
      // A credential-cache miss: one statement (principal, project, config and revocation).
      expect((await rawToolsList(url, grant.access_token)).status).toBe(200);
      expect(requestRoundTrips(spy)).toBe(1);
      spy.mockClear();
      // Cached: none.
      expect((await rawToolsList(url, grant.access_token)).status).toBe(200);
      expect(requestRoundTrips(spy)).toBe(0);
    } finally {
      spy.mockRestore();
    }
  });

  it("keeps a revocation 31 days: each revocation prunes older ones, never younger", async () => {
    const tag = crypto.randomUUID();
    const db = testDb();
    await db.execute(sql`
      insert into revoked_oauth_grants (grant_id, revoked_at) values
        (${`old-${tag}`}, now() - interval '32 days'), (${`young-${tag}`}, now() - interval '30 days')
    `);
    const grant = await authorized(url, aliceSignIn);
    const res = await apiJson(
      `/v1/admin/projects/${dev.projectId}/oauth/grants/${listedGrantId(grant.access_token)}`,
      { method: "DELETE", token: dev.token },
    );
    expect(res.status).toBe(200);
    const rows = await db.execute(sql`
      select grant_id from revoked_oauth_grants
      where grant_id in (${`old-${tag}`}, ${`young-${tag}`}, ${grant.access_token.split(":")[1]})
    `);
    expect(rows.rows.map((r) => (r as { grant_id: string }).grant_id).sort()).toEqual(
      [`young-${tag}`, grant.access_token.split(":")[1]].sort(),
    );
  });
});
