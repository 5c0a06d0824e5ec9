/** A token request as read beside the provider (src/oauth/token-request.ts): pure, literals in and out. */
import { describe, expect, it } from "vitest";
import {
  assertionIssuer,
  oauthErrorCode,
  oversizedTokenRequest,
  presentedToken,
  requestClientId,
  tokenRequestForm,
} from "../../../src/oauth/token-request.ts";

const form = (fields: Record<string, string>): FormData => {
  const data = new FormData();
  for (const [name, value] of Object.entries(fields)) data.set(name, value);
  return data;
};

/** A JWT whose payload is `{"iss":"https://client.example/c.json"}` (header and signature unread). */
const ASSERTION = "e30.eyJpc3MiOiJodHRwczovL2NsaWVudC5leGFtcGxlL2MuanNvbiJ9.sig";

describe("requestClientId", () => {
  it("reads Basic credentials first, form-decoded (RFC 6749 §2.3.1)", () => {
    // `https%3A%2F%2Fclient.example%2Fc.json:secret`
    const basic = "Basic aHR0cHMlM0ElMkYlMkZjbGllbnQuZXhhbXBsZSUyRmMuanNvbjpzZWNyZXQ=";
    expect(requestClientId(form({ client_id: "other" }), basic)).toBe("https://client.example/c.json");
    // `my+client:secret`: `+` is a space in a form-encoded client id.
    expect(requestClientId(null, "  basic\tbXkrY2xpZW50OnNlY3JldA==  ")).toBe("my client");
  });

  it("is null for Basic credentials whose client id is not form-decodable", () => {
    // `%E0%A4%A:x`
    expect(requestClientId(form({ client_id: "c1" }), "Basic JUUwJUE0JUE6eA==")).toBeNull();
  });

  it("reads the form past a Basic header that is not base64 (the provider refuses the request)", () => {
    expect(requestClientId(form({ client_id: "c1" }), "Basic !!!")).toBe("c1");
    expect(requestClientId(form({ client_id: "c1" }), "Basic two words")).toBe("c1");
  });

  it("takes an empty id from Basic credentials without a colon, as sent (the provider refuses them)", () => {
    expect(requestClientId(form({ client_id: "c1" }), "Basic bm9jb2xvbg==")).toBe("");
  });

  it("reads client_id next, then a client assertion's iss", () => {
    expect(requestClientId(form({ client_id: "c1", client_assertion: ASSERTION }), undefined)).toBe("c1");
    expect(requestClientId(form({ client_id: "", client_assertion: ASSERTION }), "Bearer x")).toBe(
      "https://client.example/c.json",
    );
    expect(requestClientId(form({ grant_type: "refresh_token" }), undefined)).toBeNull();
    expect(requestClientId(null, undefined)).toBeNull();
  });
});

describe("assertionIssuer", () => {
  it("is the payload's string iss, unverified; null for anything else", () => {
    expect(assertionIssuer(ASSERTION)).toBe("https://client.example/c.json");
    expect(assertionIssuer("e30.e30.sig")).toBeNull(); // {}
    expect(assertionIssuer("e30.eyJpc3MiOjF9.sig")).toBeNull(); // {"iss":1}
    expect(assertionIssuer("not a jwt")).toBeNull();
    expect(assertionIssuer(undefined)).toBeNull();
  });
});

describe("oversizedTokenRequest", () => {
  const long = "x".repeat(257);

  it("is true when a client id, code or token is past 256 bytes, however it is sent", () => {
    expect(oversizedTokenRequest(form({ client_id: long }), undefined)).toBe(true);
    expect(oversizedTokenRequest(form({ code: long }), undefined)).toBe(true);
    expect(oversizedTokenRequest(form({ refresh_token: long }), undefined)).toBe(true);
    expect(oversizedTokenRequest(form({ token: long }), undefined)).toBe(true);
    expect(oversizedTokenRequest(null, `Basic ${btoa(`${long}:secret`)}`)).toBe(true);
    const claims = btoa(JSON.stringify({ iss: long })).replace(/=+$/, "");
    expect(oversizedTokenRequest(form({ client_assertion: `e30.${claims}.sig` }), undefined)).toBe(true);
  });

  it("is false at 256 bytes and for fields it does not look up", () => {
    const at = "x".repeat(256);
    expect(oversizedTokenRequest(form({ client_id: at, code: at, token: at }), undefined)).toBe(false);
    expect(oversizedTokenRequest(form({ code_verifier: long, redirect_uri: long }), undefined)).toBe(false);
    expect(oversizedTokenRequest(null, undefined)).toBe(false);
  });
});

describe("presentedToken", () => {
  it("is the field the grant type presents: code, refresh_token, or (a revocation) token", () => {
    const all = { code: "the-code", refresh_token: "the-refresh", token: "the-token" };
    expect(presentedToken(form({ ...all, grant_type: "authorization_code" }))).toBe("the-code");
    expect(presentedToken(form({ ...all, grant_type: "refresh_token" }))).toBe("the-refresh");
    expect(presentedToken(form(all))).toBe("the-token");
    expect(presentedToken(form({ grant_type: "refresh_token", code: "the-code" }))).toBeNull();
    expect(presentedToken(null)).toBeNull();
  });
});

describe("oauthErrorCode", () => {
  it("reads error from a copy, leaving the response readable", async () => {
    const res = Response.json({ error: "invalid_grant", error_description: "no" }, { status: 400 });
    expect(await oauthErrorCode(res)).toBe("invalid_grant");
    expect(await res.json()).toEqual({ error: "invalid_grant", error_description: "no" });
  });

  it("is undefined for a body that is no JSON object with an error", async () => {
    expect(await oauthErrorCode(new Response("not json", { status: 500 }))).toBeUndefined();
    expect(await oauthErrorCode(Response.json({ access_token: "t" }))).toBeUndefined();
  });
});

describe("tokenRequestForm", () => {
  it("parses a request's form once, from a copy, and is null for no form", async () => {
    const request = new Request("https://mcp.amba.dev/oauth/token", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "grant_type=refresh_token&refresh_token=r1",
    });
    const first = tokenRequestForm(request);
    expect(tokenRequestForm(request)).toBe(first);
    expect((await first)?.get("refresh_token")).toBe("r1");
    expect(await request.text()).toBe("grant_type=refresh_token&refresh_token=r1");
    const json = new Request("https://mcp.amba.dev/oauth/token", { method: "POST", body: "{}" });
    expect(await tokenRequestForm(json)).toBeNull();
  });
});
