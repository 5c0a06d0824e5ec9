/** What the provider revoked on its own in answering a token request (src/oauth/revocations.ts): literals in and out. */
import { describe, expect, it } from "vitest";
import { revokedAccessToken, revokedByProvider } from "../../../src/oauth/revocations.ts";

const form = (fields: Record<string, string>): FormData => {
  const data = new FormData();
  for (const [name, value] of Object.entries(fields)) data.set(name, value);
  return data;
};

/** Tokens and their hex SHA-256, as the provider stores them on the grant. */
const CURRENT = "u_0123:g1:current";
const PREVIOUS = "u_0123:g1:previous";
const CODE = "u_0123:g1:code";
const GRANT = {
  clientId: "client-1",
  refreshTokenId: "8b5884d39d36184b91b5a562ccc87a6190d4ba6f0cdad40aef276aca883bf3ae",
  previousRefreshTokenId: "40651f9c8b1e493bc6e561696af0dec570d90cd07873e65a1358fcc650416204",
  authCodeId: "4032615ae0977e2ba8380e46f7c7937d9e445ec7c6b8fd554f5077df891e8335",
};

const ok = () => new Response("", { status: 200 });
const invalidGrant = () => Response.json({ error: "invalid_grant" }, { status: 400 });

describe("revokedByProvider", () => {
  it("is true when the grant's client revokes its current or previous refresh token (answered 200)", async () => {
    const revocation = form({ token: CURRENT });
    expect(await revokedByProvider(revocation, CURRENT, GRANT, "client-1", ok())).toBe(true);
    expect(await revokedByProvider(form({ token: PREVIOUS }), PREVIOUS, GRANT, "client-1", ok())).toBe(true);
    expect(await revokedByProvider(null, CURRENT, GRANT, "client-1", ok())).toBe(true);
    // An empty grant type is none: the provider takes the request for a revocation.
    const empty = form({ grant_type: "", token: CURRENT });
    expect(await revokedByProvider(empty, CURRENT, GRANT, "client-1", ok())).toBe(true);
  });

  it("is false for another client, no client, another answer, or a token that is no refresh token of the grant", async () => {
    const revocation = form({ token: CURRENT });
    expect(await revokedByProvider(revocation, CURRENT, GRANT, "client-2", ok())).toBe(false);
    expect(await revokedByProvider(revocation, CURRENT, GRANT, null, ok())).toBe(false);
    const unauthorized = Response.json({ error: "invalid_client" }, { status: 401 });
    expect(await revokedByProvider(revocation, CURRENT, GRANT, "client-1", unauthorized)).toBe(false);
    expect(await revokedByProvider(form({ token: CODE }), CODE, GRANT, "client-1", ok())).toBe(false);
  });

  it("is true when the grant's client replays its exchanged code (answered invalid_grant)", async () => {
    const exchange = form({ grant_type: "authorization_code", code: CODE });
    expect(await revokedByProvider(exchange, CODE, GRANT, "client-1", invalidGrant())).toBe(true);
  });

  it("is false for a code not yet exchanged, another code, another error, or another grant type", async () => {
    const exchange = form({ grant_type: "authorization_code", code: CODE });
    const unexchanged = { ...GRANT, authCodeWrappedKey: "wrapped" };
    expect(await revokedByProvider(exchange, CODE, unexchanged, "client-1", invalidGrant())).toBe(false);
    expect(await revokedByProvider(exchange, CURRENT, GRANT, "client-1", invalidGrant())).toBe(false);
    const invalidRequest = Response.json({ error: "invalid_request" }, { status: 400 });
    expect(await revokedByProvider(exchange, CODE, GRANT, "client-1", invalidRequest)).toBe(false);
    const refresh = form({ grant_type: "refresh_token", refresh_token: CURRENT });
    expect(await revokedByProvider(refresh, CURRENT, GRANT, "client-1", invalidGrant())).toBe(false);
  });
});

describe("revokedAccessToken", () => {
  const NOW = 1_750_000_000_000;
  const record = { expiresAt: NOW / 1000 + 600, grant: { clientId: "client-1" } };
  const revocation = form({ token: "u_0123:g1:access" });

  it("is true for an unexpired access token of the requesting client, revoked alone (answered 200)", () => {
    expect(revokedAccessToken(revocation, record, GRANT, "client-1", ok(), NOW)).toBe(true);
    const empty = form({ grant_type: "", token: "u_0123:g1:access" });
    expect(revokedAccessToken(empty, record, GRANT, "client-1", ok(), NOW)).toBe(true);
    // A record without its grant's client is the grant's.
    expect(
      revokedAccessToken(revocation, { expiresAt: record.expiresAt }, GRANT, "client-1", ok(), NOW),
    ).toBe(true);
  });

  it("is false for no record, another client, another answer, a grant type, or an expired token", () => {
    expect(revokedAccessToken(revocation, null, GRANT, "client-1", ok(), NOW)).toBe(false);
    expect(revokedAccessToken(revocation, record, GRANT, "client-2", ok(), NOW)).toBe(false);
    expect(revokedAccessToken(revocation, record, GRANT, null, ok(), NOW)).toBe(false);
    const unauthorized = Response.json({ error: "invalid_client" }, { status: 401 });
    expect(revokedAccessToken(revocation, record, GRANT, "client-1", unauthorized, NOW)).toBe(false);
    const refresh = form({ grant_type: "refresh_token", token: "u_0123:g1:access" });
    expect(revokedAccessToken(refresh, record, GRANT, "client-1", ok(), NOW)).toBe(false);
    expect(
      revokedAccessToken(revocation, { ...record, expiresAt: NOW / 1000 }, GRANT, "client-1", ok(), NOW),
    ).toBe(false);
    expect(
      revokedAccessToken(revocation, { grant: { clientId: "client-1" } }, GRANT, "client-1", ok(), NOW),
    ).toBe(false);
  });
});
