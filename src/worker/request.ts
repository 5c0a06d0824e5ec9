/**
 * Request helpers for routes: the JSON body, validated with a valibot schema.
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
