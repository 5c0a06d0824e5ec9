/**
 * The JSON Schema an app tool advertises (`inputSchema` in `tools/list`). It is the conversion of the
 * valibot operation schema that validates the call (`@valibot/to-json-schema`), post-processed:
 *
 * - the recursive `where` filter is inlined instead of referenced (`$ref`/`$defs` break several hosts:
 *   Gemini CLI and Copilot CLI fail to resolve them, others drop `$defs`): the top level lists every
 *   column with its operators; below `WHERE_DEPTH` typed levels the operands of `and` / `or` / `not`
 *   are open objects (`{"type": "object"}`), so the advertised schema never rejects a filter the
 *   server accepts, however deep — the server still validates the whole filter;
 * - inside `where`, operand constraints (`minimum` / `maximum`, `maxItems`, `pattern`) and the
 *   operator objects' `additionalProperties: false` are left out: they repeated a column's bounds in
 *   every operator (an integer column's int32 range nine times) and closed every column's operator
 *   object, while the server validates the same filter and answers with an actionable message
 *   ("where.calories.lt: Expected a 32-bit integer", `unknown operator "like"; allowed: eq, …`).
 *   Types, formats, each column's operators and the closed set of columns stay, so an agent still
 *   builds a valid filter from the schema alone;
 * - properties the caller's scope can never use (end users and `hard`) are left out;
 * - with `plainTypes` (insert), a top-level `{"anyOf": [<type>, {"type": "null"}]}` is advertised as
 *   `<type>`: on insert an absent optional column is already null, and seed 004 shows each column
 *   as its own type ("a text column becomes a string field; an integer column a whole number; an
 *   array column an array"); the server still accepts an explicit null;
 * - `$schema` is dropped: every advertised schema means the same under draft-07 (what the converter
 *   names) and 2020-12 (MCP's default dialect since 2025-11-25), and it cost 52 bytes per tool;
 * - the empty `"required": []` the converter writes on every object is dropped (it says nothing).
 */
import { toJsonSchema } from "@valibot/to-json-schema";
import * as v from "valibot";
import { SERVER_ONLY_ACTIONS } from "../data/schemas.ts";
import { isPlainObject } from "../mcp/jsonrpc.ts";

type Json = Record<string, unknown>;

/** Typed levels of `where`: the top level; nested `and` / `or` / `not` operands are open objects. */
export const WHERE_DEPTH = 1;

const WHERE_REF = "#/$defs/where";
const SAME_SHAPE = "a where filter";

/** What to shape in an operation's JSON Schema. */
export interface AdvertiseOptions {
  /** The collection's `where` schema, when the operation takes one (inlined, never a `$ref`). */
  where?: v.GenericSchema;
  /** Top-level properties this scope can never use, left out of the advertised schema. */
  omit?: readonly string[];
  /** Typed levels of `where` (default `WHERE_DEPTH`; 0: the whole filter is an open object). */
  whereDepth?: number;
  /** Says what an open (untyped) `where` object must look like. */
  openWhere?: string;
  /** Advertise nullable top-level properties as their non-null type (see the module comment). */
  plainTypes?: boolean;
}

/** `{"anyOf": [X, {"type": "null"}], …}` → `{…X, …}`; anything else as it is. */
function withoutNull(property: unknown): unknown {
  if (!isPlainObject(property) || !Array.isArray(property.anyOf) || property.anyOf.length !== 2)
    return property;
  const { anyOf, ...siblings } = property;
  const kept = anyOf.filter((option) => !(isPlainObject(option) && option.type === "null"));
  return kept.length === 1 && isPlainObject(kept[0]) ? { ...kept[0], ...siblings } : property;
}

/** Operand constraints a `where` leaves to the server (see the module comment). */
const SERVER_CHECKED = new Set(["minimum", "maximum", "maxItems", "pattern"]);

/**
 * The `where` schema without operand constraints, at every depth, and with its columns' operator
 * objects open (the filter itself stays closed: an unknown column is refused by the schema too).
 */
function withoutOperandConstraints(node: unknown, isWhere = true): unknown {
  if (Array.isArray(node)) return node.map((item) => withoutOperandConstraints(item, false));
  if (!isPlainObject(node)) return node;
  const out: Json = {};
  for (const k of Object.keys(node)) {
    if (SERVER_CHECKED.has(k) || (!isWhere && k === "additionalProperties")) continue;
    out[k] = withoutOperandConstraints(node[k], false);
  }
  return out;
}

