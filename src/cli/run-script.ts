/**
 * `amber run <file> [args…]`: runs a script the way the seed's "same runtime … as `amber run`" needs
 * it — TypeScript and local imports bundled as for a tool file, `amber:mcp` importable (so a
 * server's `startStdio()` can be served), top-level await, `process.argv` as
 * `[node, <file>, …args]`. It runs in this process, unconfined: the permission flags belong to
 * `run --export-tools`, `session`, `mcp` and `serve`, and with any of them the script is refused
 * rather than run without them.
 */
import { createRequire } from "node:module";
import { dirname, resolve } from "node:path";
import vm from "node:vm";
import { CliError } from "./command.ts";
import { compileToolFile } from "./compile.ts";
import { assertEntryFile } from "./export-tools.ts";
import type { PermissionFlags } from "./permissions.ts";
import { AMBER_VERSION, here } from "./tool-server.ts";

/** The permission-related flags a script run would ignore, as typed on the command line. */
export function permissionFlagsGiven(flags: PermissionFlags & { auditLog?: string }): string[] {
  const given: [unknown, string][] = [
    [flags.sandbox, "--sandbox"],
    [flags.denyFs, "--deny-fs"],
    [flags.denyNet, "--deny-net"],
    [flags.denyEnv, "--deny-env"],
    [flags.denyRun, "--deny-run"],
    [flags.allowRead?.length, "--allow-read"],
    [flags.allowWrite?.length, "--allow-write"],
    [flags.allowNet?.length, "--allow-net"],
    [flags.allowListen?.length, "--allow-listen"],
    [flags.allowEnv?.length, "--allow-env"],
    [flags.allowRun?.length, "--allow-run"],
    [flags.permissionPolicy, "--permission-policy"],
    [flags.auditLog, "--audit-log"],
  ];
  return given.filter(([value]) => value).map(([, name]) => name);
}

/**
 * Runs `file` with `args`. Resolves once its top level has run (a server keeps the process alive on
 * its own); a throw there rejects, with the script's own message.
 */
export async function runScript(
  file: string,
  args: string[],
  flags: PermissionFlags & { auditLog?: string },
): Promise<void> {
  const refused = permissionFlagsGiven(flags);
  if (refused.length > 0) {
    throw new CliError(
      `amber run: ${refused.join(", ")} ${refused.length === 1 ? "applies" : "apply"} only to \`run --export-tools\`, \`session\`, \`mcp\` and \`serve\`; ` +
        "a script is not run under the permission broker (serve its exports with `amber session` or `amber mcp`)",
      2,
    );
  }
  const entry = resolve(file);
  try {
    assertEntryFile(entry, file);
  } catch (error) {
    throw new CliError(`amber run: ${(error as Error).message}`);
  }
  let code: string;
  try {
    code = await compileToolFile(entry, { amberMcpPath: here("./amber-mcp.mjs"), cacheKey: AMBER_VERSION });
  } catch (error) {
    throw new CliError(`amber run: ${(error as Error).message}`);
  }
  const options: Record<string, unknown> = { filename: entry };
  const mainLoader = (vm as unknown as { constants?: Record<string, symbol> }).constants
    ?.USE_MAIN_CONTEXT_DEFAULT_LOADER;
  if (mainLoader) options.importModuleDynamically = mainLoader;
  const factory = vm.compileFunction(
    code,
    ["exports", "require", "module", "__filename", "__dirname"],
    options as unknown as vm.CompileFunctionOptions,
  );
  process.argv = [process.argv[0] ?? process.execPath, entry, ...args];
  const module = { exports: {} as unknown };
  await factory.call(module.exports, module.exports, createRequire(entry), module, entry, dirname(entry));
}
