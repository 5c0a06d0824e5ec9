/**
 * The runtime-neutral half of the function execution path: which arguments a function accepts,
 * the upstream request built from them (identity headers, never the caller's credentials) and the
 * upstream call itself (timeout → 504, unreachable or a status outside 200–599 → 502, body → JSON or
 * `{body: text}`). Redirects are not followed: a 3xx is the upstream's answer, so a public URL
 * cannot bounce to an internal one.
 * The Worker half (auth, rate limit, metering) is `invokeFunction` in `./service.ts`.
 */

import * as v from "valibot";
import { AppError, invalidInput } from "../errors.ts";
import { messageTextWithin } from "../mcp/body.ts";
import { parseInput } from "../validate.ts";
import type { DeployedFunction, FunctionMeta } from "./definition.ts";
import { inputSchemaToValibot } from "./input-schema.ts";

/** How long an upstream function may take before the call fails with 504. */
export const FUNCTION_TIMEOUT_MS = 15_000;
/** Largest upstream response body read back (bytes); larger answers fail with 502. */
export const MAX_RESPONSE_BYTES = 1024 * 1024;

/**
 * Input of a function that declared no input schema: `body` is forwarded as the JSON body,
 * `query` as the query string.
 */
export const GenericInvokeInputSchema = v.strictObject({
  body: v.optional(v.pipe(v.unknown(), v.description("JSON body forwarded to the function."))),
  query: v.optional(
    v.pipe(
      v.record(v.string(), v.union([v.string(), v.number(), v.boolean()])),
      v.description("Query-string parameters forwarded to the function."),
    ),
  ),
});
export type GenericInvokeInput = v.InferOutput<typeof GenericInvokeInputSchema>;

/** Compiled schemas by declaration object: metadata cached in memory compiles once. */
const compiled = new WeakMap<object, v.GenericSchema>();

/**
 * The valibot schema a function's arguments are validated with: the declared input schema converted
 * (cached per declaration object), or `GenericInvokeInputSchema` when none was declared. The tool
 * generator converts the same schema to the tool's JSON Schema.
 */
export function functionArgumentsSchema(fn: Pick<FunctionMeta, "mcp">): v.GenericSchema {
  const declared = fn.mcp?.input_schema;
  if (!declared) return GenericInvokeInputSchema;
  let schema = compiled.get(declared);
  if (!schema) {
    schema = inputSchemaToValibot(declared);
    compiled.set(declared, schema);
  }
  return schema;
}

/** Ends the tool description of a function with no URL yet (its calls fail until one is deployed). */
const NOT_DEPLOYED_NOTE =
  " Not callable yet: the function has no URL deployed, so a call fails with function_not_deployed until its developer deploys one.";

/**
 * The description of a function's `<app>_fn_<name>` tool: the declared one, or — without a declared
 * input schema — an honest note that the input is the generic `{body?, query?}`; and, while the
 * function has no URL, that it cannot be called yet.
 */
export function functionToolDescription(fn: FunctionMeta): string {
  const declared = fn.mcp?.description?.trim();
  const base = declared || `Invoke the deployed function "${fn.name}" (version ${fn.version}).`;
  const note = fn.url === null ? NOT_DEPLOYED_NOTE : "";
  if (fn.mcp?.input_schema) return base + note;
  return (
    `${base} This function declares no input schema, so its input is untyped: pass \`body\` (any JSON, ` +
    "forwarded as the request body) and/or `query` (string parameters for the query string). " +
    `The result is the function's HTTP status and JSON response.${note}`
  );
}

/** What the upstream is told about the caller. */
export interface InvocationIdentity {
  projectId: string;
  userId: string;
  userEmail: string;
  requestId: string;
}

/** A request ready for `fetch`. */
export interface UpstreamRequest {
  url: string;
  init: { method: string; headers: Record<string, string>; body?: string };
}

/** Header values must be printable ASCII; anything else is percent-encoded. */
const headerValue = (value: string) => (/^[\x20-\x7e]*$/.test(value) ? value : encodeURIComponent(value));

/**
 * Validate `input` for `fn` (400 naming the field) and build the upstream POST. Declared-schema
 * functions get the validated arguments as the JSON body; the others get `input.body` as the JSON
 * body (no body when absent) and `input.query` appended to the URL's query string (which is kept
 * byte for byte) — never a name
 * the URL sets itself (400): a second `mode=` after the developer's `mode=safe` is read as the
 * caller's choice by frameworks that take the last or every value.
 */
