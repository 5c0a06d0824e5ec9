/**
 * Input limits on parsed JSON, checked before any schema or the database sees the value: nesting
 * depth, string and array sizes, object widths, finite numbers, no NUL in strings and no control
 * characters in keys (keys are names: columns, filters, fields). The walk uses an explicit stack, so
 * a value nested 10,000 deep costs a loop, not a stack overflow; recursive code downstream (valibot
 * schemas, `where` compilation, Postgres `jsonb`) only ever sees values inside these bounds. Pure.
 */

/** The bounds every JSON input (REST body, MCP tool arguments) must keep. */
export const INPUT_LIMITS = {
  /** Levels of nesting of any value (the root object is level 1). */
  depth: 32,
  /** Characters in one string value. */
  stringChars: 262_144,
  /** Items in one array. */
  arrayItems: 10_000,
  /** Keys of one object. */
  objectKeys: 1_000,
  /** Characters in one object key. */
  keyChars: 256,
} as const;

/** Characters refused in names: C0 controls and DEL. */
const CONTROL = /[\u0000-\u001f\u007f]/;

/** Shown paths are cut here (a path 32 levels deep can be long). */
const MAX_SHOWN_PATH = 160;

function label(path: string): string {
  return path.length > MAX_SHOWN_PATH ? `${path.slice(0, MAX_SHOWN_PATH)}…` : path;
}

function describeNumber(value: number): string {
  return Number.isNaN(value) ? "NaN" : value > 0 ? "Infinity (e.g. 1e999)" : "-Infinity";
}

/** The problem with one primitive value at `path`, or null. */
function primitiveProblem(value: unknown, path: string): string | null {
  if (typeof value === "number") {
    return Number.isFinite(value)
      ? null
      : `${label(path)}: numbers must be finite, got ${describeNumber(value)}`;
  }
  if (typeof value === "string") {
    if (value.length > INPUT_LIMITS.stringChars)
      return `${label(path)}: string longer than ${INPUT_LIMITS.stringChars} characters`;
    if (value.includes("\u0000")) return `${label(path)}: strings must not contain NUL (\\u0000)`;
  }
  return null;
}

/**
 * The first limit `value` breaks, as a message naming the field (`root` for the value itself,
 * `root.a.0.b` below it) and the limit; null when it keeps them all.
 */
export function findLimitViolation(value: unknown, root: string): string | null {
  if (typeof value !== "object" || value === null) return primitiveProblem(value, root);
  const stack: Array<{ node: object; path: string; depth: number }> = [{ node: value, path: root, depth: 1 }];
  for (let frame = stack.pop(); frame !== undefined; frame = stack.pop()) {
    const { node, path, depth } = frame;
    if (depth > INPUT_LIMITS.depth)
      return `${label(path)}: nested deeper than ${INPUT_LIMITS.depth} levels (limit ${INPUT_LIMITS.depth})`;
    if (Array.isArray(node)) {
      if (node.length > INPUT_LIMITS.arrayItems)
        return `${label(path)}: more than ${INPUT_LIMITS.arrayItems} items (limit ${INPUT_LIMITS.arrayItems})`;
      for (let i = 0; i < node.length; i++) {
        const item: unknown = node[i];
        if (typeof item === "object" && item !== null)
          stack.push({ node: item, path: `${path}.${i}`, depth: depth + 1 });
        else {
          const problem = primitiveProblem(item, `${path}.${i}`);
          if (problem) return problem;
        }
      }
      continue;
    }
    const keys = Object.keys(node);
    if (keys.length > INPUT_LIMITS.objectKeys)
      return `${label(path)}: more than ${INPUT_LIMITS.objectKeys} keys (limit ${INPUT_LIMITS.objectKeys})`;
    for (const key of keys) {
      if (key.length > INPUT_LIMITS.keyChars)
        return `${label(path)}: a key is longer than ${INPUT_LIMITS.keyChars} characters`;
      if (CONTROL.test(key)) return `${label(path)}: key ${JSON.stringify(key)} contains a control character`;
      const item: unknown = (node as Record<string, unknown>)[key];
      if (typeof item === "object" && item !== null)
        stack.push({ node: item, path: `${path}.${key}`, depth: depth + 1 });
      else {
        const problem = primitiveProblem(item, `${path}.${key}`);
        if (problem) return problem;
      }
    }
  }
  return null;
}

/** The problem with a name taken from a URL path or a body (`functions/a%00b/invoke`), or null. */
export function nameProblem(name: string): string | null {
  return CONTROL.test(name) ? "must not contain control characters" : null;
}
