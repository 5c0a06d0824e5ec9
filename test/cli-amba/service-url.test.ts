/**
 * AMBA_URL is the service's base URL (the CLI adds `/mcp`). The platform MCP's own URL — what a user
 * copies from an MCP client config, `https://mcp.amba.dev/mcp` — names the same service and works too.
 */
import { describe, expect, it } from "vitest";
import { resolveConnection, serviceUrl } from "../../src/cli/amba/settings.ts";

const env = (AMBA_URL: string) => ({ AMBA_URL, AMBA_TOKEN: "t", XDG_CONFIG_HOME: "/nonexistent" });

describe("the service URL", () => {
  it("takes the base URL or the platform MCP URL, with or without trailing slashes", () => {
    for (const url of [
      "https://mcp.amba.dev",
      "https://mcp.amba.dev/",
      "https://mcp.amba.dev/mcp",
      "https://mcp.amba.dev/mcp/",
    ]) {
      expect(resolveConnection({}, env(url)).url, url).toBe("https://mcp.amba.dev");
      expect(resolveConnection({ url }, env("https://other.example")).url, url).toBe("https://mcp.amba.dev");
    }
  });

  it("keeps a base path, and a path that only ends in the letters mcp", () => {
    expect(serviceUrl("https://example.com/amba/mcp")).toBe("https://example.com/amba");
    expect(serviceUrl("https://example.com/amba/")).toBe("https://example.com/amba");
    expect(serviceUrl("https://example.com/notmcp")).toBe("https://example.com/notmcp");
    expect(serviceUrl("http://127.0.0.1:8787")).toBe("http://127.0.0.1:8787");
  });
});
