/**
 * What a deployed function is: its name rules, its URL rules, the MCP annotation it ships with, and
 * the deploy request body. Pure (valibot + the input-schema subset checker).
 *
 * Name rule: a lowercase identifier, `^[a-z][a-z0-9_]*$`, at most `FUNCTION_NAME_MAX_LENGTH` (40)
 * characters. The app MCP tool is `<app>_fn_<name>` and MCP tool names must stay within 64 characters
 * of `[a-zA-Z0-9_-]`, so 40 leaves room for an `<app>` prefix of up to 20 characters.
 */
import * as v from "valibot";
import { invalidInput } from "../errors.ts";
import { checkInputSchema, type FunctionInputSchema, MAX_DESCRIPTION_LENGTH } from "./input-schema.ts";

/** Longest function name (see the module comment for the tool-name budget). */
export const FUNCTION_NAME_MAX_LENGTH = 40;
/** Longest function URL. */
export const FUNCTION_URL_MAX_LENGTH = 2048;

const NAME_PATTERN = /^[a-z][a-z0-9_]*$/;

/** A function name: lowercase identifier, 1-40 characters. */
export const FunctionNameSchema = v.pipe(
  v.string(),
  v.regex(NAME_PATTERN, "must be a lowercase identifier (a-z, 0-9, _; starting with a letter)"),
  v.maxLength(FUNCTION_NAME_MAX_LENGTH, `must be at most ${FUNCTION_NAME_MAX_LENGTH} characters`),
);

const isHttpUrl = (value: string) => {
  try {
    const url = new URL(value);
    return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "";
  } catch {
    return false;
  }
};

/** The endpoint a version forwards to: an absolute http(s) URL. */
export const FunctionUrlSchema = v.pipe(
  v.string(),
  v.maxLength(FUNCTION_URL_MAX_LENGTH, `must be at most ${FUNCTION_URL_MAX_LENGTH} characters`),
  v.check(isHttpUrl, "must be an absolute http:// or https:// URL"),
);

/**
 * The MCP annotation as sent: `description` and `input_schema` (the schema is checked separately by
 * `checkInputSchema` so its errors name the exact path). Unknown keys are rejected, not ignored.
 */
export const McpAnnotationInputSchema = v.strictObject({
  description: v.optional(
    v.pipe(
      v.string(),
      v.maxLength(MAX_DESCRIPTION_LENGTH, `must be at most ${MAX_DESCRIPTION_LENGTH} characters`),
    ),
  ),
  input_schema: v.optional(v.unknown()),
});

/**
 * `POST /v1/admin/projects/:id/functions/deploy` body. `url` may be left out: the new version keeps
 * the active version's URL (a new annotation only, seed 004's "metadata for `amba functions deploy`"),
 * and a first deploy without one makes a function with no URL yet — its typed tool exists, a call
 * is a 409 `function_not_deployed` until a deploy gives it a URL.
 */
export const DeployFunctionSchema = v.strictObject({
  name: FunctionNameSchema,
  url: v.optional(FunctionUrlSchema),
  mcp: v.optional(v.nullable(McpAnnotationInputSchema)),
});
export type DeployFunction = v.InferOutput<typeof DeployFunctionSchema>;

/** Largest version number: versions are a Postgres `integer`, which refused a larger one with a 500. */
export const MAX_FUNCTION_VERSION = 2 ** 31 - 1;

/** `POST …/functions/:name/promote` body. */
export const PromoteFunctionSchema = v.strictObject({
  version: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(MAX_FUNCTION_VERSION)),
});
export type PromoteFunction = v.InferOutput<typeof PromoteFunctionSchema>;

/** Longest overlap a rotation may give the secret it replaces: 7 days (Stripe's longest). */
export const MAX_PREVIOUS_VALID_SECONDS = 604_800;

const PREVIOUS_VALID_MESSAGE = `must be a whole number of seconds from 0 to ${MAX_PREVIOUS_VALID_SECONDS} (7 days)`;

/**
 * `POST …/functions/signing-secret/rotate` body, optional (no body or `{}` is 0): for how long the
 * replaced secret is still signed with, next to the new one. 0 stops it at once (after a leak).
 */
export const RotateSigningSecretSchema = v.strictObject({
  previous_valid_for_seconds: v.optional(
    v.pipe(
      v.number(PREVIOUS_VALID_MESSAGE),
      v.integer(PREVIOUS_VALID_MESSAGE),
      v.minValue(0, PREVIOUS_VALID_MESSAGE),
      v.maxValue(MAX_PREVIOUS_VALID_SECONDS, PREVIOUS_VALID_MESSAGE),
    ),
    0,
  ),
});

/** The MCP annotation a version ships with (stored with the version, restored by promote). */
export interface McpAnnotation {
  description?: string;
  input_schema?: FunctionInputSchema;
}

/** An active function version, as the execution path and the tool generator need it. */
export interface FunctionMeta {
  name: string;
  version: number;
  /** Null until a deploy gives the function a URL: it is listed and a tool, but cannot run. */
  url: string | null;
  mcp: McpAnnotation | null;
}

/** A function version that can run: it has a URL. */
export type DeployedFunction = FunctionMeta & { url: string };

/**
 * Most characters of JSON one stored annotation may take. Every exposed function's annotation is in
 * the app's metadata, which an app-MCP request loads whole; the per-part limits of the input schema
 * alone let one annotation reach the 1 MiB body, and 100 such functions made 73 M characters of
 * metadata, 229 MiB of heap to load (Node 22; README "Isolate memory") — past the 128 MB an isolate
 * shares with other tenants. 64 KiB keeps a function within a 100-column collection's order.
 */
export const MAX_ANNOTATION_CHARS = 64 * 1024;

/**
 * Check a parsed annotation: the input schema against the subset (400 naming the path under
 * `mcp.input_schema`), the whole within {@link MAX_ANNOTATION_CHARS} of JSON (400). Returns the
 * annotation to store, or null when none was declared.
 */
export function checkAnnotation(mcp: DeployFunction["mcp"]): McpAnnotation | null {
  if (!mcp) return null;
  const annotation: McpAnnotation = {};
  if (mcp.description !== undefined) annotation.description = mcp.description;
  if (mcp.input_schema !== undefined) {
    annotation.input_schema = checkInputSchema(mcp.input_schema, "mcp.input_schema");
  }
  const chars = JSON.stringify(annotation).length;
  if (chars > MAX_ANNOTATION_CHARS) {
    throw invalidInput(
      `mcp: the annotation is ${chars} characters of JSON; at most ${MAX_ANNOTATION_CHARS} (shorten descriptions or enums)`,
    );
  }
  return annotation;
}
