/**
 * A deployed function's declared `input_schema`: the supported JSON Schema subset, checked at deploy
 * time, and its conversion to the valibot schema that validates invocation arguments (and, through
 * `@valibot/to-json-schema`, becomes the tool's `inputSchema` in `tools/list`).
 *
 * The subset: a root `{type: "object"}` whose `properties` are `string` / `number` / `integer` /
 * `boolean` / `array` (with `items` of the same subset) / `object` (nested, same subset), with
 * `enum` (string, number and integer only), `required`, `description` and, on objects,
 * `additionalProperties: false`. Anything else — `$ref`, `oneOf`, `pattern`, a schema or `true` for
 * `additionalProperties`, type lists, unknown keywords — is rejected with a message naming the
 * offending path, never silently ignored. Objects accept extra keys (JSON Schema's default), so
 * nothing an agent sends beyond the declared properties is dropped on the way — unless the object
 * says `additionalProperties: false`: then an undeclared key is a 400 naming it, so a developer can
 * keep an end user from sending `is_admin: true` along.
 */
import * as v from "valibot";
import { invalidInput } from "../errors.ts";
import { isPlainObject } from "../mcp/jsonrpc.ts";

/** A string property, optionally restricted to `enum` values. */
export interface StringPropertySchema {
  type: "string";
  enum?: string[];
  description?: string;
}

/** A number or integer property, optionally restricted to `enum` values. */
export interface NumberPropertySchema {
  type: "number" | "integer";
  enum?: number[];
  description?: string;
}

export interface BooleanPropertySchema {
  type: "boolean";
  description?: string;
}

/** An array; without `items` its elements are any JSON value. */
export interface ArrayPropertySchema {
  type: "array";
  items?: PropertySchema;
  description?: string;
}

export interface ObjectPropertySchema {
  type: "object";
  properties?: Record<string, PropertySchema>;
  required?: string[];
  /** `false`: keys outside `properties` are refused (absent: accepted and forwarded). */
  additionalProperties?: false;
  description?: string;
}

export type PropertySchema =
  | StringPropertySchema
  | NumberPropertySchema
  | BooleanPropertySchema
  | ArrayPropertySchema
  | ObjectPropertySchema;

/** A checked function input schema: always an object at the root. */
export type FunctionInputSchema = ObjectPropertySchema;

/** How deep objects and arrays may nest below the root. */
export const MAX_SCHEMA_DEPTH = 8;
/** Properties across the whole schema. */
export const MAX_SCHEMA_PROPERTIES = 256;
/** Values of one `enum`. */
export const MAX_ENUM_VALUES = 256;
/** Characters of one `description`. */
export const MAX_DESCRIPTION_LENGTH = 2048;
/** Characters of one property name. */
export const MAX_PROPERTY_NAME_LENGTH = 128;

const TYPES = ["string", "number", "integer", "boolean", "array", "object"] as const;
type TypeName = (typeof TYPES)[number];

const KEYWORDS_BY_TYPE: Record<TypeName, readonly string[]> = {
  string: ["type", "description", "enum"],
  number: ["type", "description", "enum"],
  integer: ["type", "description", "enum"],
  boolean: ["type", "description"],
  array: ["type", "description", "items"],
  object: ["type", "description", "properties", "required", "additionalProperties"],
};
const ALL_KEYWORDS = [
  "type",
  "description",
  "enum",
  "properties",
  "required",
  "additionalProperties",
  "items",
];

/**
 * Names every object answers already (`toString`, `valueOf`, `hasOwnProperty`, `constructor`,
 * `__proto__`, …) and `prototype`. valibot reads a declared property with `key in input`, so an
 * optional `toString` that the arguments left out was read as Object.prototype's function and every
 * such call failed; `__proto__` would set the prototype instead of a property and vanish.
 */
const isInheritedName = (name: string) => name === "prototype" || name in Object.prototype;

const show = (value: unknown) => JSON.stringify(value) ?? String(value);

/** Dotted path of a property name; names that are not identifiers are bracketed. */
const child = (path: string, key: string) =>
  /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;

class Checker {
  properties = 0;

  fail(path: string, message: string): never {
    throw invalidInput(`${path}: ${message}`);
  }

