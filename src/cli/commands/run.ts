/**
 * `amber run --export-tools <file>`: prints the tool schemas of a file without running it, exactly
 * as the export-tools contract says (every failure is `error: amber run --export-tools: …`).
 * `--typed` (ours) derives JSON Schemas from TypeScript types and `@param` tags.
 */
import { resolve } from "node:path";
import { type AuditSink, NO_AUDIT, openAuditLog } from "../audit-log.ts";
import { CliError, defineCommand } from "../command.ts";
import {
  assertEntryFile,
  discoverTools,
  EXPORT_TOOLS_ERROR_PREFIX,
  renderToolsJson,
  toolsManifestPath,
  validatePrintedTools,
} from "../export-tools.ts";
import {
  buildPolicy,
  canonicalPath,
  decide,
  PermissionDeniedError,
  type PermissionFlags,
} from "../permissions.ts";
import { runScript } from "../run-script.ts";
import { PERMISSION_OPTIONS } from "../tool-server.ts";

interface RunArgs extends PermissionFlags {
  exportTools?: boolean;
  typed?: boolean;
  auditLog?: string;
}

/** The `run` command (only its `--export-tools` mode exists here). */
export const runCommand = defineCommand<RunArgs>({
  meta: {
    name: "run",
    description:
      "Print the tool schemas of a file as JSON without running it (--export-tools), or run a script.",
    usage: "amber run [permission flags] --export-tools [--typed] <file> | amber run <file> [args…]",
  },
  options: {
    "export-tools": { type: "boolean", description: "print the file's tool schemas and exit" },
    typed: { type: "boolean", description: "JSON Schema from TypeScript types and @param tags (ours)" },
    ...PERMISSION_OPTIONS,
  },
  ignored: { watch: false, inspect: false, "inspect-brk": false, preload: true, require: true },
  async run(args) {
    if (!args.exportTools) {
      const [script, ...scriptArgs] = args.positionals;
      if (script === undefined) throw new CliError("amber run: missing <file>", 2);
      await runScript(script, scriptArgs, args);
      // The script's own exit code (`process.exitCode`, or `process.exit`), as node would end it.
      return null;
    }
    const fail = (message: string) => new CliError(`${EXPORT_TOOLS_ERROR_PREFIX} ${message}`);
    const file = args.positionals[0];
    if (file === undefined) throw new CliError(`${EXPORT_TOOLS_ERROR_PREFIX} missing <file>`, 2);
    const entry = resolve(file);
    const manifest = toolsManifestPath(entry);
    let policy: ReturnType<typeof buildPolicy>;
    try {
      policy = buildPolicy(args, process.cwd(), args.sandbox ? [entry, manifest] : []);
    } catch (error) {
      throw fail((error as Error).message);
    }
    try {
      assertEntryFile(entry, file);
    } catch (error) {
      throw fail((error as Error).message);
    }
    let audit: AuditSink;
    try {
      audit = args.auditLog ? openAuditLog(args.auditLog) : NO_AUDIT;
    } catch (error) {
      throw fail((error as Error).message);
    }
    try {
      const checkRead = (path: string) => {
        const resource = canonicalPath(path);
        const decision = decide(policy, "FileSystem", "Read", resource);
        audit.record({ kind: "FileSystem", action: "Read", resource, decision });
        if (decision === "Deny") throw new PermissionDeniedError("FileSystem", "Read", resource);
      };
      const discovered = discoverTools(entry, checkRead);
      validatePrintedTools(discovered.tools);
      let tools = discovered.tools;
      if (args.typed && discovered.source === "scan") {
        const { typedToolSchemas } = await import("../typed-schema.ts");
        tools = await typedToolSchemas(entry, tools, (path) => {
          try {
            checkRead(path);
            return true;
          } catch {
            return false;
          }
        });
      }
      process.stdout.write(renderToolsJson(tools));
      return 0;
    } catch (error) {
      if (error instanceof CliError) throw error;
      throw fail((error as Error).message);
    } finally {
      audit.close();
    }
  },
});
