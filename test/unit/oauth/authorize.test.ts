/** The `/authorize` decisions (src/oauth/authorize.ts): pure, literals in and out. */
import { describe, expect, it } from "vitest";
import {
  appSelectorOf,
  appSigninTarget,
  authorizationGrant,
  authorizeTarget,
  consentClientName,
  isRefusal,
  onOwnHost,
  unfetchedDocumentRefusal,
} from "../../../src/oauth/authorize.ts";

const ISSUER = "https://mcp.amba.dev";
const SUFFIX = "mcp.amba.host";
const ID = "0195f3c2-7b1e-7c3a-9d4e-1f2a3b4c5d6e";

const authorizeUrl = (params: Record<string, string>) =>
  `${ISSUER}/authorize?${new URLSearchParams(params).toString()}`;

describe("authorizeTarget", () => {
  it("names the endpoint and its canonical resource", () => {
    expect(
      authorizeTarget(authorizeUrl({ resource: `${ISSUER}/mcp`, client_id: "c" }), ISSUER, SUFFIX),
    ).toEqual({
      target: { kind: "platform" },
      resource: "https://mcp.amba.dev/mcp",
    });
    expect(
      authorizeTarget(authorizeUrl({ resource: "https://chef.MCP.amba.host/mcp" }), ISSUER, SUFFIX),
    ).toEqual({
      target: { kind: "app", slug: "chef" },
      resource: "https://chef.mcp.amba.host/mcp",
    });
    expect(
      authorizeTarget(authorizeUrl({ resource: `${ISSUER}/app/${ID.toUpperCase()}/mcp` }), ISSUER, SUFFIX),
    ).toEqual({ target: { kind: "app", projectId: ID }, resource: `${ISSUER}/app/${ID}/mcp` });
  });

  it("refuses a resource that is none of ours, or none at all", () => {
    for (const url of [
      authorizeUrl({ resource: "https://elsewhere.example/mcp" }),
      authorizeUrl({ client_id: "c" }),
    ])
      expect(authorizeTarget(url, ISSUER, SUFFIX)).toEqual({
        refused: true,
        status: 400,
        title: "Unknown MCP endpoint",
        message:
          "This sign-in request does not name one of this server's MCP endpoints (its resource parameter). Reconnect from your assistant.",
      });
  });

  it("refuses a client_id past 256 bytes, not one at 256", () => {
    const resource = `${ISSUER}/mcp`;
    const long = authorizeTarget(authorizeUrl({ resource, client_id: "é".repeat(129) }), ISSUER, SUFFIX);
    expect(long).toEqual({
      refused: true,
      status: 400,
      title: "This sign-in request is not valid",
      message: "Its client_id is too long to be a client of this server.",
    });
    expect(
      isRefusal(authorizeTarget(authorizeUrl({ resource, client_id: "é".repeat(128) }), ISSUER, SUFFIX)),
    ).toBe(false);
  });
});

describe("onOwnHost", () => {
  it("is true on the issuer's host and the app hostnames' suffix, whatever scheme, port or case", () => {
    expect(onOwnHost("https://mcp.amba.dev/cb", ISSUER, SUFFIX)).toBe(true);
    expect(onOwnHost("http://MCP.AMBA.DEV:8443/cb", ISSUER, SUFFIX)).toBe(true);
    expect(onOwnHost("https://mcp.amba.host/cb", ISSUER, SUFFIX)).toBe(true);
    expect(onOwnHost("https://any-app.mcp.amba.host/cb", ISSUER, "MCP.amba.host")).toBe(true);
  });

  it("is true for the same hosts spelled with a trailing dot (the fully qualified name a browser reaches alike)", () => {
    expect(onOwnHost("https://mcp.amba.dev./cb", ISSUER, SUFFIX)).toBe(true);
    expect(onOwnHost("https://mcp.amba.host./cb", ISSUER, SUFFIX)).toBe(true);
    expect(onOwnHost("https://any-app.mcp.amba.host../cb", ISSUER, SUFFIX)).toBe(true);
  });

  it("is false for loopback, look-alikes, other hosts and URIs that do not parse", () => {
    expect(onOwnHost("http://localhost:3000/cb", "http://localhost:8787", "")).toBe(false);
    expect(onOwnHost("http://127.0.0.1/cb", ISSUER, SUFFIX)).toBe(false);
    expect(onOwnHost("http://[::1]:9/cb", ISSUER, SUFFIX)).toBe(false);
    expect(onOwnHost("https://mcp.amba.dev.client.example/cb", ISSUER, SUFFIX)).toBe(false);
    expect(onOwnHost("https://notmcp.amba.host/cb", ISSUER, SUFFIX)).toBe(false);
    expect(onOwnHost("https://client.example/cb", ISSUER, "")).toBe(false);
    expect(onOwnHost("not a uri", ISSUER, SUFFIX)).toBe(false);
  });
});