/**
 * The shaped JSON of a converted `where`, per converted schema object: the same for every tool and
 * scope of a collection that types its filter, so it is shaped once, not per tool.
 */
const shapedWheres = new WeakMap<object, Json>();

/** Inline every `{"$ref": "#/$defs/where", …}` below `node` `depth` levels deep; drop empty `required`. */
function shape(node: unknown, where: Json, depth: number, open: string): unknown {
  if (Array.isArray(node)) return node.map((item) => shape(item, where, depth, open));
  if (!isPlainObject(node)) return node;
  if (node.$ref === WHERE_REF) {
    const { $ref: _, ...siblings } = node;
    if (depth <= 0) {
      const doc = typeof siblings.description === "string" ? `${siblings.description}: ` : "";
      return { type: "object", description: `${doc}${open}` };
    }
    return { ...(shape(where, where, depth - 1, open) as Json), ...siblings };
  }
  const out: Json = {};
  for (const k of Object.keys(node)) {
    const value = node[k];
    if (k === "required" && Array.isArray(value) && value.length === 0) continue;
    out[k] = shape(value, where, depth, open);
  }
  return out;
}

/** What an open `where` refers to while converting: only the `$ref` to it is read (`shape`). */
const OPEN_WHERE_TARGET = v.object({});
const OPEN_WHERE = v.optional(v.lazy(() => OPEN_WHERE_TARGET));

/**
 * `schema` with its top-level `where: v.optional(where)` pointing at {@link OPEN_WHERE_TARGET}, or
 * null when it has no such entry. The converter converts every definition it is given in full, and
 * at depth 0 a 100-column filter (every column's operators) was converted to be thrown away: it was
 * the larger part of an aggregate or find_nearest definition. The output is the same `$ref`, which
 * `shape` turns into the open object either way.
 */
function withOpenWhere(schema: v.GenericSchema, where: v.GenericSchema): v.GenericSchema | null {
  const entries = (schema as Partial<v.StrictObjectSchema<v.ObjectEntries, undefined>>).entries;
  const entry = entries?.where as v.OptionalSchema<v.GenericSchema, undefined> | undefined;
  if (entry?.type !== "optional" || entry.wrapped !== where || entry.default !== undefined) return null;
  return { ...schema, entries: { ...entries, where: OPEN_WHERE } } as v.GenericSchema;
}

/** The advertised JSON Schema of an operation's valibot schema (see the module comment). */
export function advertisedInputSchema(schema: v.GenericSchema, options: AdvertiseOptions = {}): Json {
  const { where, omit = [], whereDepth = WHERE_DEPTH, openWhere = SAME_SHAPE, plainTypes = false } = options;
  // `where` is a lazy schema (it refers to itself): name what it resolves to, so every reference to
  // it converts to `#/$defs/where`.
  const target =
    where && where.type === "lazy" ? (where as v.LazySchema<v.GenericSchema>).getter(undefined) : where;
  const open = whereDepth <= 0 && where ? withOpenWhere(schema, where) : null;
  const {
    $defs,
    $schema: _dialect,
    ...converted
  } = toJsonSchema(open ?? schema, {
    ...(open
      ? { definitions: { where: OPEN_WHERE_TARGET } }
      : target
        ? { definitions: { where: target } }
        : {}),
    ignoreActions: SERVER_ONLY_ACTIONS,
  }) as Json;
  // Only a typed level reads the filter's JSON; an open `where` (depth 0) is a plain object.
  let whereJson: Json = {};
  if (whereDepth > 0 && target && isPlainObject($defs) && isPlainObject($defs.where)) {
    const known = shapedWheres.get(target);
    whereJson = known ?? (withoutOperandConstraints($defs.where) as Json);
    if (!known) shapedWheres.set(target, whereJson);
  }
  const json = shape(converted, whereJson, whereDepth, openWhere) as Json;
  if (omit.length && isPlainObject(json.properties)) {
    json.properties = Object.fromEntries(Object.entries(json.properties).filter(([k]) => !omit.includes(k)));
    if (Array.isArray(json.required))
      json.required = json.required.filter((k) => !omit.includes(k as string));
  }
  if (plainTypes && isPlainObject(json.properties)) {
    json.properties = Object.fromEntries(
      Object.entries(json.properties).map(([k, p]) => [k, withoutNull(p)]),
    );
  }
  return json;
}
