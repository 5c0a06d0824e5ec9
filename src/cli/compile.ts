/**
 * Compiles a tool file (.ts/.mts/.js/.mjs) with esbuild into one CommonJS bundle: local imports and
 * packages bundled, Node built-ins left to the (brokered) `require`, `amber:mcp` resolved to the
 * CLI's own McpServer. esbuild is loaded lazily so `--export-tools` never pays for it.
 */
import { dirname } from "node:path";

/** Options of {@link compileToolFile}. */
export interface CompileOptions {
  /** The file `amber:mcp` resolves to (the bundled McpServer module). */
  amberMcpPath: string;
}

/** Bundles `entry` and returns the CommonJS source. Throws with esbuild's first error message. */
export async function compileToolFile(entry: string, options: CompileOptions): Promise<string> {
  const esbuild = await import("esbuild");
  try {
    const result = await esbuild.build({
      entryPoints: [entry],
      absWorkingDir: dirname(entry),
      bundle: true,
      write: false,
      format: "cjs",
      platform: "node",
      target: "node20",
      logLevel: "silent",
      sourcemap: "inline",
      plugins: [
        {
          name: "amber-mcp",
          setup(build) {
            build.onResolve({ filter: /^amber:mcp$/ }, () => ({ path: options.amberMcpPath }));
          },
        },
      ],
    });
    return result.outputFiles[0]!.text;
  } catch (error) {
    const first = (error as { errors?: { text: string; location?: { file: string; line: number } }[] })
      .errors?.[0];
    if (!first) throw error;
    const where = first.location ? ` (${first.location.file}:${first.location.line})` : "";
    throw new Error(`Failed to compile tool file ${entry}: ${first.text}${where}`);
  }
}
