/**
 * A Client ID Metadata Document is the JSON at its `client_id` URL itself: the authorization server
 * "MUST NOT automatically follow HTTP redirects" when it fetches one and treats any answer but a
 * 200 as an error (draft-ietf-oauth-client-id-metadata-document §4). The provider fetches with the
 * global `fetch`, which follows redirects, and checks only that the document's `client_id` equals
 * the URL it asked for — so a document at URL A (an open redirect on a reputable host) could be
 * served from host B, shown on the consent page under A's host. These tests stand in for the
 * network with a stub of the global `fetch` that behaves as fetch does (a redirect is followed
 * unless the request says `redirect: "manual"`) and expect the redirecting document refused with
 * an OAuth error, and a document served at its URL accepted through the whole flow.
 */
import { afterEach, beforeAll, beforeEach, describe, expect, it, type MockInstance, vi } from "vitest";
import type { TestUser } from "../helpers.ts";
import {
  authorized,
  authorizeUrl,
  openAuthorizePage,
  pkce,
  rawToolsList,
  type SignIn,
  setupApp,
  tokenRequest,
} from "./oauth-client.ts";

const document = (clientId: string) => ({
  client_id: clientId,
  client_name: "Claude",
  redirect_uris: ["http://127.0.0.1:33418/callback"],
  token_endpoint_auth_method: "none",
});

const json = (body: unknown) =>
  new Response(JSON.stringify(body), { headers: { "content-type": "application/json" } });

/**
 * Hosts the stub serves (no `Cache-Control`: the provider caches nothing, so every lookup fetches):
 * - `https://direct.example/<id>/client.json`: the document at its own URL;
 * - `https://reputable.example/<id>/go`: a 302 to `https://attacker.example/<id>/client.json`, which
 *   serves a document naming the reputable URL as its `client_id` (so the provider's check passes).
 * A request without `redirect: "manual"` is answered as fetch answers it: the redirect followed.
 */
function network(original: typeof fetch) {
  const fetched: { url: string; redirect: string | undefined }[] = [];
  const serve = (url: URL): Response | null => {
    if (url.hostname === "direct.example") return json(document(url.href));
    if (url.hostname === "attacker.example")
      return json(
        document(
          url.href.replace(
            /^https:\/\/attacker\.example\/(.*)\/client\.json$/,
            "https://reputable.example/$1/go",
          ),
        ),
      );
    if (url.hostname === "reputable.example")
      return new Response(null, {
        status: 302,
        headers: {
          location: url.href.replace(
            /^https:\/\/reputable\.example\/(.*)\/go$/,
            "https://attacker.example/$1/client.json",
          ),
        },
      });
    return null;
  };
  const stub = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const href = input instanceof Request ? input.url : String(input);
    const url = new URL(href);
    const redirect = init?.redirect ?? (input instanceof Request ? input.redirect : undefined);
    let res = serve(url);
    if (!res) return original(input, init);
    fetched.push({ url: href, redirect });
    for (let hops = 0; redirect !== "manual" && res.status >= 300 && res.status < 400 && hops < 5; hops++) {
      const next = serve(new URL(res.headers.get("location") ?? "", url));
      if (!next) break;
      res = next;
    }
    return res;
  };
  return { stub, fetched };
}

describe("a client metadata document behind a redirect", () => {
  let url: string;
  let alice: TestUser;
  let aliceSignIn: SignIn;
  let spy: MockInstance<typeof fetch>;
  let fetched: { url: string; redirect: string | undefined }[];

  beforeAll(async () => {
    ({ url, alice } = await setupApp());
    aliceSignIn = { mode: "end_user", email: alice.email, password: alice.password };
  });

  beforeEach(() => {
    const net = network(globalThis.fetch.bind(globalThis));
    fetched = net.fetched;
    spy = vi.spyOn(globalThis, "fetch").mockImplementation(net.stub);
  });

  afterEach(() => {
    spy.mockRestore();
  });

  it("is refused at /authorize: an error page, no sign-in form, nothing fetched from the redirect's target", async () => {
    const clientId = `https://reputable.example/${crypto.randomUUID()}/go`;
    const { challenge } = await pkce();
    const page = await openAuthorizePage(
      authorizeUrl({ client_id: clientId, code_challenge: challenge, resource: url }),
    );
    expect(page.res.status).toBe(400);
    expect(page.res.headers.get("location")).toBeNull();
    expect(page.html).not.toContain('name="password"');
    expect(page.html).not.toContain("reputable.example)");
    expect(page.html).toContain("redirect");
    // The document URL was asked for without following redirects; the attacker's host never.
    expect(fetched.length).toBeGreaterThan(0);
    for (const f of fetched) {
      expect(f.url).toBe(clientId);
      expect(f.redirect).toBe("manual");
    }
  });

  it("is refused at the token endpoint with invalid_client that says why", async () => {
    const clientId = `https://reputable.example/${crypto.randomUUID()}/go`;
    const res = await tokenRequest({ grant_type: "refresh_token", refresh_token: "x", client_id: clientId });
    expect(res.status).toBe(401);
    expect(res.body.error).toBe("invalid_client");
    expect(res.body.error_description).toContain("redirect");
    expect(res.body.access_token).toBeUndefined();
    expect(fetched.every((f) => f.url === clientId && f.redirect === "manual")).toBe(true);
  });

  it("a document served at its own URL still works, through the whole flow", async () => {
    const clientId = `https://direct.example/${crypto.randomUUID()}/client.json`;
    const { challenge } = await pkce();
    const page = await openAuthorizePage(
      authorizeUrl({ client_id: clientId, code_challenge: challenge, resource: url }),
    );
    expect(page.res.status).toBe(200);
    expect(page.html).toContain("Claude (direct.example)");
    const grant = await authorized(url, aliceSignIn, clientId);
    expect((await rawToolsList(url, grant.access_token)).status).toBe(200);
    const next = await tokenRequest({
      grant_type: "refresh_token",
      refresh_token: grant.refresh_token,
      client_id: clientId,
    });
    expect(next.status).toBe(200);
    expect(fetched.length).toBeGreaterThan(0);
    expect(fetched.every((f) => f.url === clientId)).toBe(true);
  });

  it("changes no other fetch: the same URL fetched without the provider's User-Agent still follows", async () => {
    // A provider use first, so the guard stands in front of the stub.
    await tokenRequest({ grant_type: "refresh_token", refresh_token: "x", client_id: "no-such-client" });
    const clientId = `https://reputable.example/${crypto.randomUUID()}/go`;
    const res = await fetch(clientId, { headers: { accept: "application/json" } });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { client_id: string }).client_id).toBe(clientId);
    expect(fetched).toEqual([{ url: clientId, redirect: undefined }]);
  });
});
