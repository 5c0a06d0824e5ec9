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

/** Whether a key holds a C0 control or DEL (a loop: keys are short, and a regex per key cost more). */
function hasControl(key: string): boolean {
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}

/** Shown paths are cut here (a path 32 levels deep can be long). */
const MAX_SHOWN_PATH = 160;

function label(path: string): string {
  return path.length > MAX_SHOWN_PATH ? `${path.slice(0, MAX_SHOWN_PATH)}…` : path;
}

function describeNumber(value: number): string {
  return Number.isNaN(value) ? "NaN" : value > 0 ? "Infinity (e.g. 1e999)" : "-Infinity";
}

/** What is wrong with one primitive value (its path not said), or null. */
function primitiveProblem(value: unknown): string | null {
  if (typeof value === "number") {
    return Number.isFinite(value) ? null : `numbers must be finite, got ${describeNumber(value)}`;
  }
  if (typeof value === "string") {
    if (value.length > INPUT_LIMITS.stringChars)
      return `string longer than ${INPUT_LIMITS.stringChars} characters`;
    if (value.includes("\u0000")) return "strings must not contain NUL (\\u0000)";
  }
  return null;
}

/** Whether `node` (an array or object) holds nothing: it can break no limit but its own depth. */
function isEmpty(node: object): boolean {
  return Array.isArray(node) ? node.length === 0 : Object.keys(node).length === 0;
}

/** An array or object being walked: its depth, and its parent and key there (for its path). */
interface Frame {
  node: object;
  depth: number;
  parent: Frame | null;
  key: string | number;
}

/**
 * The first limit `value` breaks, as a message naming the field (`root` for the value itself,
 * `root.a.0.b` below it) and the limit; null when it keeps them all.
 *
 * One pass, depth first, in the order the values come (a node's primitives, then its arrays and
 * objects, the last first). Paths are not built while walking: each array or object visited
 * records its parent and key (a {@link Frame}), and the path of the one value at fault is spelled out from them. An
 * empty array or object within the depth limit is not visited at all. (Building a path string for
 * every value cost more than the checks: a 1 MiB argument of 350,000 `{}` or numbers, BENCHMARKS.md
 * "CPU on the heaviest requests (session 11)".)
 */
export function findLimitViolation(value: unknown, root: string): string | null {
  if (typeof value !== "object" || value === null) {
    const problem = primitiveProblem(value);
    return problem && `${label(root)}: ${problem}`;
  }
  /** The path of `frame`, with `key` below it when given. */
  const pathOf = (frame: Frame, key?: string | number): string => {
    const parts: Array<string | number> = key === undefined ? [] : [key];
    for (let f: Frame | null = frame; f !== null; f = f.parent) parts.push(f.key);
    return parts.reverse().join(".");
  };
  const stack: Frame[] = [{ node: value, depth: 1, parent: null, key: root }];
  /** Visits `item`, member `key` of `frame`: a primitive's problem, or null. */
  const visit = (item: unknown, key: string | number, frame: Frame): string | null => {
    if (typeof item !== "object" || item === null) {
      const problem = primitiveProblem(item);
      return problem && `${label(pathOf(frame, key))}: ${problem}`;
    }
    if (frame.depth + 1 <= INPUT_LIMITS.depth && isEmpty(item)) return null;
    stack.push({ node: item, depth: frame.depth + 1, parent: frame, key });
    return null;
  };
  for (let frame = stack.pop(); frame !== undefined; frame = stack.pop()) {
    const { node, depth } = frame;
    if (depth > INPUT_LIMITS.depth)
      return `${label(pathOf(frame))}: nested deeper than ${INPUT_LIMITS.depth} levels (limit ${INPUT_LIMITS.depth})`;
    if (Array.isArray(node)) {
      if (node.length > INPUT_LIMITS.arrayItems)
        return `${label(pathOf(frame))}: more than ${INPUT_LIMITS.arrayItems} items (limit ${INPUT_LIMITS.arrayItems})`;
      for (let i = 0; i < node.length; i++) {
        const problem = visit(node[i], i, frame);
        if (problem) return problem;
      }
      continue;
    }
    const names = Object.keys(node);
    if (names.length > INPUT_LIMITS.objectKeys)
      return `${label(pathOf(frame))}: more than ${INPUT_LIMITS.objectKeys} keys (limit ${INPUT_LIMITS.objectKeys})`;
    for (const key of names) {
      if (key.length > INPUT_LIMITS.keyChars)
        return `${label(pathOf(frame))}: a key is longer than ${INPUT_LIMITS.keyChars} characters`;
      if (hasControl(key))
        return `${label(pathOf(frame))}: key ${JSON.stringify(key)} contains a control character`;
      const problem = visit((node as Record<string, unknown>)[key], key, frame);
      if (problem) return problem;
    }
  }
  return null;
}

/** The problem with a name taken from a URL path or a body (`functions/a%00b/invoke`), or null. */
export function nameProblem(name: string): string | null {
  return CONTROL.test(name) ? "must not contain control characters" : null;
}
