/**
 * The one HTTP error renderer: `{error:{code,message}}` with a fitting status (an AppError, also
 * when the database driver wrapped it — a missed deadline is 503 `database_timeout`). Unexpected
 * errors are logged and rendered as a generic 500 — never a stack trace.
 */
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import { toAppError } from "../errors.ts";

export function renderError(err: Error, c: Context): Response {
  const appError = toAppError(err);
  if (appError) {
    return c.json(
      { error: { code: appError.code, message: appError.message } },
      appError.status as 400,
      appError.headers,
    );
  }
  if (err instanceof HTTPException) {
    const status = err.status;
    const code = status === 413 ? "payload_too_large" : status === 401 ? "unauthorized" : "bad_request";
    return c.json({ error: { code, message: err.message || "bad request" } }, status);
  }
  console.error("unexpected error", err);
  return c.json({ error: { code: "internal", message: "internal error" } }, 500);
}

export function renderNotFound(c: Context): Response {
  return c.json({ error: { code: "not_found", message: `no route for ${c.req.method} ${c.req.path}` } }, 404);
}