  node(value: unknown, path: string, depth: number): PropertySchema {
    if (!isPlainObject(value)) this.fail(path, `expected a schema object, received ${show(value)}`);
    const type = value.type;
    if (type === undefined) this.fail(path, `"type" is required (one of ${TYPES.join(", ")})`);
    if (Array.isArray(type)) this.fail(`${path}.type`, "type lists are not supported; declare one type");
    if (typeof type !== "string" || !(TYPES as readonly string[]).includes(type)) {
      this.fail(`${path}.type`, `unsupported type ${show(type)}; expected one of ${TYPES.join(", ")}`);
    }
    const typeName = type as TypeName;
    const allowed = KEYWORDS_BY_TYPE[typeName];
    for (const key of Object.keys(value)) {
      if (allowed.includes(key)) continue;
      if (ALL_KEYWORDS.includes(key)) {
        this.fail(child(path, key), `"${key}" is not allowed on type "${typeName}"`);
      }
      this.fail(
        child(path, key),
        `keyword "${key}" is not supported; the input_schema subset allows ${ALL_KEYWORDS.join(", ")}`,
      );
    }

    const description = this.description(value.description, `${path}.description`);
    const withDescription = <T extends PropertySchema>(node: T): T =>
      description === undefined ? node : { ...node, description };

    switch (typeName) {
      case "string": {
        const values = this.enumValues(value.enum, `${path}.enum`, (item) => typeof item === "string");
        return withDescription<StringPropertySchema>({
          type: "string",
          ...(values ? { enum: values as string[] } : {}),
        });
      }
      case "number":
      case "integer": {
        const accepts =
          typeName === "integer"
            ? (item: unknown) => Number.isInteger(item)
            : (item: unknown) => typeof item === "number" && Number.isFinite(item);
        const values = this.enumValues(value.enum, `${path}.enum`, accepts);
        return withDescription<NumberPropertySchema>({
          type: typeName,
          ...(values ? { enum: values as number[] } : {}),
        });
      }
      case "boolean":
        return withDescription<BooleanPropertySchema>({ type: "boolean" });
      case "array": {
        if (depth >= MAX_SCHEMA_DEPTH) this.fail(path, `nesting deeper than ${MAX_SCHEMA_DEPTH} levels`);
        const items =
          value.items === undefined ? undefined : this.node(value.items, `${path}.items`, depth + 1);
        return withDescription<ArrayPropertySchema>({ type: "array", ...(items ? { items } : {}) });
      }
      case "object":
        if (depth >= MAX_SCHEMA_DEPTH) this.fail(path, `nesting deeper than ${MAX_SCHEMA_DEPTH} levels`);
        return withDescription(this.object(value, path, depth + 1));
    }
  }

  object(value: Record<string, unknown>, path: string, depth: number): ObjectPropertySchema {
    const result: ObjectPropertySchema = { type: "object" };
    let names: string[] = [];
    if (value.properties !== undefined) {
      if (!isPlainObject(value.properties)) {
        this.fail(
          `${path}.properties`,
          `expected an object of property schemas, received ${show(value.properties)}`,
        );
      }
      const properties: Record<string, PropertySchema> = {};
      names = Object.keys(value.properties);
      for (const name of names) {
        const at = child(`${path}.properties`, name);
        if (name.length === 0 || name.length > MAX_PROPERTY_NAME_LENGTH) {
          this.fail(at, `property names must be 1-${MAX_PROPERTY_NAME_LENGTH} characters`);
        }
        if (isInheritedName(name)) {
          this.fail(at, `"${name}" cannot be a property name`);
        }
        this.properties += 1;
        if (this.properties > MAX_SCHEMA_PROPERTIES) {
          this.fail(at, `more than ${MAX_SCHEMA_PROPERTIES} properties in one schema`);
        }
        properties[name] = this.node(value.properties[name], at, depth);
      }
      result.properties = properties;
    }
    if (value.required !== undefined) {
      const at = `${path}.required`;
      if (!Array.isArray(value.required)) this.fail(at, `expected an array of property names`);
      const seen = new Set<string>();
      value.required.forEach((name, index) => {
        if (typeof name !== "string")
          this.fail(`${at}[${index}]`, `expected a property name, received ${show(name)}`);
        if (!names.includes(name)) this.fail(`${at}[${index}]`, `"${name}" is not declared in properties`);
        if (seen.has(name)) this.fail(`${at}[${index}]`, `"${name}" is listed twice`);
        seen.add(name);
      });
      result.required = [...seen];
    }
    if (value.additionalProperties !== undefined) {
      if (value.additionalProperties !== false) {
        this.fail(
          `${path}.additionalProperties`,
          "only false is supported (extra keys are accepted when it is absent)",
        );
      }
      result.additionalProperties = false;
    }
    return result;
  }

