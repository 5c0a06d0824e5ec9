/**
 * Commands as data (citty's `defineCommand({meta, args, run})` style) and the argv parser behind
 * them. A command declares its options and positionals; the parser turns argv into a typed object
 * or throws a {@link CliError} that the single top-level handler prints as `error: …`.
 */

/** A user-facing failure: printed as `error: <message>` with a non-zero exit status. */
export class CliError extends Error {
  exitCode: number;

  constructor(message: string, exitCode = 1) {
    super(message);
    this.name = "CliError";
    this.exitCode = exitCode;
  }
}

/** One option: `boolean` flags, `string` values, repeatable `list` values, `number` values. */
export interface OptionSpec {
  type: "boolean" | "string" | "list" | "number";
  description: string;
  /** Value placeholder in help output. */
  value?: string;
  /**
   * A `list` option that may stand alone (`--allow-read` like Deno's: everything of its kind), given
   * as `""`. It takes no value when the next token is missing or another option; and when no
   * positional is found at all, the last value such an option took before any positional was the
   * positional (`--allow-net tools.ts --port 0`: the file).
   */
  optionalValue?: boolean;
  /** A one-letter form (`-i`), as the original runtime's clap definitions had. */
  short?: string;
  /** Other long names (`--policy` for `--permission-policy`), not shown in help. */
  aliases?: string[];
}

/** A command definition. */
export interface CommandDef<A = Record<string, unknown>> {
  meta: { name: string; description: string; usage: string };
  options: Record<string, OptionSpec>;
  /** Options accepted and ignored (name → takes a value). */
  ignored?: Record<string, boolean>;
  /**
   * How many positionals the command takes (default: any). One more is a usage error, as clap
   * reported it in the original (`unexpected argument 'b.ts'`).
   */
  maxPositionals?: number;
  /** The exit status; `null` leaves it to what ran (`process.exitCode`, a server still serving). */
  run(args: A & { positionals: string[] }): Promise<number | null | undefined> | number | null | undefined;
}

/** Identity helper that keeps the command's argument type. */
export function defineCommand<A>(def: CommandDef<A>): CommandDef<A> {
  return def;
}

const camel = (name: string) => name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

/**
 * Parses argv for `def`: `--name value`, `--name=value`, repeated list options, positionals.
 * Unknown options are usage errors.
 */
export function parseArgs(def: CommandDef<unknown>, argv: string[], prefix = `amber ${def.meta.name}`) {
  const out: Record<string, unknown> = { positionals: [] as string[] };
  const positionals = out.positionals as string[];
  // The last optional value taken while no positional had been seen (see OptionSpec.optionalValue).
  let borrowed: { key: string; index: number } | undefined;
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]!;
    if (token === "--") {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (!token.startsWith("-") || token === "-") {
      positionals.push(token);
      continue;
    }
    let name: string;
    let inline: string | undefined;
    if (token.startsWith("--")) {
      const eq = token.indexOf("=");
      name = resolveName(def, eq === -1 ? token.slice(2) : token.slice(2, eq));
      inline = eq === -1 ? undefined : token.slice(eq + 1);
    } else {
      // `-i`, `-i=value`: a short form, or a usage error (never a file named `-x` by accident).
      const eq = token.indexOf("=");
      const letter = eq === -1 ? token.slice(1) : token.slice(1, eq);
      const long = Object.entries(def.options).find(([, s]) => s.short === letter)?.[0];
      if (long === undefined)
        throw new CliError(`${prefix}: unknown option ${token.slice(0, eq === -1 ? undefined : eq)}`, 2);
      name = long;
      inline = eq === -1 ? undefined : token.slice(eq + 1);
    }
    // Own names only: `--constructor` is an unknown option, not Object.prototype's.
    const spec = Object.hasOwn(def.options, name) ? def.options[name] : undefined;
    if (!spec) {
      const ignored = def.ignored && Object.hasOwn(def.ignored, name) ? def.ignored[name] : undefined;
      if (ignored === undefined) throw new CliError(`${prefix}: unknown option --${name}`, 2);
      if (ignored && inline === undefined) i++;
      continue;
    }
    const key = camel(name);
    if (spec.type === "boolean") {
      if (inline !== undefined && !/^(true|false)$/.test(inline)) {
        throw new CliError(`${prefix}: --${name} does not take a value`, 2);
      }
      out[key] = inline !== "false";
      continue;
    }
    let value = inline;
    if (value === undefined && spec.optionalValue) {
      const next = argv[i + 1];
      if (next === undefined || (next.startsWith("-") && next !== "-")) value = "";
      else if (positionals.length === 0)
        borrowed = { key, index: ((out[key] as string[] | undefined) ?? []).length };
    }
    if (value === undefined) {
      value = argv[++i];
      if (value === undefined) throw new CliError(`${prefix}: --${name} needs a value`, 2);
    }
    // `--audit-log=` / `--timeout=`: an empty value is no value (it read as "no audit log" and as
    // `--timeout 0`, never); only a grant may stand alone.
    if (value === "" && !spec.optionalValue) throw new CliError(`${prefix}: --${name} needs a value`, 2);
    if (spec.type === "list") out[key] = [...((out[key] as string[] | undefined) ?? []), value];
    else if (spec.type === "number") {
      const n = Number(value);
      if (!Number.isFinite(n) || n < 0)
        throw new CliError(`${prefix}: --${name} needs a non-negative number`, 2);
      out[key] = n;
    } else out[key] = value;
  }
  if (positionals.length === 0 && borrowed) {
    const values = out[borrowed.key] as string[];
    positionals.push(values[borrowed.index]!);
    values[borrowed.index] = "";
  }
  if (def.maxPositionals !== undefined && positionals.length > def.maxPositionals)
    throw new CliError(`${prefix}: unexpected argument '${positionals[def.maxPositionals]}'`, 2);
  return out;
}

/** The option a long name stands for: itself, or the option that lists it as an alias. */
function resolveName(def: CommandDef<unknown>, name: string): string {
  if (Object.hasOwn(def.options, name)) return name;
  return Object.entries(def.options).find(([, spec]) => spec.aliases?.includes(name))?.[0] ?? name;
}

/** Renders `def`'s help text. */
export function renderHelp(def: CommandDef<unknown>): string {
  const lines = [`${def.meta.description}`, "", `Usage: ${def.meta.usage}`, "", "Options:"];
  const width = Math.max(
    ...Object.entries(def.options).map(([n, s]) => n.length + (s.value ? s.value.length + 1 : 0)),
  );
  for (const [name, spec] of Object.entries(def.options)) {
    const left = spec.value ? `${name} ${spec.value}` : name;
    const short = spec.short ? `-${spec.short}, ` : "    ";
    lines.push(`  ${short}--${left.padEnd(width)}  ${spec.description}`);
  }
  return `${lines.join("\n")}\n`;
}
