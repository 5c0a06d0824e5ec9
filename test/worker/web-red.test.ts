/**
 * Red team of the browser-facing and OAuth surfaces (authorization server, sign-in page, console),
 * every request written by an attacker. One regression test per hole found (each failed before its
 * fix), and one test of what held that refusals.test.ts, cold-audit.test.ts and the console tests
 * do not already prove. One app (developer, exposed collection, end users) serves every case.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { MAX_CLIENT_METADATA_BYTES } from "../../src/oauth/server.ts";
import { apiJson, signupDeveloper, type TestDeveloper } from "./helpers.ts";
import {
  authorizeUrl,
  BASE,
  call,
  codeFrom,
  openAuthorizePage,
  pkce,
  postForm,
  REDIRECT_URI,
  rawToolsList,
  registerClient,
  type SignIn,
  tokenRequest,
} from "./oauth/oauth-client.ts";

const FORM = { "content-type": "application/x-www-form-urlencoded" };

/** An unsigned JWT with these claims: the provider reads `iss` before it looks for keys to verify it. */
const unsignedJwt = (claims: Record<string, unknown>) =>
  [{ alg: "RS256", typ: "JWT" }, claims]
    .map((part) => btoa(JSON.stringify(part)).replaceAll("=", "").replaceAll("+", "-").replaceAll("/", "_"))
    .concat("c2ln")
    .join(".");

