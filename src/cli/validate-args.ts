/**
 * Checks against the typed schemas. Arguments, before the tool runs: kept simple on purpose, the
 * top-level properties only — required members, JSON types, `enum`/`const`. Results, before they are
 * sent as `structuredContent`: the whole value, against every keyword the derived schemas use, so
 * what passes here passes a client's full JSON Schema validator too. Both return a message naming
 * the place and the expected type, or undefined when the value passes.
 */

type Schema = Record<string, unknown>;

function jsonType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

function typeMatches(expected: string, actual: string): boolean {
  return expected === actual || (expected === "number" && actual === "integer");
}

/** Whether `value` fits the top level of `schema` (`{}` accepts anything). */
function fits(schema: Schema, value: unknown): boolean {
  if (Array.isArray(schema.anyOf)) return (schema.anyOf as Schema[]).some((s) => fits(s, value));
  const actual = jsonType(value);
  const type = schema.type;
  if (typeof type === "string" && !typeMatches(type, actual)) return false;
  if (Array.isArray(type) && !type.some((t) => typeMatches(String(t), actual))) return false;
  if (Array.isArray(schema.enum) && !schema.enum.includes(value)) return false;
  if ("const" in schema && schema.const !== value) return false;
  return true;
}

/** What `schema` expects, in words: `number`, `"a" | "b"`, `string | null`. */
export function describeExpected(schema: Schema): string {
  if (Array.isArray(schema.anyOf)) return (schema.anyOf as Schema[]).map(describeExpected).join(" | ");
  if (Array.isArray(schema.enum)) return schema.enum.map((v) => JSON.stringify(v)).join(" | ");
  if ("const" in schema) return JSON.stringify(schema.const);
  if (Array.isArray(schema.type)) return schema.type.join(" | ");
  return typeof schema.type === "string" ? schema.type : "any value";
}

/** Checks `args` against `schema`; a message for the first problem, or undefined. */
export function checkArguments(schema: Schema, args: unknown): string | undefined {
  if (schema.type !== "object") return undefined;
  if (jsonType(args) !== "object") return `arguments must be an object, got ${jsonType(args)}`;
  const bag = args as Record<string, unknown>;
  const properties = (schema.properties ?? {}) as Record<string, Schema>;
  for (const name of (schema.required ?? []) as string[]) {
    if (!Object.hasOwn(bag, name) || bag[name] === undefined) {
      const expected = properties[name] ? ` (${describeExpected(properties[name])})` : "";
      return `missing required argument \`${name}\`${expected}`;
    }
  }
  for (const [name, property] of Object.entries(properties)) {
    if (!Object.hasOwn(bag, name)) continue;
    if (!fits(property, bag[name]))
      return `argument \`${name}\` must be ${describeExpected(property)}, got ${jsonType(bag[name])}`;
  }
  return undefined;
}

/** A compiled check: a message for the first problem at or below `path`, or undefined. */
type Check = (value: unknown, path: string) => string | undefined;

const PASS: Check = () => undefined;

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

const member = (path: string, name: string) =>
  IDENTIFIER.test(name) ? `${path}.${name}` : `${path}[${JSON.stringify(name)}]`;

/** A short rendering of a value for a message: primitives as JSON, else their JSON type. */
function shown(value: unknown): string {
  const type = jsonType(value);
  if (type === "object" || type === "array") return type;
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}

const sameValue = (a: unknown, b: unknown) =>
  a === b || (typeof a === "object" && a !== null && JSON.stringify(a) === JSON.stringify(b));

