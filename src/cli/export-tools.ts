/**
 * Tool discovery for a tool file, exactly as the `amber run --export-tools` contract says: a
 * line-oriented scan of the source (never executed), or a sibling `tools.json` that replaces it.
 * The scan and the manifest parser are pure; the loader does the file I/O through an injected
 * permission check so the same code serves `run --export-tools`, `session`, `mcp` and `serve`.
 */
import { readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { TextDecoder } from "node:util";

/** One tool as printed by `--export-tools` and listed by `tools/list`. */
export interface ToolSchema {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** The stderr prefix of every contracted `--export-tools` failure. */
export const EXPORT_TOOLS_ERROR_PREFIX = "amber run --export-tools:";

/** A discovery failure; `message` is the contracted body (without the command prefix). */
export class ExportToolsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ExportToolsError";
  }
}

// Rust's `char::is_whitespace` (what the original runtime's `trim()` strips), which differs from
// JavaScript's `trim()` on U+0085 and U+FEFF.
const RUST_WHITESPACE =
  /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+|[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+$/g;

function trim(text: string): string {
  return text.replace(RUST_WHITESPACE, "");
}

function trimStartAll(text: string, prefix: string): string {
  let out = text;
  while (out.startsWith(prefix)) out = out.slice(prefix.length);
  return out;
}

function trimEndAll(text: string, suffix: string): string {
  let out = text;
  while (out.endsWith(suffix)) out = out.slice(0, out.length - suffix.length);
  return out;
}

function docText(trimmedLine: string): string | null {
  const clean = trim(
    trimStartAll(trimStartAll(trimEndAll(trimStartAll(trimmedLine, "/**"), "*/"), "*"), "//"),
  );
  return clean === "" || clean.startsWith("@") ? null : clean;
}

const EXPORT_PREFIXES = ["export async function ", "export function "];
const IDENTIFIER_RUN = /^[A-Za-z0-9_$]*/;

/** The default schema of a scanned tool (and of a manifest tool without one). */
export function defaultInputSchema(): Record<string, unknown> {
  return { type: "object" };
}

/**
 * Scans source text for `export function` / `export async function` lines and their comments.
 * Not a parser: `/* *\/` blocks hide what is inside them, `/** *\/`, `*` and `//` lines are the
 * description, blank lines keep a pending description and any other line clears it.
 */
export function scanExportedFunctions(source: string): ToolSchema[] {
  const tools: ToolSchema[] = [];
  const seen = new Set<string>();
  let pending: string[] = [];
  // A blank line keeps the pending comment for an export below it, but a comment that starts after
  // the blank line is the one "just above" the export and replaces it (the seed's `// tools.ts` header).
  let blankAfterComment = false;
  let inBlock = false;
  let blockIsDoc = false;
  const push = (trimmed: string) => {
    if (blankAfterComment) {
      pending = [];
      blankAfterComment = false;
    }
    const text = docText(trimmed);
    if (text !== null) pending.push(text);
  };

  for (const line of source.split("\n")) {
    const trimmed = trim(line);
    if (inBlock) {
      if (blockIsDoc) push(trimmed);
      if (trimmed.includes("*/")) {
        inBlock = false;
        blockIsDoc = false;
      }
      continue;
    }
    if (trimmed.startsWith("/*")) {
      blockIsDoc = trimmed.startsWith("/**");
      if (blockIsDoc) push(trimmed);
      if (!trimmed.includes("*/")) inBlock = true;
      continue;
    }
    if (trimmed.startsWith("//") || trimmed.startsWith("*")) {
      push(trimmed);
      continue;
    }
    const prefix = EXPORT_PREFIXES.find((p) => trimmed.startsWith(p));
    const name = prefix === undefined ? "" : IDENTIFIER_RUN.exec(trimmed.slice(prefix.length))![0];
    if (name !== "") {
      if (!seen.has(name)) {
        seen.add(name);
        tools.push({
          name,
          description: pending.length > 0 ? pending.join(" ") : `Exported function \`${name}\``,
          inputSchema: defaultInputSchema(),
        });
      }
      pending = [];
      blankAfterComment = false;
    } else if (trimmed !== "") {
      pending = [];
      blankAfterComment = false;
    } else if (pending.length > 0) {
      blankAfterComment = true;
    }
  }
  return tools;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * A `JSON.parse` message without the excerpt of the text V8 quotes (`Unexpected token 'P',
 * "PATH=/usr/"... is not valid JSON`): a `tools.json` shipped with a tool file may be a link to a
 * file its author may not read (`/proc/self/environ` holds what `--deny-env` kept from the tool),
 * and the error reaches the host. The position, where V8 gives one, stays.
 */
function withoutExcerpt(message: string): string {
  return message.replace(/^Unexpected token .*? is not valid JSON$/s, "Unexpected token: not valid JSON");
}

/**
 * Parses a `tools.json` manifest: `{"tools":[{name, description?, inputSchema?}, …]}` in file
 * order, extra fields ignored. Throws {@link ExportToolsError} with the contracted messages.
 * `inputSchema` values are kept as given (checked by {@link validatePrintedTools}).
 */
export function parseToolsManifest(text: string, manifestPath: string): ToolSchema[] {
  const parseError = (detail: string) =>
    new ExportToolsError(`Failed to parse tools manifest ${manifestPath} as JSON: ${detail}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw parseError(withoutExcerpt((error as Error).message));
  }
  if (!isPlainObject(parsed)) throw parseError("the manifest must be a JSON object with a `tools` array");
  // A missing `tools` is an empty list (reported as such below); `null` or any other non-array is malformed.
  const rawTools = parsed.tools === undefined ? [] : parsed.tools;
  if (!Array.isArray(rawTools)) throw parseError("`tools` must be an array");
  const tools = rawTools.map((raw, index): ToolSchema => {
    if (!isPlainObject(raw)) throw parseError(`tools[${index}] must be an object`);
    if (typeof raw.name !== "string") throw parseError(`tools[${index}] is missing a string \`name\``);
    if (raw.description !== undefined && typeof raw.description !== "string") {
      throw parseError(`tools[${index}].description must be a string`);
    }
    return {
      name: raw.name,
      description: raw.description ?? "",
      inputSchema: (raw.inputSchema === undefined ? defaultInputSchema() : raw.inputSchema) as Record<
        string,
        unknown
      >,
    };
  });
  if (tools.length === 0)
    throw new ExportToolsError(`tools manifest ${manifestPath} has an empty tools array`);
  return tools;
}

