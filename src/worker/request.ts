/**
 * Request helpers for routes: the JSON body, validated with a valibot schema; an HTML form's body.
 */
import type { Context } from "hono";
import type * as v from "valibot";
import { invalidInput } from "../errors.ts";
import { checkInputLimits, parseInput } from "../validate.ts";

/**
 * Read the body as a JSON object (400 when it is not JSON or not an object), check the input limits
 * (depth, sizes, finite numbers, NUL; src/limits.ts) before anything recursive sees it, and validate it.
 */
export async function jsonBody<S extends v.GenericSchema>(c: Context, schema: S): Promise<v.InferOutput<S>> {
  let body: unknown;
  try {
    const text = await c.req.text();
    body = text === "" ? {} : JSON.parse(text);
  } catch {
    throw invalidInput("request body must be valid JSON");
  }
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
