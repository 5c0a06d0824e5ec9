/**
 * Red team of the browser-facing and OAuth surfaces (authorization server, sign-in page, console),
 * every request written by an attacker. One regression test per hole found (each failed before its
 * fix), and one test of what held that refusals.test.ts, cold-audit.test.ts and the console tests
 * do not already prove. One app (developer, exposed collection, end users) serves every case.
 */
import { describe, expect, it } from "vitest";
import { BASE, call } from "./oauth/oauth-client.ts";

const FORM = { "content-type": "application/x-www-form-urlencoded" };

/** An unsigned JWT with these claims: the provider reads `iss` before it looks for keys to verify it. */
const unsignedJwt = (claims: Record<string, unknown>) =>
  [{ alg: "RS256", typ: "JWT" }, claims]
    .map((part) => btoa(JSON.stringify(part)).replaceAll("=", "").replaceAll("+", "-").replaceAll("/", "_"))
    .concat("c2ln")
    .join(".");

describe("web red team", () => {
  it("answers 400, not 500, to a client assertion whose issuer is longer than a KV key", async () => {
    const res = await call("/oauth/token", {
      method: "POST",
      headers: FORM,
      body: new URLSearchParams({
        grant_type: "authorization_code",
        code: "a:b:c",
        client_assertion_type: "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
        client_assertion: unsignedJwt({ iss: "c".repeat(600), sub: "c".repeat(600), aud: BASE }),
      }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: "invalid_request" });
  });
});