/** The print-time checks of `--export-tools`: non-empty unique names and object input schemas. */
export function validatePrintedTools(tools: ToolSchema[]): void {
  const seen = new Set<string>();
  for (const tool of tools) {
    if (tool.name === "") throw new ExportToolsError("tool name must be non-empty");
    if (seen.has(tool.name)) throw new ExportToolsError(`duplicate tool name '${tool.name}'`);
    seen.add(tool.name);
    if (!isPlainObject(tool.inputSchema)) {
      throw new ExportToolsError(`inputSchema for '${tool.name}' must be a JSON object`);
    }
  }
}

/** The manifest that replaces the scan: `tools.json` in the entry's own directory. */
export function toolsManifestPath(entry: string): string {
  return join(dirname(entry), "tools.json");
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

const UTF8 = new TextDecoder("utf-8", { fatal: true });

function readUtf8(path: string, what: string): string {
  try {
    return UTF8.decode(readFileSync(path));
  } catch (error) {
    const detail = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new ExportToolsError(`Failed to read ${what}${path}: ${detail}`);
  }
}

/** Called before each file read; throws to deny (the broker's permission check). */
export type ReadCheck = (path: string) => void;

/** Where the tool list came from, for callers that also need the source. */
export interface DiscoveredTools {
  tools: ToolSchema[];
  source: "manifest" | "scan";
  manifestPath: string;
}

/**
 * Loads the tool list of `entry` (an absolute path to an existing regular file): `tools.json` next
 * to it when that is a regular file, else the source scan. `checkRead` runs before every read.
 */
export function discoverTools(entry: string, checkRead: ReadCheck = () => {}): DiscoveredTools {
  const manifestPath = toolsManifestPath(entry);
  if (isFile(manifestPath)) {
    checkRead(entry);
    checkRead(manifestPath);
    const text = readUtf8(manifestPath, "tools manifest ");
    return { tools: parseToolsManifest(text, manifestPath), source: "manifest", manifestPath };
  }
  checkRead(entry);
  const tools = scanExportedFunctions(readUtf8(entry, ""));
  if (tools.length === 0) {
    throw new ExportToolsError(`No tools.json next to ${entry} and no exported functions found`);
  }
  return { tools, source: "scan", manifestPath };
}

/** Checks that `entry` exists and is a regular file, with the contracted messages. */
export function assertEntryFile(entry: string, shownAs: string = entry): void {
  let isRegular: boolean;
  try {
    isRegular = statSync(entry).isFile();
  } catch {
    throw new ExportToolsError(`entry file not found: ${shownAs}`);
  }
  if (!isRegular) throw new ExportToolsError(`entry must be a file: ${shownAs}`);
}

/** The exact `--export-tools` stdout: pretty JSON with a two-space indent and a trailing newline. */
export function renderToolsJson(tools: ToolSchema[]): string {
  const ordered = tools.map((t) => ({
    name: t.name,
    description: t.description,
    inputSchema: t.inputSchema,
  }));
  return `${JSON.stringify({ tools: ordered }, null, 2)}\n`;
}
