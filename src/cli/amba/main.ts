/**
 * The `amba` developer CLI (bundled to `dist/cli/amba.mjs`): the platform catalogue's operations as
 * commands, run through the platform MCP (`POST <AMBA_URL>/mcp`), plus `login` and `mcp config`.
 * One top-level catch prints `error: <message>` on stderr and exits non-zero; stdout carries only
 * command output (`--json`: the operation's JSON). What the server sends is printed escaped
 * (../printable.ts): its names and messages cannot drive the terminal.
 */
import { createInterface } from "node:readline/promises";
import { Writable } from "node:stream";
import { clientConfig, isMcpClient, MCP_CLIENTS, serverName } from "../../platform-mcp/client-configs.ts";
import { printable, printableJson } from "../../printable.ts";
import {
  booleanProperties,
  flagHelp,
  hoistGlobalFlags,
  type RawArgs,
  splitArgs,
  toolArguments,
} from "./args.ts";
import { CATALOGUE, type CatalogueTool } from "./catalogue.ts";
import { callTool } from "./client.ts";
import { commandWords, findCommand, TOOL_COMMANDS, type ToolCommand } from "./commands.ts";
import { CliError, usageError } from "./errors.ts";
import { pasteableUrl, render } from "./output.ts";
import { type Connection, configPath, resolveConnection, serviceUrl, writeStoredLogin } from "./settings.ts";

const USAGE = `amba — the Amba developer CLI (talks to the platform MCP at $AMBA_URL/mcp)

Usage:
  amba login --url <url> --token <developer token>   store them in <config dir>/amba/config.json (0600)
${TOOL_COMMANDS.map((c) => `  amba ${c.path.join(" ")}${(c.positionals ?? []).map((p) => ` <${p}>`).join("")}`.padEnd(52) + c.summary).join("\n")}
  amba mcp config [--client ${MCP_CLIENTS.join("|")}] [--hostname]   paste-ready MCP client config

Global flags: --project <id> (default: your first project; your only one for a command that
  deletes or replaces), --json, --data <json>,
  --amba-url <url>, --amba-token <token> (override AMBA_URL / AMBA_TOKEN / the stored login).
Environment: AMBA_URL, AMBA_TOKEN, AMBA_PROJECT. Run \`amba <command> --help\` for its flags.
`;

const flagString = (raw: RawArgs, key: string): string | undefined => {
  const value = raw.flags.get(key);
  if (value === true) throw usageError(`--${key} needs a value`);
  return value;
};

function catalogueTool(name: string): CatalogueTool {
  const tool = CATALOGUE.get(name);
  if (!tool)
    throw new CliError(`this amba build has no catalogue entry for ${name} (rebuild with npm run build:cli)`);
  return tool;
}

const needsProject = (tool: CatalogueTool) => Boolean(tool.inputSchema.properties?.project_id);

/** Whether a tool deletes or replaces something (its `destructiveHint`). */
const destroys = (tool: CatalogueTool) =>
  tool.annotations?.destructiveHint === true && tool.annotations.readOnlyHint !== true;

/**
 * `--project`, `AMBA_PROJECT`, else the developer's first project — for a command that deletes or
 * replaces (`destroys`), only their sole one: with several, "first" is a guess a deletion must not
 * make (the platform MCP asks for `project_id` then too).
 */
async function projectId(conn: Connection, raw: RawArgs, destructive = false): Promise<string> {
  const given = flagString(raw, "project") ?? process.env.AMBA_PROJECT;
  if (given) return given;
  const { projects } = (await callTool(conn, "amba_projects_list", {})) as { projects: { id: string }[] };
  const first = projects[0];
  if (!first) throw new CliError("you have no project yet: create one with `amba projects create <name>`");
  if (destructive && projects.length > 1)
    throw new CliError(
      `--project is required for a command that deletes or replaces: you have ${projects.length} projects (amba projects list)`,
    );
  return first.id;
}

function connection(raw: RawArgs): Connection {
  return resolveConnection({ url: flagString(raw, "amba_url"), token: flagString(raw, "amba_token") });
}

/** `value` as indented JSON that a terminal shows as written. */
const jsonText = (value: unknown) => `${printableJson(JSON.stringify(value, null, 2))}\n`;

function print(raw: RawArgs, result: Record<string, unknown>): void {
  process.stdout.write(raw.flags.has("json") ? jsonText(result) : render(result));
}

async function runToolCommand(command: ToolCommand, argv: string[]): Promise<number> {
  const tool = catalogueTool(command.tool);
  const raw = splitArgs(argv, booleanProperties(tool.inputSchema));
  if (raw.flags.has("help")) {
    const positionals = (command.positionals ?? []).map((p) => ` <${p}>`).join("");
    process.stdout.write(
      `amba ${command.path.join(" ")}${positionals} — ${tool.title ?? command.summary}\n\n${tool.description ?? ""}\n\nFlags:\n${flagHelp(tool.inputSchema, command.positionals).join("\n") || "  (none)"}\n`,
    );
    return 0;
  }
  const args = toolArguments(tool.inputSchema, raw, command.positionals);
  // Before any round trip (and before asking which project): the server would refuse it the same way.
  const missing = (tool.inputSchema.required ?? []).find((key) => key !== "project_id" && !(key in args));
  if (missing !== undefined) throw new CliError(`${missing}: is required`);
  const conn = connection(raw);
  if (needsProject(tool)) args.project_id = await projectId(conn, raw, destroys(tool));
  print(raw, await callTool(conn, command.tool, args));
  return 0;
}

