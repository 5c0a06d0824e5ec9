/** The OAuth resource URLs and the 401 challenge: pure functions, literals in and out. */
import { describe, expect, it } from "vitest";
import { wwwAuthenticate } from "../../../src/oauth/challenge.ts";
import {
  appResource,
  issuerOf,
  mcpEndpointOnHost,
  parseResource,
  platformResource,
  protectedResourceMetadata,
  resourceMetadataUrl,
  resourceOf,
  slugResource,
} from "../../../src/oauth/resources.ts";
import { isOAuthToken, subjectOf, tokenGrantRef } from "../../../src/oauth/tokens.ts";

const ISSUER = "https://mcp.amba.dev";
const SUFFIX = "mcp.amba.host";
const ID = "0195f3c2-7b1e-7c3a-9d4e-1f2a3b4c5d6e";

describe("OAuth resources", () => {
  it("spells each endpoint's canonical resource and its metadata URL", () => {
    expect(platformResource(ISSUER)).toBe("https://mcp.amba.dev/mcp");
    expect(appResource(ISSUER, ID.toUpperCase())).toBe(`https://mcp.amba.dev/app/${ID}/mcp`);
    expect(slugResource("chef", "MCP.amba.host", ISSUER)).toBe("https://chef.mcp.amba.host/mcp");
    expect(resourceMetadataUrl(`https://mcp.amba.dev/app/${ID}/mcp`)).toBe(
      `https://mcp.amba.dev/.well-known/oauth-protected-resource/app/${ID}/mcp`,
    );
    expect(resourceMetadataUrl("https://chef.mcp.amba.host/mcp")).toBe(
      "https://chef.mcp.amba.host/.well-known/oauth-protected-resource/mcp",
    );
  });

  it("takes the issuer from PUBLIC_BASE_URL, else from the request", () => {
    expect(issuerOf("https://mcp.amba.dev/", "http://other/x")).toBe(ISSUER);
    expect(issuerOf("", "http://127.0.0.1:8787/authorize?x=1")).toBe("http://127.0.0.1:8787");
  });

  it("maps a resource parameter back to one of our endpoints, and nothing else", () => {
    expect(parseResource(`${ISSUER}/mcp`, ISSUER, SUFFIX)).toEqual({ kind: "platform" });
    expect(parseResource(`${ISSUER}/app/${ID}/mcp`, ISSUER, SUFFIX)).toEqual({ kind: "app", projectId: ID });
    expect(parseResource("https://chef.mcp.amba.host/mcp", ISSUER, SUFFIX)).toEqual({
      kind: "app",
      slug: "chef",
    });
    for (const bad of [
      "https://evil.example/mcp",
      `https://evil.example/app/${ID}/mcp`,
      `${ISSUER}/app/not-a-uuid/mcp`,
      `${ISSUER}/mcp?x=1`,
      `${ISSUER}/mcp#f`,
      `${ISSUER}/mcp/tools`,
      "http://chef.mcp.amba.host/mcp",
      "https://a.b.mcp.amba.host/mcp",
      "https://chef.mcp.amba.host/other",
      "not a url",
    ]) {
      expect(parseResource(bad, ISSUER, SUFFIX), bad).toBeNull();
    }
    // `npm run dev`: the hostname URL keeps the issuer's scheme and port, as the config's hostname_url.
    const dev = "http://127.0.0.1:8787";
    expect(slugResource("demo", "mcp.localhost", dev)).toBe("http://demo.mcp.localhost:8787/mcp");
    expect(parseResource("http://demo.mcp.localhost:8787/mcp", dev, "mcp.localhost")).toEqual({
      kind: "app",
      slug: "demo",
    });
    for (const bad of ["https://demo.mcp.localhost/mcp", "http://demo.mcp.localhost:8788/mcp"]) {
      expect(parseResource(bad, dev, "mcp.localhost"), bad).toBeNull();
    }
    const target = parseResource(`${ISSUER}/app/${ID}/mcp`, ISSUER, SUFFIX)!;
    expect(resourceOf(target, ISSUER, SUFFIX)).toBe(`${ISSUER}/app/${ID}/mcp`);
  });
});

describe("OAuth tokens and challenges", () => {
  it("tells provider tokens from header credentials by shape", () => {
    const subject = subjectOf("end_user", ID);
    expect(subject).toBe(`u_${ID.replaceAll("-", "")}`);
    expect(isOAuthToken(`${subject}:grant1:secret`)).toBe(true);
    expect(tokenGrantRef(`${subject}:grant1:secret`)).toEqual({ subject, grantId: "grant1" });
    expect(isOAuthToken("amba_dev_0123456789abcdef0123456789abcdef_secret")).toBe(false);
    expect(isOAuthToken("amba_sess_0123456789abcdef0123456789abcdef_secret")).toBe(false);
    expect(isOAuthToken(`${subject}:grant1`)).toBe(false);
    expect(tokenGrantRef("x:y:z")).toBeNull();
  });

  it("builds the WWW-Authenticate challenge, with an error only when credentials were sent", () => {
    const url = "https://mcp.amba.dev/.well-known/oauth-protected-resource/mcp";
    expect(wwwAuthenticate({ resourceMetadataUrl: url })).toBe(
      `Bearer realm="amba", resource_metadata="${url}"`,
    );
    expect(
      wwwAuthenticate({ resourceMetadataUrl: url, error: "invalid_token", description: 'bad "token"' }),
    ).toBe(
      `Bearer realm="amba", resource_metadata="${url}", error="invalid_token", error_description="bad \\"token\\""`,
    );
  });
});

describe("the protected resource metadata of /mcp on a host", () => {
  it("is the app's hostname endpoint on <slug>.<suffix>, the platform MCP anywhere else", () => {
    expect(mcpEndpointOnHost("chef.mcp.amba.host", ISSUER, SUFFIX)).toEqual({
      resource: "https://chef.mcp.amba.host/mcp",
      name: "Amba app MCP",
    });
    for (const host of ["mcp.amba.dev", "mcp.amba.host", "-bad-.mcp.amba.host", "elsewhere.example"])
      expect(mcpEndpointOnHost(host, ISSUER, SUFFIX), host).toEqual({
        resource: "https://mcp.amba.dev/mcp",
        name: "Amba platform MCP",
      });
    expect(mcpEndpointOnHost("chef.mcp.localhost", "http://localhost:8787", "mcp.localhost")).toEqual({
      resource: "http://chef.mcp.localhost:8787/mcp",
      name: "Amba app MCP",
    });
  });

  it("names the resource, its issuer and the header as the one bearer method (RFC 9728 §2)", () => {
    expect(protectedResourceMetadata("https://chef.mcp.amba.host/mcp", ISSUER, "Amba app MCP")).toEqual({
      resource: "https://chef.mcp.amba.host/mcp",
      authorization_servers: ["https://mcp.amba.dev"],
      bearer_methods_supported: ["header"],
      resource_name: "Amba app MCP",
    });
  });
});
