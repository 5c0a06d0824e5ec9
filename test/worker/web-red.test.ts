/**
 * Red team of the browser-facing and OAuth surfaces (authorization server, sign-in page, console),
 * every request written by an attacker. One regression test per hole found (each failed before its
 * fix), and one test of what held that refusals.test.ts, cold-audit.test.ts and the console tests
 * do not already prove. One app (developer, exposed collection, end users) serves every case.
 */
import { describe, expect, it } from "vitest";
import { MAX_CLIENT_METADATA_BYTES } from "../../src/oauth/server.ts";
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

  it("refuses a client registration larger than real clients send (each is stored for 90 days)", async () => {
    const metadata = (client_name: string) =>
      JSON.stringify({
        client_name,
        redirect_uris: ["http://127.0.0.1:33418/callback"],
        token_endpoint_auth_method: "none",
      });
    const register = (body: BodyInit) =>
      call("/oauth/register", { method: "POST", headers: { "content-type": "application/json" }, body });
    const chunked = (text: string) =>
      new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode(text));
          controller.close();
        },
      });
    for (const body of [metadata("N".repeat(900_000)), chunked(metadata("N".repeat(20_000)))]) {
      const res = await register(body);
      expect(res.status).toBe(413);
      expect(await res.json()).toEqual({
        error: "invalid_client_metadata",
        error_description: `client metadata is at most ${MAX_CLIENT_METADATA_BYTES} bytes`,
      });
    }
    const fits = await register(chunked(metadata("Assistant")));
    expect(fits.status).toBe(201);
  });
});