async function readToken(): Promise<string | undefined> {
  if (process.stdin.isTTY) {
    // Read like a password prompt: readline still edits the line, but echoes into a sink, so the
    // token never shows on the screen (or in a terminal's scrollback or a screen recording).
    process.stderr.write("developer token: ");
    const sink = new Writable({ write: (_chunk, _encoding, done) => done() });
    const rl = createInterface({ input: process.stdin, output: sink, terminal: true });
    rl.on("SIGINT", () => {
      rl.close();
      process.stderr.write("\n");
      process.exit(130);
    });
    const answer = await rl.question("");
    rl.close();
    process.stderr.write("\n");
    return answer.trim() || undefined;
  }
  let text = "";
  for await (const chunk of process.stdin) text += chunk;
  return text.trim() || undefined;
}

async function login(argv: string[]): Promise<number> {
  const raw = splitArgs(argv);
  if (raw.flags.has("help")) {
    process.stdout.write(
      "amba login --url <url> [--token <developer token>]\n\nChecks the token (amba_whoami) and stores URL and token in the config file (mode 0600).\nWithout --token: AMBA_TOKEN, else one line from stdin.\n",
    );
    return 0;
  }
  const given = flagString(raw, "url") ?? process.env.AMBA_URL;
  const url = given === undefined ? undefined : serviceUrl(given);
  if (!url) throw usageError("amba login needs --url <service URL> (or AMBA_URL)");
  const token = flagString(raw, "token") ?? process.env.AMBA_TOKEN ?? (await readToken());
  if (!token) throw usageError("amba login needs a developer token (--token, AMBA_TOKEN or stdin)");
  const who = (await callTool({ url, token }, "amba_whoami", {})) as { developer: { email: string } };
  const path = configPath();
  writeStoredLogin({ url, token }, path);
  if (raw.flags.has("json")) print(raw, { email: who.developer.email, url, config: path });
  else
    process.stdout.write(
      printable(`signed in to ${url} as ${who.developer.email} (saved to ${path})`) + "\n",
    );
  return 0;
}

async function mcpConfig(argv: string[]): Promise<number> {
  const raw = splitArgs(argv, new Set(["hostname"]));
  if (raw.flags.has("help")) {
    process.stdout.write(
      `amba mcp config [--client ${MCP_CLIENTS.join("|")}] [--hostname] [--project <id>] [--json]\n\nPrints a paste-ready config connecting that client to the project's app MCP with your developer token\n(--hostname: the <slug> hostname URL instead of the path URL). Without --client: every client.\n`,
    );
    return 0;
  }
  for (const key of raw.flags.keys())
    if (!["client", "hostname", "project", "json", "amba_url", "amba_token"].includes(key))
      throw usageError(`unknown flag --${key} (this command takes: --client, --hostname, --project)`);
  const client = flagString(raw, "client");
  if (client !== undefined && !isMcpClient(client))
    throw usageError(`--client must be one of ${MCP_CLIENTS.join(", ")}`);
  const conn = connection(raw);
  if (!conn.token) throw new CliError("no developer token: set AMBA_TOKEN or run `amba login`");
  const id = await projectId(conn, raw);
  const [config, { projects }] = await Promise.all([
    callTool(conn, "amba_app_mcp_get_config", { project_id: id }) as Promise<{
      connection: { url: string; hostname_url: string | null };
    }>,
    callTool(conn, "amba_projects_list", {}) as Promise<{ projects: { id: string; name: string }[] }>,
  ]);
  let url = config.connection.url;
  if (raw.flags.has("hostname")) {
    if (!config.connection.hostname_url)
      throw new CliError("this project has no slug yet: `amba config set --slug <name>` first");
    url = config.connection.hostname_url;
  }
  url = pasteableUrl(url);
  const name = serverName(projects.find((p) => p.id === id)?.name ?? "app");
  const target = { name, url, headers: { Authorization: `Bearer ${conn.token}` } };
  const configs = (client ? [client] : MCP_CLIENTS).map((c) => clientConfig(c, target));
  if (raw.flags.has("json")) {
    const out = client ? configs[0] : { configs };
    process.stdout.write(jsonText(out));
  } else if (client) {
    process.stdout.write(`${configs[0]?.text}\n`);
  } else {
    for (const c of configs) process.stdout.write(`# ${c.label} — ${c.where}\n${c.text}\n\n`);
  }
  return 0;
}

/** Runs the CLI for `argv` (without node and script) and returns the exit status. */
export async function main(given: string[]): Promise<number> {
  const argv = hoistGlobalFlags(given);
  const [first, second] = argv;
  if (first === undefined || first === "--help" || first === "-h" || first === "help") {
    process.stdout.write(USAGE);
    return first === undefined ? 2 : 0;
  }
  if (first === "login") return login(argv.slice(1));
  if (first === "mcp" && second === "config") return mcpConfig(argv.slice(2));
  const found = findCommand(argv);
  if (!found) {
    const words = commandWords(argv);
    throw usageError(
      words.length === 0
        ? "expected a command before any flag (try `amba --help`)"
        : `unknown command '${words.join(" ")}' (try \`amba --help\`)`,
    );
  }
  return runToolCommand(found.command, found.rest);
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`error: ${printable(message.split("\n")[0] ?? "")}\n`);
    process.exitCode = error instanceof CliError ? error.exitCode : 1;
  },
);
