/**
 * Checks `tools/call` arguments against a tool's typed input schema before the tool runs. Kept
 * simple on purpose: the top-level properties only — required members, JSON types, `enum`/`const`.
 * Returns a message naming the argument and the expected type, or undefined when they pass.
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
