/**
 * The `amber` CLI entry (bundled to `dist/cli/amber.mjs`). Commands are data; this file only picks
 * one, parses its arguments and runs it under the single top-level error handler: failures print
 * `error: <message>` on stderr and exit non-zero. stdout carries only command output.
 */

import { printable } from "../printable.ts";
import { CliError, type CommandDef, parseArgs, renderHelp } from "./command.ts";
import { mcpCommand } from "./commands/mcp.ts";
import { runCommand } from "./commands/run.ts";
import { serveCommand } from "./commands/serve.ts";
import { sessionCommand } from "./commands/session.ts";
import { AMBER_VERSION, guardStdout } from "./tool-server.ts";

const COMMANDS: Record<string, CommandDef<unknown>> = {
  run: runCommand as CommandDef<unknown>,
  session: sessionCommand as CommandDef<unknown>,
  mcp: mcpCommand as CommandDef<unknown>,
  serve: serveCommand as CommandDef<unknown>,
};

const USAGE = `amber ${AMBER_VERSION} — load a tool file and serve its exports under a permission broker

Usage:
  amber run --export-tools [--typed] <file>     print tool schemas as JSON
  amber session [flags] <file>                  JSON-RPC over stdin/stdout
  amber mcp [flags] [--inspect] <file>          MCP server over stdio
  amber serve [flags] <file> [--port N]         HTTP: POST /<tool>, GET /tools, MCP at /mcp
  amber run <file> [args…]                      run a script (amber:mcp importable)
  amber version                                 print the version

Run \`amber <command> --help\` for a command's flags.
`;

/** Runs the CLI for `argv` (without node and script) and returns the exit status. */
export async function main(argv: string[]): Promise<number | null> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    process.stdout.write(USAGE);
    return name === undefined ? 2 : 0;
  }
  if (name === "--version" || name === "-V" || name === "version") {
    process.stdout.write(`amber ${AMBER_VERSION}\n`);
    return 0;
  }
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!command) throw new CliError(`unknown command '${name}' (try \`amber --help\`)`, 2);
  // Before `--` only: what follows it is a file name or a script's own arguments.
  const options = rest.includes("--") ? rest.slice(0, rest.indexOf("--")) : rest;
  if (options.includes("--help") || options.includes("-h")) {
    process.stdout.write(renderHelp(command));
    return 0;
  }
  guardStdout(name);
  const args = parseArgs(command, rest) as { positionals: string[] };
  const code = await command.run(args);
  return code === undefined ? 0 : code;
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== null) process.exitCode = code;
  },
  (error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    // One line, as scripts read it (a JSON parser's message quotes the offending text, newlines too),
    // and escaped: messages quote the tool file's names and errors.
    process.stderr.write(`error: ${printable(message.replace(/\s*[\r\n]+\s*/g, " "))}\n`);
    process.exitCode = error instanceof CliError ? error.exitCode : 1;
  },
);
