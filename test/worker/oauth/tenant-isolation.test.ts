/**
 * One tenant's OAuth grants out of another's reach, probed the way an attacker would: another
 * developer's or app's ids in the path and in tool arguments, a listed grant id with a forged
 * `<subject>.` prefix, a grant listing resumed with another project's cursor (or a forged one),
 * another tenant's credentials on an app's sign-in page, a code redeemed by another client, and
 * a refresh token forged from another grant's subject and id — which must not let a stranger's
 * client end that grant through refresh reuse detection (src/oauth/refresh-reuse.ts).
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { beforeAll, describe, expect, it } from "vitest";
import { connectClient } from "../app-mcp/mcp-client.ts";
import { apiJson, endUserHeaders, signupUser, type TestDeveloper, type TestUser } from "../helpers.ts";
import {
  type Authorized,
  authorized,
  authorizeUrl,
  BASE,
  call,
  codeFrom,
  listedGrantId,
  pkce,
  REDIRECT_URI,
  rawToolsList,
  registerClient,
  type SignIn,
  setupApp,
  signedInCode,
  submitSignIn,
  tokenRequest,
} from "./oauth-client.ts";

const signInOf = (user: TestUser): SignIn => ({
  mode: "end_user",
  email: user.email,
  password: user.password,
});

const NOT_FOUND = { error: { code: "not_found", message: "grant not found" } };

describe("OAuth grants across tenants", () => {
  let p: { dev: TestDeveloper; alice: TestUser; bob: TestUser; url: string };
  let q: { dev: TestDeveloper; alice: TestUser; bob: TestUser; url: string };
  let alice: Authorized;
  let carol: Authorized;

  beforeAll(async () => {
    [p, q] = await Promise.all([setupApp(), setupApp()]);
    [alice, carol] = await Promise.all([
      authorized(p.url, signInOf(p.alice)),
      authorized(q.url, signInOf(q.alice)),
    ]);
  });

  /** Whether these grants' access tokens still work at their app MCP. */
  async function stillLive() {
    expect((await rawToolsList(p.url, alice.access_token)).status).toBe(200);
    expect((await rawToolsList(q.url, carol.access_token)).status).toBe(200);
  }

  it("another developer's project in the path: listing and revoking are 404, the grant lives", async () => {
    const theirs = `/v1/admin/projects/${q.dev.projectId}/oauth/grants`;
    expect((await apiJson(theirs, { token: p.dev.token })).status).toBe(404);
    const revoke = await apiJson(`${theirs}/${listedGrantId(carol.access_token)}`, {
      method: "DELETE",
      token: p.dev.token,
    });
    expect(revoke.status).toBe(404);
    // Their grant's id under my project: the grant record names its project, not the path.
    const mine = await apiJson(
      `/v1/admin/projects/${p.dev.projectId}/oauth/grants/${listedGrantId(carol.access_token)}`,
      { method: "DELETE", token: p.dev.token },
    );
    expect(mine).toEqual({ status: 404, body: NOT_FOUND });
    await stillLive();
  });

  it("another developer's project in amba_oauth_grants_* arguments: an isError result, the grant lives", async () => {
    const platform: Client = await connectClient(`${BASE}/mcp`, { authorization: `Bearer ${p.dev.token}` });
    const listed = await platform.callTool({
      name: "amba_oauth_grants_list",
      arguments: { project_id: q.dev.projectId },
    });
    expect(listed.isError).toBe(true);
    expect(JSON.stringify(listed.content)).not.toContain(listedGrantId(carol.access_token));
    for (const project_id of [q.dev.projectId, p.dev.projectId]) {
      const revoked = await platform.callTool({
        name: "amba_oauth_grants_revoke",
        arguments: { project_id, grant_id: listedGrantId(carol.access_token) },
      });
      expect(revoked.isError, project_id).toBe(true);
    }
    await platform.close();
    await stillLive();
  });

  it("an end user's revocation with another user's grant id under a forged prefix is 404", async () => {
    const [aliceSubject, aliceGrant] = listedGrantId(alice.access_token).split(".") as [string, string];
    const bobSubject = `u_${p.bob.userId.replaceAll("-", "")}`;
    const carolSubject = listedGrantId(carol.access_token).split(".")[0] as string;
    const asBob = endUserHeaders(p.dev.clientKey, p.bob.sessionToken);
    for (const forged of [
      `${bobSubject}.${aliceGrant}`, // my subject, her grant id
      `${aliceSubject}.${aliceGrant}`, // her listed id, as it is
      listedGrantId(carol.access_token), // another app's user's grant
      `${carolSubject}.${aliceGrant}`,
    ]) {
      const res = await apiJson(`/v1/auth/oauth/grants/${encodeURIComponent(forged)}`, {
        method: "DELETE",
        headers: asBob,
      });
      expect(res, forged).toEqual({ status: 404, body: NOT_FOUND });
    }
    // Another app's end user with her listed id: the same 404.
    const asQ = endUserHeaders(q.dev.clientKey, q.bob.sessionToken);
    const foreign = await apiJson(`/v1/auth/oauth/grants/${listedGrantId(alice.access_token)}`, {
      method: "DELETE",
      headers: asQ,
    });
    expect(foreign).toEqual({ status: 404, body: NOT_FOUND });
    expect((await apiJson("/v1/auth/oauth/grants", { headers: asBob })).body).toEqual({ grants: [] });
    await stillLive();
  });

  it("a listing resumed with another project's cursor, or one forged from its keys, shows none of its grants", async () => {
    // Two more users of Q, so that Q's listing has a next page.
    const more = await Promise.all(
      [0, 1].map(async () => authorized(q.url, signInOf(await signupUser(q.dev.projectId, q.dev.clientKey)))),
    );
    const qList = await apiJson(`/v1/admin/projects/${q.dev.projectId}/oauth/grants?limit=1`, {
      token: q.dev.token,
    });
    expect(qList.status).toBe(200);
    const qCursor = qList.body.next_cursor as string;
    expect(typeof qCursor).toBe("string");
    const qIds = [carol, ...more].map((a) => listedGrantId(a.access_token));
    const prefix = `amba-oauth:project:${q.dev.projectId}:`;
    for (const cursor of [qCursor, btoa(prefix), btoa(`${prefix}u_`), btoa("amba-oauth:project:")]) {
      const res = await apiJson(
        `/v1/admin/projects/${p.dev.projectId}/oauth/grants?cursor=${encodeURIComponent(cursor)}`,
        { token: p.dev.token },
      );
      expect([200, 400], cursor).toContain(res.status);
      const text = JSON.stringify(res.body);
      for (const id of qIds) expect(text, cursor).not.toContain(id);
      expect(text).not.toContain(q.alice.userId);
      if (res.status === 200)
        for (const grant of res.body.grants as { resource: string }[]) expect(grant.resource).toBe(p.url);
    }
  });

  it("another tenant's credentials on this app's sign-in page, and this app's code at another client: refused", async () => {
    const clientId = await registerClient();
    const { verifier, challenge } = await pkce();
    const page = authorizeUrl({ client_id: clientId, code_challenge: challenge, resource: p.url });
    const asOtherDeveloper = await submitSignIn(page, { mode: "developer", developer_token: q.dev.token });
    expect(asOtherDeveloper.status).toBe(401);
    expect(asOtherDeveloper.headers.get("location")).toBeNull();
    const asOtherAppsUser = await submitSignIn(page, signInOf(q.alice));
    expect(asOtherAppsUser.status).toBe(401);
    expect(asOtherAppsUser.headers.get("location")).toBeNull();
    const listed = await apiJson(`/v1/admin/projects/${p.dev.projectId}/oauth/grants`, {
      token: p.dev.token,
    });
    const text = JSON.stringify(listed.body);
    expect(text).not.toContain(q.dev.developerId);
    expect(text).not.toContain(q.alice.userId);

    // A code issued to one client, redeemed (with the right verifier) by another: no tokens.
    const code = await codeFrom(await submitSignIn(page, signInOf(p.bob)));
    const stolen = await tokenRequest({
      grant_type: "authorization_code",
      code,
      code_verifier: verifier,
      client_id: await registerClient(),
    });
    expect(stolen.status).toBe(400);
    expect(stolen.body.error).toBe("invalid_grant");
    expect(stolen.body.access_token).toBeUndefined();
  });

  it("a refresh token forged from another grant's subject and id, sent by a stranger's client, ends nothing", async () => {
    const [subject, grantId] = alice.access_token.split(":") as [string, string];
    const stranger = await registerClient();
    const forged = `${subject}:${grantId}:${"x".repeat(32)}`;
    const res = await tokenRequest({
      grant_type: "refresh_token",
      refresh_token: forged,
      client_id: stranger,
    });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("invalid_grant");
    // Her grant was not taken for a stolen one: its access and refresh tokens still work.
    await stillLive();
    const rotate = async (refreshToken: string) => {
      const r = await tokenRequest({
        grant_type: "refresh_token",
        refresh_token: refreshToken,
        client_id: alice.clientId,
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body as { access_token: string; refresh_token: string };
    };
    const first = alice.refresh_token;
    alice = { ...alice, ...(await rotate(await rotate(first).then((t) => t.refresh_token))) };
    // Her real refresh token, rotated out twice (what reuse detection takes for theft), presented
    // by a stranger's client: refused as not that client's, and the grant lives on.
    const replay = await tokenRequest({
      grant_type: "refresh_token",
      refresh_token: first,
      client_id: stranger,
    });
    expect(replay.body.error).toBe("invalid_grant");
    await stillLive();
  });

  it("the grant's own confidential client (HTTP Basic) replaying a rotated-out token still ends the grant", async () => {
    const registered = await call("/oauth/register", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        client_name: "Basic Client",
        redirect_uris: [REDIRECT_URI],
        token_endpoint_auth_method: "client_secret_basic",
        grant_types: ["authorization_code", "refresh_token"],
      }),
    });
    expect(registered.status).toBe(201);
    const { client_id, client_secret } = (await registered.json()) as Record<string, string>;
    const basic = `Basic ${btoa(`${encodeURIComponent(client_id as string)}:${encodeURIComponent(client_secret as string)}`)}`;
    const token = async (fields: Record<string, string>) => {
      const res = await call("/oauth/token", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", authorization: basic },
        body: new URLSearchParams(fields),
      });
      return { status: res.status, body: (await res.json()) as Record<string, string> };
    };
    const { verifier, challenge } = await pkce();
    const code = await signedInCode(
      { client_id: client_id as string, code_challenge: challenge, resource: p.url },
      signInOf(p.bob),
    );
    const issued = await token({ grant_type: "authorization_code", code, code_verifier: verifier });
    expect(issued.status, JSON.stringify(issued.body)).toBe(200);
    const r1 = issued.body.refresh_token as string;
    const r2 = await token({ grant_type: "refresh_token", refresh_token: r1 });
    const r3 = await token({ grant_type: "refresh_token", refresh_token: r2.body.refresh_token as string });
    expect(r3.status).toBe(200);
    expect((await rawToolsList(p.url, r3.body.access_token as string)).status).toBe(200);
    const replay = await token({ grant_type: "refresh_token", refresh_token: r1 });
    expect(replay.body.error).toBe("invalid_grant");
    expect((await rawToolsList(p.url, r3.body.access_token as string)).status).toBe(401);
  });
});
