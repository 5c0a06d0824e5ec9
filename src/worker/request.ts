/**
 * Request helpers for routes: the JSON body, validated with a valibot schema; an HTML form's body.
 */
import type { Context } from "hono";
import type * as v from "valibot";
import { invalidInput } from "../errors.ts";
import { jsonNestingExceeds, MAX_JSON_NESTING } from "../mcp/json-text.ts";
import { checkInputLimits, parseInput } from "../validate.ts";

/**
 * Read the body as a JSON object (400 when it is not JSON, nests deeper than `JSON.parse` should be
 * given — src/mcp/json-text.ts —, or is not an object), check the input limits
 * (depth, sizes, finite numbers, NUL; src/limits.ts) before anything recursive sees it, and validate it.
 */
export async function jsonBody<S extends v.GenericSchema>(c: Context, schema: S): Promise<v.InferOutput<S>> {
  let body: unknown;
  let tooDeep = false;
  try {
    const text = await c.req.text();
    tooDeep = jsonNestingExceeds(text);
    body = text === "" || tooDeep ? {} : JSON.parse(text);
  } catch {
    throw invalidInput("request body must be valid JSON");
  }
  if (tooDeep) throw invalidInput(`body: nested deeper than ${MAX_JSON_NESTING} levels`);
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw invalidInput("request body must be a JSON object");
  }
  checkInputLimits(body, "body");
  return parseInput(schema, body);
}

/**
 * Read an HTML form's body (urlencoded or multipart; any other type reads as no fields). A body that
 * does not parse as its declared type — a multipart body without its boundary — is 400
 * `invalid_input`, never the parser's exception (a 500).
 */
export async function formBody(
  c: Context,
  options: { all?: boolean } = {},
): Promise<Record<string, string | File | (string | File)[]>> {
  try {
    return await c.req.parseBody({ all: options.all ?? false });
  } catch {
    throw invalidInput(
      "request body must be a form (application/x-www-form-urlencoded or multipart/form-data)",
    );
  }
}