/** RFC 3339 date-time with a time zone (what `format: "date-time"` and `Date#toJSON` agree on). */
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-](\d{2}):(\d{2}))$/;
const DAYS = [0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function isDateTime(text: string): boolean {
  const m = DATE_TIME.exec(text);
  if (!m) return false;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as number[];
  const leap = year! % 4 === 0 && (year! % 100 !== 0 || year! % 400 === 0);
  const days = month === 2 && !leap ? 28 : DAYS[month!];
  const zone = m[9] === undefined || (Number(m[9]) <= 23 && Number(m[10]) <= 59);
  return (
    days !== undefined && day! >= 1 && day! <= days && hour! <= 23 && minute! <= 59 && second! <= 59 && zone
  );
}

function sequence(checks: Check[]): Check {
  if (checks.length === 0) return PASS;
  if (checks.length === 1) return checks[0]!;
  return (value, path) => {
    for (const check of checks) {
      const problem = check(value, path);
      if (problem !== undefined) return problem;
    }
    return undefined;
  };
}

function compileObject(schema: Schema): Check | undefined {
  const properties = Object.entries((schema.properties ?? {}) as Record<string, Schema>).map(
    ([name, property]) => [name, compile(property)] as const,
  );
  const required = (schema.required ?? []) as string[];
  const extra = schema.additionalProperties;
  if (properties.length === 0 && required.length === 0 && extra === undefined) return undefined;
  const known = new Set(properties.map(([name]) => name));
  const extraCheck = typeof extra === "object" && extra !== null ? compile(extra as Schema) : undefined;
  return (value, path) => {
    if (jsonType(value) !== "object") return undefined;
    const bag = value as Record<string, unknown>;
    for (const name of required)
      if (!Object.hasOwn(bag, name)) return `${path} is missing required property \`${name}\``;
    for (const [name, check] of properties) {
      if (!Object.hasOwn(bag, name)) continue;
      const problem = check(bag[name], member(path, name));
      if (problem !== undefined) return problem;
    }
    if (extra === undefined || extra === true) return undefined;
    for (const name of Object.keys(bag)) {
      if (known.has(name)) continue;
      if (extra === false) return `${path} has unexpected property \`${name}\``;
      const problem = extraCheck?.(bag[name], member(path, name));
      if (problem !== undefined) return problem;
    }
    return undefined;
  };
}

function compileArray(schema: Schema): Check | undefined {
  const items =
    typeof schema.items === "object" && schema.items !== null ? compile(schema.items as Schema) : undefined;
  const prefix = Array.isArray(schema.prefixItems) ? (schema.prefixItems as Schema[]).map(compile) : [];
  const min = typeof schema.minItems === "number" ? schema.minItems : undefined;
  const max = typeof schema.maxItems === "number" ? schema.maxItems : undefined;
  if (!items && prefix.length === 0 && min === undefined && max === undefined) return undefined;
  return (value, path) => {
    if (!Array.isArray(value)) return undefined;
    if (min !== undefined && value.length < min)
      return `${path} must have at least ${min} items, got ${value.length}`;
    if (max !== undefined && value.length > max)
      return `${path} must have at most ${max} items, got ${value.length}`;
    for (let i = 0; i < value.length; i++) {
      const check = i < prefix.length ? prefix[i] : items;
      const problem = check?.(value[i], `${path}[${i}]`);
      if (problem !== undefined) return problem;
    }
    return undefined;
  };
}

/** Compiles the keywords of `schema` the typed schemas use into one {@link Check}. */
function compile(schema: Schema): Check {
  const checks: Check[] = [];
  if (Array.isArray(schema.anyOf)) {
    const options = (schema.anyOf as Schema[]).map(compile);
    checks.push((value, path) =>
      options.some((option) => option(value, path) === undefined)
        ? undefined
        : `${path} must be ${describeExpected(schema)}, got ${shown(value)}`,
    );
  }
  const type = schema.type;
  const types = typeof type === "string" ? [type] : Array.isArray(type) ? type.map(String) : undefined;
  if (types)
    checks.push((value, path) => {
      const actual = jsonType(value);
      return types.some((t) => typeMatches(t, actual))
        ? undefined
        : `${path} must be ${types.join(" | ")}, got ${actual}`;
    });
  if (Array.isArray(schema.enum)) {
    const options = schema.enum;
    checks.push((value, path) =>
      options.some((option) => sameValue(option, value))
        ? undefined
        : `${path} must be ${describeExpected({ enum: options })}, got ${shown(value)}`,
    );
  }
  if ("const" in schema) {
    const expected = schema.const;
    checks.push((value, path) =>
      sameValue(expected, value)
        ? undefined
        : `${path} must be ${JSON.stringify(expected)}, got ${shown(value)}`,
    );
  }
  if (schema.format === "date-time")
    checks.push((value, path) =>
      typeof value !== "string" || isDateTime(value)
        ? undefined
        : `${path} must be an RFC 3339 date-time string, got ${shown(value)}`,
    );
  const object = compileObject(schema);
  if (object) checks.push(object);
  const array = compileArray(schema);
  if (array) checks.push(array);
  return sequence(checks);
}

/**
 * Compiles a tool's output schema once into a check of its results (the message names the place
 * under `result`, e.g. `result.items[2].name must be string, got number`).
 */
export function compileResultCheck(schema: Schema): (value: unknown) => string | undefined {
  const check = compile(schema);
  return (value) => check(value, "result");
}
