import { describe, expect, it } from "vitest";
import {
  allClientConfigs,
  clientConfig,
  serverName,
  shellQuote,
} from "../../../src/platform-mcp/client-configs.ts";

const target = {
  name: "amba-cookbook",
  url: "https://mcp.amba.dev/app/p1/mcp",
  headers: { Authorization: "Bearer amba_dev_x_y" },
};

describe("client configs", () => {
  it("gives Claude Code an add command with the header, and the add-json form", () => {
    const config = clientConfig("claude", target);
    expect(config.text).toBe(
      "claude mcp add --transport http amba-cookbook https://mcp.amba.dev/app/p1/mcp --header 'Authorization: Bearer amba_dev_x_y'",
    );
    expect(config.alternatives[0]?.text).toBe(
      `claude mcp add-json amba-cookbook '{"type":"http","url":"https://mcp.amba.dev/app/p1/mcp","headers":{"Authorization":"Bearer amba_dev_x_y"}}'`,
    );
  });

  it("gives each JSON client its own shape", () => {
    const parsed = Object.fromEntries(
      allClientConfigs(target)
        .filter((c) => c.where !== "shell")
        .map((c) => [c.client, JSON.parse(c.text)]),
    );
    expect(parsed).toEqual({
      gemini: { mcpServers: { "amba-cookbook": { httpUrl: target.url, headers: target.headers } } },
      cursor: { mcpServers: { "amba-cookbook": { url: target.url, headers: target.headers } } },
      vscode: { servers: { "amba-cookbook": { type: "http", url: target.url, headers: target.headers } } },
    });
  });

  it("gives the Inspector a tools/list command line", () => {
    expect(clientConfig("inspector", target).text).toBe(
      "npx -y @modelcontextprotocol/inspector --cli https://mcp.amba.dev/app/p1/mcp --transport http --header 'Authorization: Bearer amba_dev_x_y' --method tools/list",
    );
  });

  it("quotes shell words and names servers safely", () => {
    expect(shellQuote("it's")).toBe(`'it'\\''s'`);
    expect(serverName("My First Project!")).toBe("amba-my-first-project");
    expect(serverName("???")).toBe("amba-app");
  });
});
