/**
 * The authorization server attacked the way a pentester would: every request written by an
 * attacker — a malicious registered client, another tenant, anyone on the network. Complements
 * refusals.test.ts (audience binding, revocations, PKCE, code reuse, CSRF of the form), with what
 * that file and web-red.test.ts do not try: stolen refresh tokens replayed after a rotation.
 */
import { beforeAll, describe, expect, it } from "vitest";
import type { TestUser } from "../helpers.ts";
import {
  authorizeUrl,
  codeFrom,
  pkce,
  rawToolsList,
  registerClient,
  type SignIn,
  setupApp,
  submitSignIn,
  tokenRequest,
} from "./oauth-client.ts";

/** Sign in on the page for `resource` and exchange the code: the client and its tokens. */
async function authorized(resource: string, signIn: SignIn, clientId?: string) {
  const client = clientId ?? (await registerClient());
  const { verifier, challenge } = await pkce();
  const code = await codeFrom(
    await submitSignIn(authorizeUrl({ client_id: client, code_challenge: challenge, resource }), signIn),
  );
  const res = await tokenRequest({
    grant_type: "authorization_code",
    code,
    code_verifier: verifier,
    client_id: client,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return { clientId: client, ...(res.body as { access_token: string; refresh_token: string }) };
}

const refresh = (clientId: string, refreshToken: string) =>
  tokenRequest({ grant_type: "refresh_token", refresh_token: refreshToken, client_id: clientId });

describe("the authorization server under attack", () => {
  let alice: TestUser;
  let url: string;
  let aliceSignIn: SignIn;

  beforeAll(async () => {
    ({ alice, url } = await setupApp());
    aliceSignIn = { mode: "end_user", email: alice.email, password: alice.password };
  });

  it("lets a rotated-out refresh token retry once, then takes its reuse for theft and revokes the grant", async () => {
    const { clientId, refresh_token: r1 } = await authorized(url, aliceSignIn);
    expect((await refresh(clientId, r1)).status).toBe(200);
    // The client's answer was lost in transit: it retries with the token it still has.
    const retried = await refresh(clientId, r1);
    expect(retried.status).toBe(200);
    expect((await rawToolsList(url, retried.body.access_token)).status).toBe(200);
    // A third use of r1 is no retry: one of its two holders is not the client.
    const replayed = await refresh(clientId, r1);
    expect(replayed.status).toBe(400);
    expect(replayed.body.error).toBe("invalid_grant");
    // Both lose what the grant issued.
    expect((await rawToolsList(url, retried.body.access_token)).status).toBe(401);
    expect((await refresh(clientId, retried.body.refresh_token)).body.error).toBe("invalid_grant");
  });

  it("revokes the grant when a refresh token older than the previous one comes back", async () => {
    const { clientId, refresh_token: r1 } = await authorized(url, aliceSignIn);
    const r2 = await refresh(clientId, r1);
    const r3 = await refresh(clientId, r2.body.refresh_token);
    expect(r3.status).toBe(200);
    const stolen = await refresh(clientId, r1);
    expect(stolen.status).toBe(400);
    expect(stolen.body.error).toBe("invalid_grant");
    expect((await rawToolsList(url, r3.body.access_token)).status).toBe(401);
    expect((await refresh(clientId, r3.body.refresh_token)).body.error).toBe("invalid_grant");
  });

  it("does not let a client that failed to authenticate revoke a grant by replaying its token", async () => {
    const { clientId, refresh_token: r1 } = await authorized(url, aliceSignIn);
    const r2 = await refresh(clientId, r1);
    const r3 = await refresh(clientId, r2.body.refresh_token);
    const unknownClient = await refresh("no-such-client", r1);
    expect(unknownClient.status).toBe(401);
    expect(unknownClient.body.error).toBe("invalid_client");
    expect((await rawToolsList(url, r3.body.access_token)).status).toBe(200);
  });
});
