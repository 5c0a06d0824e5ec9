/**
 * An access token lives no longer than its grant. The provider revokes a grant by listing the
 * grant's token records (`token:<subject>:<grant>:…`) and deleting each, then the grant record; KV
 * lists are eventually consistent, so a token issued moments earlier elsewhere (a refresh at another
 * location) can be missing from that list and survive, valid for the rest of its hour. These tests
 * leave exactly that state behind — the token record present, the grant record gone — and expect
 * the token refused on both MCP endpoints (src/oauth/server.ts `validateAccessToken`).
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { mcpPostHeaders, type TestDeveloper, type TestUser } from "../helpers.ts";
import { authorized, BASE, call, rawToolsList, type SignIn, setupApp } from "./oauth-client.ts";

/** Delete the grant record a token names, as a revocation does, and leave its token records. */
async function dropGrantRecordOnly(token: string): Promise<void> {
  const [subject, grantId] = token.split(":");
  const { keys } = await env.OAUTH_KV.list({ prefix: `token:${subject}:${grantId}:` });
  expect(keys.length).toBeGreaterThan(0);
  await env.OAUTH_KV.delete(`grant:${subject}:${grantId}`);
}

describe("an access token whose grant is gone", () => {
  let dev: TestDeveloper;
  let alice: TestUser;
  let url: string;

  beforeAll(async () => {
    ({ dev, alice, url } = await setupApp());
  });

  it("is refused at the app MCP though its token record survived the revocation", async () => {
    const signIn: SignIn = { mode: "end_user", email: alice.email, password: alice.password };
    const live = (await authorized(url, signIn)).access_token;
    expect((await rawToolsList(url, live)).status).toBe(200);
    // A second grant's token, never presented before (no cached resolution in this isolate).
    const orphan = (await authorized(url, signIn)).access_token;
    await dropGrantRecordOnly(orphan);
    const res = await rawToolsList(url, orphan);
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toContain('error="invalid_token"');
  });

  it("is refused at the platform MCP though its token record survived the revocation", async () => {
    const platform = `${BASE}/mcp`;
    const orphan = (await authorized(platform, { mode: "developer", developer_token: dev.token }))
      .access_token;
    await dropGrantRecordOnly(orphan);
    const res = await call(platform, {
      method: "POST",
      headers: mcpPostHeaders(orphan),
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "amba_whoami", arguments: {} },
      }),
    });
    expect(res.status).toBe(401);
  });
});
