/**
 * Flags → tool arguments, driven by the tool's input JSON Schema (pure). Each schema property is a
 * flag (`auth_mode` → `--auth-mode`, also `--auth_mode`); values are read by the property's type:
 * strings as given, numbers and booleans parsed, string arrays as comma lists (`--collections a,b`)
 * or JSON, anything else (objects, arrays of objects) as JSON. `--data '<json object>'` gives many
 * arguments at once; flags override it.
 */
import type { JsonSchema } from "./catalogue.ts";
import { usageError } from "./errors.ts";

/** Flags every command accepts (not tool arguments). */
/** `--amba-url`/`--amba-token`, not `--url`: `functions deploy` has a `url` argument of its own. */
export const GLOBAL_FLAGS = ["json", "help", "project", "amba_url", "amba_token", "data"] as const;
const BOOLEAN_GLOBALS = new Set(["json", "help"]);

/** Raw command line: positionals, flags by name (repeats keep the last). */
export interface RawArgs {
  positionals: string[];
  flags: Map<string, string | true>;
}

/** `--name` → `name`, `--auth-mode` → `auth_mode`. */
const flagKey = (flag: string) => flag.replace(/^--?/, "").replaceAll("-", "_");

/**
 * Global flags written before the command move after it: `amba --project p collections list` is
 * `amba collections list --project p` (`--help` lists them as global; they were refused there).
 * Stops at the first token that is not a global flag (`--help` stays put: it prints the usage).
 */
export function hoistGlobalFlags(argv: readonly string[]): string[] {
  const globals: string[] = [];
  let i = 0;
  while (i < argv.length) {
    const token = argv[i] as string;
    if (!token.startsWith("--")) break;
    const eq = token.indexOf("=");
    const key = flagKey(eq > 0 ? token.slice(0, eq) : token);
    if (key === "help" || !(GLOBAL_FLAGS as readonly string[]).includes(key)) break;
    if (eq > 0 || BOOLEAN_GLOBALS.has(key)) {
      globals.push(token);
      i += 1;
      continue;
    }
    const value = argv[i + 1];
    if (value === undefined) break;
    globals.push(token, value);
    i += 2;
  }
  return [...argv.slice(i), ...globals];
}

/** Split argv into positionals and flags (`--flag value`, `--flag=value`, `--no-flag`, `-h`). */
export function splitArgs(argv: string[], booleanFlags: ReadonlySet<string> = new Set()): RawArgs {
  const positionals: string[] = [];
  const flags = new Map<string, string | true>();
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i] as string;
    if (token === "--") {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (token === "-h") {
      flags.set("help", true);
      continue;
    }
    if (!token.startsWith("--")) {
      positionals.push(token);
      continue;
    }
    const eq = token.indexOf("=");
    if (eq > 0) {
      flags.set(flagKey(token.slice(0, eq)), token.slice(eq + 1));
      continue;
    }
    const key = flagKey(token);
    if (key.startsWith("no_") && booleanFlags.has(key.slice(3))) {
      flags.set(key.slice(3), "false");
      continue;
    }
    const next = argv[i + 1];
    if (BOOLEAN_GLOBALS.has(key) || next === undefined || (next.startsWith("--") && booleanFlags.has(key))) {
      flags.set(key, true);
      continue;
    }
    flags.set(key, next);
    i++;
  }
  return { positionals, flags };
}

const typesOf = (schema: JsonSchema): string[] => {
  if (schema.anyOf) return schema.anyOf.flatMap(typesOf);
  if (Array.isArray(schema.type)) return schema.type;
  return schema.type ? [schema.type] : [];
};

const flagName = (key: string) => `--${key.replaceAll("_", "-")}`;

function parseJson(key: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw usageError(`${flagName(key)}: expected JSON, got ${JSON.stringify(text)}`);
  }
}

/** One flag's value, read by its property schema. */
export function coerceValue(key: string, raw: string | true, schema: JsonSchema): unknown {
  const types = typesOf(schema);
  if (raw === true) {
    if (types.includes("boolean")) return true;
    throw usageError(`${flagName(key)} needs a value`);
  }
  if (types.includes("null") && raw === "null") return null;
  const type = types.find((t) => t !== "null");
  switch (type) {
    case "string":
      return raw;
    case "integer":
    case "number": {
      const n = Number(raw);
      if (raw.trim() === "" || Number.isNaN(n))
        throw usageError(`${flagName(key)}: expected a number, got "${raw}"`);
      return n;
    }
    case "boolean":
      if (raw === "true" || raw === "false") return raw === "true";
      throw usageError(`${flagName(key)}: expected true or false, got "${raw}"`);
    case "array": {
      if (raw.trimStart().startsWith("[")) return parseJson(key, raw);
      const item = schema.items ?? schema.anyOf?.find((s) => s.items)?.items;
      if (item && typesOf(item).includes("string"))
        return raw === ""
          ? []
          : raw
              .split(",")
              .map((s) => s.trim())
              .filter(Boolean);
      return parseJson(key, raw);
    }
    default:
      return parseJson(key, raw);
  }
}

/**
 * Tool arguments from the command line: `--data` first, then the named positionals, then each flag
 * that names a schema property. Unknown flags are a usage error naming the ones that exist.
 */
export function toolArguments(
  schema: JsonSchema,
  raw: RawArgs,
  positionalNames: readonly string[] = [],
): Record<string, unknown> {
  const properties = schema.properties ?? {};
  const args: Record<string, unknown> = {};
  const data = raw.flags.get("data");
  if (data !== undefined) {
    const parsed = data === true ? undefined : parseJson("data", data);
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
      throw usageError("--data: expected a JSON object");
    Object.assign(args, parsed);
  }
  if (raw.positionals.length > positionalNames.length)
    throw usageError(`unexpected argument "${raw.positionals[positionalNames.length]}"`);
  raw.positionals.forEach((value, i) => {
    const key = positionalNames[i] as string;
    args[key] = coerceValue(key, value, properties[key] ?? { type: "string" });
  });
  for (const [key, value] of raw.flags) {
    if ((GLOBAL_FLAGS as readonly string[]).includes(key)) continue;
    const property = properties[key];
    if (!property || key === "project_id") {
      const known = Object.keys(properties)
        .filter((k) => k !== "project_id")
        .map(flagName);
      throw usageError(`unknown flag ${flagName(key)} (this command takes: ${known.join(", ") || "none"})`);
    }
    args[key] = coerceValue(key, value, property);
  }
  return args;
}

/** Names of the boolean properties (so `--enabled` alone means true and `--no-enabled` false). */
export const booleanProperties = (schema: JsonSchema): Set<string> =>
  new Set(
    Object.entries(schema.properties ?? {})
      .filter(([, s]) => typesOf(s).includes("boolean"))
      .map(([k]) => k),
  );

/** Flag help lines for a schema (without `project_id`). */
export function flagHelp(schema: JsonSchema, positionalNames: readonly string[] = []): string[] {
  const required = new Set(schema.required ?? []);
  return Object.entries(schema.properties ?? {})
    .filter(([key]) => key !== "project_id" && !positionalNames.includes(key))
    .map(([key, s]) => {
      const type = typesOf(s).join("|") || "json";
      const text = (s.description ?? "").split(/(?<=\.)\s/)[0] ?? "";
      return `  ${`${flagName(key)} <${type}>${required.has(key) ? " (required)" : ""}`.padEnd(34)} ${text}`;
    });
}
