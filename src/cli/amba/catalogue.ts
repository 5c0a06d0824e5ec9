/**
 * The platform MCP catalogue as the `amba` CLI sees it: the `tools/list` definitions of
 * `src/platform-mcp/tools.ts`, computed by `scripts/build-cli.ts` at build time and inlined into the
 * bundle (so `--help` and argument parsing work offline, and the CLI carries no server code).
 */

/** A platform tool as `tools/list` shows it. */
export interface CatalogueTool {
  name: string;
  title?: string;
  description?: string;
  inputSchema: JsonSchema;
  annotations?: { readOnlyHint?: boolean; destructiveHint?: boolean };
}

/** The slice of JSON Schema the CLI reads to turn flags into arguments. */
export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  enum?: unknown[];
  description?: string;
  [key: string]: unknown;
}

declare const __AMBA_CATALOGUE__: CatalogueTool[] | undefined;

/** Every `amba_*` tool, by name (empty when run from source without the build's inlined copy). */
export const CATALOGUE: ReadonlyMap<string, CatalogueTool> = new Map(
  (typeof __AMBA_CATALOGUE__ === "undefined" ? [] : __AMBA_CATALOGUE__).map((tool) => [tool.name, tool]),
);