describe("appSigninTarget", () => {
  const app = (authMode: string, enabled = true) => ({
    project: { id: ID, name: "Chef" },
    config: { enabled, authMode },
  });

  it("offers the kinds of sign-in the app's auth mode allows", () => {
    const selector = appSelectorOf({ kind: "app", slug: "chef" });
    expect(selector).toEqual({ slug: "chef" });
    expect(appSigninTarget(selector, app("all"))).toEqual({
      selector,
      projectId: ID,
      appName: "Chef",
      endUserAllowed: true,
      developerAllowed: true,
    });
    expect(appSigninTarget(selector, app("client_only"))).toMatchObject({
      endUserAllowed: true,
      developerAllowed: false,
    });
    expect(appSigninTarget(selector, app("developer_only"))).toEqual({
      selector,
      projectId: ID,
      appName: "Chef",
      endUserAllowed: false,
      developerAllowed: true,
      notice:
        "Chef accepts only its developer on this MCP endpoint (auth mode developer_only): signing in with an app account is not available.",
    });
  });

  it("refuses an unknown app (404) and an endpoint turned off (403), naming the app as shown", () => {
    const selector = appSelectorOf({ kind: "app", projectId: ID });
    expect(selector).toEqual({ projectId: ID });
    expect(appSigninTarget(selector, null)).toMatchObject({
      refused: true,
      status: 404,
      title: "No such app",
    });
    const off = { project: { id: ID, name: "  Chef\u202e " }, config: { enabled: false, authMode: "all" } };
    expect(appSigninTarget(selector, off)).toEqual({
      refused: true,
      status: 403,
      title: "This app's MCP endpoint is turned off",
      message: "Chef\\u202e does not accept MCP connections right now.",
    });
  });
});

describe("consentClientName", () => {
  it("names a metadata document's client by its domain, a registered one by its redirect host", () => {
    const base = {
      clientName: "Claude",
      redirectHost: "claude.ai.sign-in.example",
      redirectIsLoopback: false,
    };
    expect(consentClientName({ ...base, clientDomain: "assistant-login.example" })).toBe(
      "Claude (assistant-login.example)",
    );
    expect(consentClientName(base)).toBe("Claude (claude.ai.sign-in.example)");
  });

  it("lets a loopback client's name stand alone, as shown (escaped, cut at 100 characters)", () => {
    expect(
      consentClientName({ clientName: "Desk\u202etop", redirectHost: "127.0.0.1", redirectIsLoopback: true }),
    ).toBe("Desk\\u202etop");
    const long = consentClientName({
      clientName: "x".repeat(150),
      redirectHost: "h",
      redirectIsLoopback: true,
    });
    expect(long).toBe(`${"x".repeat(99)}…`);
  });
});

describe("authorizationGrant", () => {
  it("keeps an end user's id as props and their email in the clear", () => {
    expect(
      authorizationGrant(
        { kind: "end_user", projectId: ID, user: { id: "user-1", email: "a@b.example" } },
        "Claude (claude.ai)",
        "https://chef.mcp.amba.host/mcp",
      ),
    ).toEqual({
      props: { kind: "end_user", projectId: ID, userId: "user-1" },
      metadata: {
        projectId: ID,
        scope: "end_user",
        principalId: "user-1",
        email: "a@b.example",
        clientName: "Claude (claude.ai)",
        resource: "https://chef.mcp.amba.host/mcp",
      },
    });
  });

  it("keeps a developer's token id as props, for the platform (no project) or an app", () => {
    expect(
      authorizationGrant(
        { kind: "developer", projectId: null, developerId: "dev-1", tokenId: "tok-1" },
        "Claude",
        "https://mcp.amba.dev/mcp",
      ),
    ).toEqual({
      props: { kind: "developer", projectId: null, developerId: "dev-1", tokenId: "tok-1" },
      metadata: {
        projectId: null,
        scope: "developer",
        principalId: "dev-1",
        email: "",
        clientName: "Claude",
        resource: "https://mcp.amba.dev/mcp",
      },
    });
  });
});

describe("unfetchedDocumentRefusal", () => {
  it("says whether the document could not be fetched or answered with a redirect", () => {
    expect(unfetchedDocumentRefusal(undefined).message).toBe(
      "The assistant's client metadata document (its client_id URL) could not be fetched.",
    );
    expect(unfetchedDocumentRefusal(302)).toMatchObject({ status: 400, refused: true });
    expect(unfetchedDocumentRefusal(302).message).toContain("answered with a redirect (HTTP 302)");
  });
});
