/**
 * Paste-ready MCP client configurations for an app's MCP endpoint: Claude Code, Gemini CLI, Cursor,
 * VS Code and the MCP Inspector. Pure: data in, text out. Shared by `amba mcp config` and the
 * console's connection panel, so both print the same thing.
 */

/** The MCP clients a config can be generated for. */
export const MCP_CLIENTS = ["claude", "gemini", "cursor", "vscode", "inspector"] as const;
export type McpClient = (typeof MCP_CLIENTS)[number];

/** What a client connects to: a server name, the Streamable HTTP URL and the headers to send. */
export interface McpServerTarget {
  name: string;
  url: string;
  headers: Record<string, string>;
}

/** One paste-ready config: where it goes and the text to paste. */
export interface ClientConfig {
  client: McpClient;
  /** Human label of the client. */
  label: string;
  /** Where the text goes (a shell, a file). */
  where: string;
  /** The text to paste. */
  text: string;
  /** Alternatives (e.g. `claude mcp add-json`), same target. */
  alternatives: { where: string; text: string }[];
}

/** True when `value` names a supported client. */
export const isMcpClient = (value: string): value is McpClient =>
  (MCP_CLIENTS as readonly string[]).includes(value);

/** A POSIX shell word: bare when safe, else single-quoted. */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

const shell = (words: string[]) => words.map(shellQuote).join(" ");

/** A server name clients accept everywhere: lowercase letters, digits, `-` and `_`. */
export function serverName(projectName: string): string {
  const cleaned = projectName
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 40);
  return `amba-${cleaned || "app"}`;
}

const json = (value: unknown) => JSON.stringify(value, null, 2);

const headerFlags = (headers: Record<string, string>, flag: string) =>
  Object.entries(headers).flatMap(([k, value]) => [flag, `${k}: ${value}`]);

/** The config of one client for `target`. */
export function clientConfig(client: McpClient, target: McpServerTarget): ClientConfig {
  const { name, url, headers } = target;
  switch (client) {
    case "claude":
      return {
        client,
        label: "Claude Code",
        where: "shell",
        text: shell([
          "claude",
          "mcp",
          "add",
          "--transport",
          "http",
          name,
          url,
          ...headerFlags(headers, "--header"),
        ]),
        alternatives: [
          {
            where: "shell (JSON form)",
            text: shell(["claude", "mcp", "add-json", name, JSON.stringify({ type: "http", url, headers })]),
          },
        ],
      };
    case "gemini":
      return {
        client,
        label: "Gemini CLI",
        where: "~/.gemini/settings.json (or .gemini/settings.json in the project)",
        text: json({ mcpServers: { [name]: { httpUrl: url, headers } } }),
        alternatives: [],
      };
    case "cursor":
      return {
        client,
        label: "Cursor",
        where: ".cursor/mcp.json (or ~/.cursor/mcp.json)",
        text: json({ mcpServers: { [name]: { url, headers } } }),
        alternatives: [],
      };
    case "vscode":
      return {
        client,
        label: "VS Code",
        where: ".vscode/mcp.json",
        text: json({ servers: { [name]: { type: "http", url, headers } } }),
        alternatives: [],
      };
    case "inspector":
      return {
        client,
        label: "MCP Inspector",
        where: "shell",
        text: shell([
          "npx",
          "-y",
          "@modelcontextprotocol/inspector",
          "--cli",
          url,
          "--transport",
          "http",
          ...headerFlags(headers, "--header"),
          "--method",
          "tools/list",
        ]),
        alternatives: [],
      };
  }
}

/** Every client's config for `target`, in {@link MCP_CLIENTS} order. */
export const allClientConfigs = (target: McpServerTarget): ClientConfig[] =>
  MCP_CLIENTS.map((client) => clientConfig(client, target));