describe("web red team", () => {
  let dev: TestDeveloper;
  let url: string;
  let asDeveloper: SignIn;

  beforeAll(async () => {
    dev = await signupDeveloper();
    url = `${BASE}/app/${dev.projectId}/mcp`;
    asDeveloper = { mode: "developer", developer_token: dev.token };
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

  it("answers the expired-form page, not 500, to a sign-in form whose transaction is longer than a KV key", async () => {
    // The cookie and the field are both the sender's: they agree, and the value went to KV as a key.
    const tx = "t".repeat(600);
    const res = await postForm(`amba_oauth_tx=${tx}`, { tx, action: "allow", ...asDeveloper });
    expect(res.status).toBe(403);
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(await res.text()).toContain("This sign-in form has expired");
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
    const config = `/v1/admin/projects/${dev.projectId}/app-mcp/config`;
    expect((await apiJson(config, { method: "PATCH", token: dev.token, json: { slug } })).status).toBe(200);
    const as = (await (await call("/.well-known/oauth-authorization-server")).json()) as Record<
      string,
      unknown
    >;
    expect(as.issuer).toBe(BASE);
    for (const [metadataUrl, resource] of [
      [`${BASE}/.well-known/oauth-protected-resource/mcp`, `${BASE}/mcp`],
      [`${BASE}/.well-known/oauth-protected-resource/app/${dev.projectId}/mcp`, url],
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

  it("held: code, refresh and revocation misuse at the token endpoint (not proved elsewhere)", async () => {
    const other = `${REDIRECT_URI}/other`;
    const clientId = await registerClient([REDIRECT_URI, other]);
    const intruder = await registerClient();
    const { verifier, challenge } = await pkce();
    const page = await openAuthorizePage(
      authorizeUrl({ client_id: clientId, code_challenge: challenge, resource: url }),
    );
    const code = await codeFrom(
      await postForm(page.cookie, { tx: page.tx, action: "allow", ...asDeveloper }),
    );
    const exchange = { grant_type: "authorization_code", code, client_id: clientId, code_verifier: verifier };
    for (const [fields, error] of [
      [{ ...exchange, code_verifier: "" }, "invalid_request"],
      [{ ...exchange, client_id: intruder }, "invalid_grant"],
      [{ ...exchange, redirect_uri: other }, "invalid_grant"],
      [{ ...exchange, redirect_uri: REDIRECT_URI.replace("33418", "33419") }, "invalid_grant"],
    ] as const) {
      const refused = await tokenRequest(fields);
      expect(refused.status, JSON.stringify(fields)).toBe(400);
      expect(refused.body.error).toBe(error);
    }
    for (const body of [JSON.stringify(exchange), `${new URLSearchParams(exchange)}&code=${code}`]) {
      const res = await call("/oauth/token", {
        method: "POST",
        headers: { "content-type": body.startsWith("{") ? "application/json" : FORM["content-type"] },
        body,
      });
      expect(res.status).toBe(400);
    }
    // The failures above did not burn the code for its own client.
    const res = await call("/oauth/token", {
      method: "POST",
      headers: FORM,
      body: new URLSearchParams(exchange),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const first = (await res.json()) as { access_token: string; refresh_token: string };

    const refresh = (refresh_token: string, extra: Record<string, string> = {}) =>
      tokenRequest({ grant_type: "refresh_token", refresh_token, client_id: clientId, ...extra });
    expect((await refresh(first.refresh_token, { resource: `${BASE}/mcp` })).body.error).toBe(
      "invalid_target",
    );
    const second = (await refresh(first.refresh_token)).body;
    const third = (await refresh(second.refresh_token)).body;
    // (A refresh token two rotations back revokes the grant: test/worker/oauth/red-team.test.ts.)

    // Another client's revocation is answered 200 (RFC 7009) and changes nothing.
    for (const [token, hint] of [
      [third.access_token, "access_token"],
      [third.refresh_token, "refresh_token"],
    ]) {
      const revoked = await call("/oauth/token", {
        method: "POST",
        headers: FORM,
        body: new URLSearchParams({ token, token_type_hint: hint, client_id: intruder }),
      });
      expect(revoked.status).toBe(200);
    }
    expect((await rawToolsList(url, third.access_token)).status).toBe(200);
    // Replaying the code ends the whole grant: the latest access and refresh tokens too.
    expect((await tokenRequest(exchange)).body.error).toBe("invalid_grant");
    expect((await rawToolsList(url, third.access_token)).status).toBe(401);
    expect((await refresh(third.refresh_token)).body.error).toBe("invalid_grant");
  });

  it("held: redirect URIs, loopback ports, state, another developer's token on the sign-in page", async () => {
    const register = (redirect_uris: string[], extra: Record<string, unknown> = {}) =>
      call("/oauth/register", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          client_name: "x",
          redirect_uris,
          token_endpoint_auth_method: "none",
          ...extra,
        }),
      });
    for (const [uris, extra] of [
      [["http://evil.example/cb"], {}],
      [["data:text/html,<script>alert(1)</script>"], {}],
      [["https://client.example/cb#frag"], {}],
      [["https://good.example@evil.example/cb"], {}],
      [[REDIRECT_URI], { logo_uri: "javascript:alert(1)" }],
      [
        [REDIRECT_URI],
        { token_endpoint_auth_method: "private_key_jwt", jwks_uri: "https://169.254.169.254/" },
      ],
    ] as const) {
      expect((await register([...uris], extra)).status, JSON.stringify([uris, extra])).toBe(400);
    }
    // A remote http URI listed next to a loopback one is stored, but never redirected to; a logo
    // is stored, but neither fetched nor shown (the page loads nothing: CSP default-src 'none').
    const logo = "https://tracker.example/pixel.png";
    const mixed = (await (
      await register(["http://evil.example/cb", REDIRECT_URI], { logo_uri: logo })
    ).json()) as {
      client_id: string;
    };
    const { challenge } = await pkce();
    const base = { client_id: mixed.client_id, code_challenge: challenge, resource: url };
    const remote = await call(authorizeUrl({ ...base, redirect_uri: "http://evil.example/cb" }), {
      redirect: "manual",
    });
    expect(remote.status).toBe(400);
    expect(remote.headers.get("location")).toBeNull();
    // RFC 8252 §7.3: any port on the registered loopback address, but not another loopback host.
    expect((await call(authorizeUrl({ ...base, redirect_uri: "http://[::1]:33418/callback" }))).status).toBe(
      400,
    );
    const state = `"><script>alert(1)</script>`;
    const port = await openAuthorizePage(
      authorizeUrl({ ...base, redirect_uri: "http://127.0.0.1:50000/callback", state }),
    );
    expect(port.html).not.toContain("<script>");
    expect(port.html).not.toContain("tracker.example");
    const intruder = await signupDeveloper();
    const foreign = await postForm(port.cookie, {
      tx: port.tx,
      action: "allow",
      mode: "developer",
      developer_token: intruder.token,
    });
    expect(foreign.status).toBe(401);
    expect(await foreign.text()).toContain("That developer token is not valid for");
    const back = new URL(
      (await postForm(port.cookie, { tx: port.tx, action: "allow", ...asDeveloper })).headers.get(
        "location",
      ) ?? "",
    );
    expect(back.origin + back.pathname).toBe("http://127.0.0.1:50000/callback");
    expect(back.searchParams.get("state")).toBe(state);
    expect(back.search).not.toContain("<");
  });

  it("held: console sign-in from another origin, another session's CSRF token, another developer's project", async () => {
    const login = (token: string, origin?: string) =>
      call("/console/login", {
        method: "POST",
        redirect: "manual",
        headers: { ...FORM, ...(origin ? { origin } : {}) },
        body: new URLSearchParams({ token }),
      });
    for (const origin of ["null", "https://mcp.amba.dev.evil.example", "http://mcp.amba.dev"]) {
      const res = await login(dev.token, origin);
      expect(res.status, origin).toBe(403);
      expect(res.headers.get("set-cookie")).toBeNull();
    }
    const intruder = await signupDeveloper();
    const cookieOf = async (token: string) =>
      ((await login(token)).headers.get("set-cookie") ?? "").split(";")[0] as string;
    const [mine, theirs] = [await cookieOf(dev.token), await cookieOf(intruder.token)];
    const page = await (
      await call(`/console/projects/${dev.projectId}`, { headers: { cookie: mine } })
    ).text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(page)?.[1] as string;
    const post = (projectId: string, cookie: string) =>
      call(`/console/projects/${projectId}/config`, {
        method: "POST",
        redirect: "manual",
        headers: { ...FORM, cookie },
        body: new URLSearchParams({ csrf, auth_mode: "developer_only" }),
      });
    expect((await post(intruder.projectId, theirs)).status).toBe(403);
    expect((await post(intruder.projectId, mine)).status).toBe(404);
    const stored = await apiJson(`/v1/admin/projects/${intruder.projectId}/app-mcp/config`, {
      token: intruder.token,
    });
    expect(stored.body).toMatchObject({ enabled: true, auth_mode: "all" });
  });
});