export function buildUpstreamRequest(
  fn: DeployedFunction,
  identity: InvocationIdentity,
  input: unknown,
): UpstreamRequest {
  const headers: Record<string, string> = {
    accept: "application/json",
    "x-amba-project-id": identity.projectId,
    "x-amba-user-id": identity.userId,
    "x-amba-user-email": headerValue(identity.userEmail),
    "x-amba-function": fn.name,
    "x-amba-function-version": String(fn.version),
    "x-amba-request-id": identity.requestId,
  };
  const url = new URL(fn.url);
  let body: string | undefined;
  if (fn.mcp?.input_schema) {
    // Checked, then sent as received: the schemas convert nothing, and valibot's loose-object output
    // leaves out undeclared keys named `__proto__`, `constructor` and `prototype` (they were dropped).
    parseInput(functionArgumentsSchema(fn), input);
    body = JSON.stringify(input);
  } else {
    const generic = parseInput(GenericInvokeInputSchema, input ?? {});
    const own = new URLSearchParams(url.search);
    const added = new URLSearchParams();
    // The query as received: `v.record`'s output leaves out keys named `__proto__`, `constructor`
    // and `prototype` (they were dropped), and does not check their values either.
    const query = ((input ?? {}) as { query?: Record<string, unknown> }).query ?? {};
    for (const [key, value] of Object.entries(query)) {
      if (typeof value !== "string" && typeof value !== "number" && typeof value !== "boolean")
        throw invalidInput(`query.${key}: expected a string, number or boolean`);
      if (own.has(key)) throw invalidInput(`query.${key}: "${key}" is set by the function's URL`);
      added.append(key, String(value));
    }
    // Appended as text: `url.searchParams.append` serialises the URL's own query again
    // (`a,b` → `a%2Cb`, `flag` → `flag=`), which breaks a developer's signed query.
    const extra = added.toString();
    if (extra) url.search = url.search ? `${url.search}&${extra}` : `?${extra}`;
    if (generic.body !== undefined) body = JSON.stringify(generic.body);
  }
  if (body !== undefined) headers["content-type"] = "application/json";
  return { url: url.toString(), init: { method: "POST", headers, body } };
}

/** The upstream's answer: its status and JSON body (`{body: text}` when it was not JSON). */
export interface UpstreamResult {
  status: number;
  body: unknown;
}

async function readLimited(response: Response): Promise<string> {
  const text = await messageTextWithin(response, MAX_RESPONSE_BYTES);
  if (text === null) {
    throw new AppError(502, "bad_gateway", `function response exceeds ${MAX_RESPONSE_BYTES} bytes`);
  }
  return text;
}

/** Parse an upstream body: JSON when it parses, `{body: text}` otherwise, null when empty. */
export function parseUpstreamBody(text: string): unknown {
  if (text === "") return null;
  try {
    return JSON.parse(text);
  } catch {
    return { body: text };
  }
}

export interface CallOptions {
  timeoutMs?: number;
  fetch?: typeof fetch;
}

/**
 * Send the upstream request. 504 `function_timeout` after `timeoutMs`; 502 `function_unreachable`
 * when the function cannot be reached; otherwise the upstream status and parsed body.
 */
export async function callUpstream(
  request: UpstreamRequest,
  options: CallOptions = {},
): Promise<UpstreamResult> {
  const timeoutMs = options.timeoutMs ?? FUNCTION_TIMEOUT_MS;
  const doFetch = options.fetch ?? fetch;
  const signal = AbortSignal.timeout(timeoutMs);
  let response: Response;
  try {
    response = await doFetch(request.url, { ...request.init, redirect: "manual", signal });
  } catch (err) {
    if (signal.aborted)
      throw new AppError(504, "function_timeout", `function did not answer within ${timeoutMs} ms`);
    const reason = err instanceof Error ? err.message : String(err);
    throw new AppError(502, "function_unreachable", `function could not be reached: ${reason}`);
  }
  // 1xx and non-standard codes (600–999 parse as HTTP) cannot be answered with: the caller would get a 500.
  if (response.status < 200 || response.status > 599) {
    await response.body?.cancel();
    throw new AppError(
      502,
      "bad_gateway",
      `function answered with HTTP status ${response.status}; only 200–599 can be passed on`,
    );
  }
  let text: string;
  try {
    text = await readLimited(response);
  } catch (err) {
    if (err instanceof AppError) throw err;
    if (signal.aborted)
      throw new AppError(504, "function_timeout", `function did not answer within ${timeoutMs} ms`);
    throw new AppError(502, "function_unreachable", "function response could not be read");
  }
  return { status: response.status, body: parseUpstreamBody(text) };
}