  description(value: unknown, path: string): string | undefined {
    if (value === undefined) return undefined;
    if (typeof value !== "string") this.fail(path, `expected a string, received ${show(value)}`);
    if (value.length > MAX_DESCRIPTION_LENGTH)
      this.fail(path, `longer than ${MAX_DESCRIPTION_LENGTH} characters`);
    return value;
  }

  enumValues(value: unknown, path: string, accepts: (item: unknown) => boolean): unknown[] | undefined {
    if (value === undefined) return undefined;
    if (!Array.isArray(value) || value.length === 0) this.fail(path, "expected a non-empty array of values");
    if (value.length > MAX_ENUM_VALUES) this.fail(path, `more than ${MAX_ENUM_VALUES} values`);
    const seen = new Set<unknown>();
    value.forEach((item, index) => {
      if (!accepts(item)) this.fail(`${path}[${index}]`, `${show(item)} does not match the property's type`);
      if (seen.has(item)) this.fail(`${path}[${index}]`, `${show(item)} is listed twice`);
      seen.add(item);
    });
    return [...value];
  }
}

/**
 * Check a declared input schema against the supported subset and return a clean copy.
 * Throws a 400 `invalid_input` AppError whose message starts with the offending path
 * (`mcp.input_schema.properties.code.pattern: keyword "pattern" is not supported; …`).
 */
export function checkInputSchema(value: unknown, path = "input_schema"): FunctionInputSchema {
  const checker: Checker = new Checker();
  if (!isPlainObject(value)) checker.fail(path, `expected a schema object, received ${show(value)}`);
  if (value.type !== "object") checker.fail(`${path}.type`, `the root must be {"type": "object"}`);
  const root = checker.node(value, path, 0);
  return root as FunctionInputSchema;
}

/** The message of an `additionalProperties: false` object's issues: a clear one for an undeclared key. */
const undeclared = (issue: v.BaseIssue<unknown>) =>
  issue.kind === "schema" && issue.expected === "never"
    ? "not a declared property (additionalProperties is false)"
    : issue.message;

function toSchema(node: PropertySchema): v.GenericSchema {
  let schema: v.GenericSchema;
  switch (node.type) {
    case "string":
      schema = node.enum ? v.picklist(node.enum) : v.string();
      break;
    case "number":
      schema = node.enum ? v.picklist(node.enum) : v.number();
      break;
    case "integer":
      schema = v.pipe(node.enum ? v.picklist(node.enum) : v.number(), v.integer()) as v.GenericSchema;
      break;
    case "boolean":
      schema = v.boolean();
      break;
    case "array":
      schema = v.array(node.items ? toSchema(node.items) : v.unknown());
      break;
    case "object": {
      const required = new Set(node.required ?? []);
      const entries: Record<string, v.GenericSchema> = {};
      for (const [name, property] of Object.entries(node.properties ?? {})) {
        const converted = toSchema(property);
        entries[name] = required.has(name) ? converted : v.optional(converted);
      }
      schema =
        node.additionalProperties === false ? v.strictObject(entries, undeclared) : v.looseObject(entries);
      break;
    }
  }
  return node.description === undefined ? schema : v.pipe(schema, v.description(node.description));
}

/**
 * The valibot schema for a checked input schema: validates tool / invoke arguments, and converts
 * back (`toJsonSchema`) to an equivalent JSON Schema.
 */
export function inputSchemaToValibot(schema: FunctionInputSchema): v.GenericSchema {
  return toSchema(schema);
}
