/**
 * The `amba` commands as data: each maps a command path to one platform catalogue operation
 * (`amba_*` tool), with the tool arguments that may be given positionally. Flags come from the
 * tool's input schema (see args.ts); `project_id` comes from `--project` (or the first project).
 */

/** One catalogue-backed command. */
export interface ToolCommand {
  path: readonly string[];
  tool: string;
  positionals?: readonly string[];
  summary: string;
}

/** Every catalogue-backed command, in help order. */
export const TOOL_COMMANDS: readonly ToolCommand[] = [
  { path: ["whoami"], tool: "amba_whoami", summary: "the developer this token belongs to" },
  { path: ["tokens", "list"], tool: "amba_tokens_list", summary: "your developer tokens (no secrets)" },
  {
    path: ["tokens", "create"],
    tool: "amba_tokens_create",
    summary: "create a developer token (shown once; --name label)",
  },
  {
    path: ["tokens", "revoke"],
    tool: "amba_tokens_revoke",
    positionals: ["token_id"],
    summary: "revoke a developer token (a leaked one: create, switch, then revoke)",
  },
  { path: ["projects"], tool: "amba_projects_list", summary: "your projects" },
  {
    path: ["projects", "create"],
    tool: "amba_projects_create",
    positionals: ["name"],
    summary: "create a project",
  },
  {
    path: ["client-keys", "create"],
    tool: "amba_client_keys_create",
    summary: "create a client key for your app's end users (shown once; --name label)",
  },
  {
    path: ["collections", "list"],
    tool: "amba_collections_list",
    summary: "collections with columns and policy",
  },
  {
    path: ["collections", "create"],
    tool: "amba_collections_create",
    positionals: ["name"],
    summary: "create a collection (--columns JSON, --access JSON)",
  },
  {
    path: ["collections", "alter"],
    tool: "amba_collections_alter",
    positionals: ["name"],
    summary: "change a collection (--add-columns JSON, --drop-columns a,b, --access JSON)",
  },
  {
    path: ["collections", "drop"],
    tool: "amba_collections_drop",
    positionals: ["name"],
    summary: "drop a collection with all its rows",
  },
  {
    path: ["expose", "get"],
    tool: "amba_app_mcp_get_exposure",
    summary: "what the app MCP exposes (and names not created yet: pending)",
  },
  {
    path: ["expose"],
    tool: "amba_app_mcp_set_exposure",
    summary: "set what the app MCP exposes (--collections a,b --functions f)",
  },
  { path: ["config", "get"], tool: "amba_app_mcp_get_config", summary: "app MCP config and connection URLs" },
  {
    path: ["config", "set"],
    tool: "amba_app_mcp_update_config",
    summary: "change enabled, auth_mode, slug",
  },
  {
    path: ["functions", "list"],
    tool: "amba_functions_list",
    summary: "functions and their active versions",
  },
  {
    path: ["functions", "deploy"],
    tool: "amba_functions_deploy",
    positionals: ["name"],
    summary: "deploy a new version (--url, --mcp JSON)",
  },
  {
    path: ["functions", "versions"],
    tool: "amba_functions_versions",
    positionals: ["name"],
    summary: "every version of a function",
  },
  {
    path: ["functions", "promote"],
    tool: "amba_functions_promote",
    positionals: ["name", "version"],
    summary: "make a version the active one",
  },
  {
    path: ["functions", "delete"],
    tool: "amba_functions_delete",
    positionals: ["name"],
    summary: "delete a function with all its versions",
  },
  {
    path: ["functions", "signing-secret"],
    tool: "amba_functions_signing_secret",
    summary: "the secret your functions verify x-amba-signature with",
  },
  {
    path: ["functions", "rotate-signing-secret"],
    tool: "amba_functions_rotate_signing_secret",
    summary:
      "replace the signing secret (the old one stops at once, or --previous-valid-for-seconds N later)",
  },
  {
    path: ["events", "list"],
    tool: "amba_events_list",
    summary: "events your app sent, the last received first (--name, --limit, --cursor next_cursor)",
  },
  {
    path: ["events", "delete"],
    tool: "amba_events_delete",
    summary: "delete events received before --before <ISO time> (--name N; run again while more: true)",
  },
  {
    path: ["oauth", "grants", "list"],
    tool: "amba_oauth_grants_list",
    summary: "assistants connected through OAuth (--limit N users a page, --cursor next_cursor)",
  },
  {
    path: ["oauth", "grants", "revoke"],
    tool: "amba_oauth_grants_revoke",
    positionals: ["grant_id"],
    summary: "revoke a connected assistant's grant (its tokens stop at once)",
  },
  {
    path: ["billing", "status"],
    tool: "amba_billing_status",
    summary: "usage of a billing period (--period YYYY-MM)",
  },
  {
    path: ["billing", "daily"],
    tool: "amba_billing_daily",
    summary: "usage per UTC day (--from, --to YYYY-MM-DD; default the last 30 days)",
  },
];

/**
 * The words before the first flag (two at most): what an unknown-command error may quote. Not every
 * word that is not a flag: `amba --amba-token <token> …` would print the token.
 */
export function commandWords(argv: string[]): string[] {
  const flag = argv.findIndex((word) => word.startsWith("-"));
  return (flag === -1 ? argv : argv.slice(0, flag)).slice(0, 2);
}

/** The command `argv` starts with (longest path first), and the rest of argv. */
export function findCommand(argv: string[]): { command: ToolCommand; rest: string[] } | undefined {
  const candidates = [...TOOL_COMMANDS].sort((a, b) => b.path.length - a.path.length);
  for (const command of candidates) {
    if (command.path.every((word, i) => argv[i] === word))
      return { command, rest: argv.slice(command.path.length) };
  }
  return undefined;
}
