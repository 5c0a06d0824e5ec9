/**
 * Red team of the browser-facing and OAuth surfaces (authorization server, sign-in page, console),
 * every request written by an attacker. One regression test per hole found (each failed before its
 * fix), and one test of what held that refusals.test.ts, cold-audit.test.ts and the console tests
 * do not already prove. One app (developer, exposed collection, end users) serves every case.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { MAX_CLIENT_METADATA_BYTES } from "../../src/oauth/server.ts";
import { apiJson } from "./helpers.ts";
import { BASE, call, setupApp } from "./oauth/oauth-client.ts";

type App = Awaited<ReturnType<typeof setupApp>>;

const FORM = { "content-type": "application/x-www-form-urlencoded" };

/** An unsigned JWT with these claims: the provider reads `iss` before it looks for keys to verify it. */
const unsignedJwt = (claims: Record<string, unknown>) =>
  [{ alg: "RS256", typ: "JWT" }, claims]
    .map((part) => btoa(JSON.stringify(part)).replaceAll("=", "").replaceAll("+", "-").replaceAll("/", "_"))
    .concat("c2ln")
    .join(".");

describe("web red team", () => {
  let app: App;

  beforeAll(async () => {
    app = await setupApp();
  });

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

  it("keeps the authorization server metadata consistent with every endpoint's resource metadata (RFC 9728)", async () => {
    const slug = `webred-${crypto.randomUUID().slice(0, 8)}`;
    const config = `/v1/admin/projects/${app.dev.projectId}/app-mcp/config`;
    expect((await apiJson(config, { method: "PATCH", token: app.dev.token, json: { slug } })).status).toBe(
      200,
    );
    const as = (await (await call("/.well-known/oauth-authorization-server")).json()) as Record<
      string,
      unknown
    >;
    expect(as.issuer).toBe(BASE);
    for (const [metadataUrl, resource] of [
      [`${BASE}/.well-known/oauth-protected-resource/mcp`, `${BASE}/mcp`],
      [`${BASE}/.well-known/oauth-protected-resource/app/${app.dev.projectId}/mcp`, app.url],
      [
        `https://${slug}.mcp.amba.host/.well-known/oauth-protected-resource/mcp`,
        `https://${slug}.mcp.amba.host/mcp`,
      ],
    ] as const) {
      const prm = (await (await call(metadataUrl)).json()) as Record<string, unknown>;
      expect(prm).toMatchObject({ resource, authorization_servers: [as.issuer] });
      // RFC 9728 §4: `protected_resources`, when present, lists what the server issues tokens for.
      // Every project's endpoints are; the set is open-ended, so the list must not be there.
      expect((as.protected_resources as string[] | undefined) ?? [resource], resource).toContain(resource);
    }
  });
});
