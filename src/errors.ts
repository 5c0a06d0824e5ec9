/**
 * The one error type of the product. Thrown anywhere (routes, services, the data layer); rendered
 * once: as `{error:{code,message}}` with `status` over HTTP, as an `isError` tool result over MCP.
 * Anything that is not an AppError is unexpected and is rendered as a generic 500 / internal error.
 */
export class AppError extends Error {
  readonly status: number;
  readonly code: string;
  /** Extra response headers (e.g. `Retry-After` on a 429). */
  readonly headers?: Record<string, string>;

  constructor(status: number, code: string, message: string) {
    super(message);
    this.name = "AppError";
    this.status = status;
    this.code = code;
  }
}

/** 400 with code `invalid_input`: bad input the caller can fix. */
export const invalidInput = (message: string) => new AppError(400, "invalid_input", message);
/** 404 with code `not_found`. */
export const notFound = (message: string) => new AppError(404, "not_found", message);
/** 401 with code `unauthorized`: missing or invalid credentials. */
export const unauthorized = (message = "missing or invalid credentials") =>
  new AppError(401, "unauthorized", message);
/** 403 with code `forbidden`: valid credentials, not allowed. */
export const forbidden = (message: string) => new AppError(403, "forbidden", message);
/** 403 with code `quota_exceeded`: the account already holds as many of a thing as it may. */
export const quotaExceeded = (message: string) => new AppError(403, "quota_exceeded", message);
/** 409 with code `conflict`. */
export const conflict = (message: string) => new AppError(409, "conflict", message);

/**
 * 503 `database_timeout`: a database round trip missed its deadline (the Worker's `db.ts`), or
 * Postgres cancelled the statement at the role's `statement_timeout` (no `timeoutMs`; migration 0007).
 */
export class DatabaseTimeoutError extends AppError {
  constructor(timeoutMs?: number) {
    super(
      503,
      "database_timeout",
      timeoutMs === undefined
        ? "the database cancelled the statement at its time limit; try again, or narrow the query"
        : `the database did not answer within ${timeoutMs} ms; try again`,
    );
    this.name = "DatabaseTimeoutError";
  }
}

/**
 * 400 `result_too_large`: a database answer over the Worker's cap (`MAX_RESULT_BYTES`, src/worker/db.ts).
 * Reading it whole would risk the memory of the isolate other requests share; fewer rows fit.
 */
export class ResultTooLargeError extends AppError {
  constructor(limitBytes: number) {
    super(
      400,
      "result_too_large",
      `the result exceeds ${limitBytes / (1024 * 1024)} MiB; ask for fewer rows (a smaller limit) or narrow the filter`,
    );
    this.name = "ResultTooLargeError";
  }
}

/**
 * SQLSTATE 57014: Postgres cancelled the statement — the platform never cancels its own statements,
 * so this is the role's `statement_timeout` (migration 0007).
 */
const QUERY_CANCELED = "57014";

/**
 * The AppError an error is or carries: itself, or one the database driver (`sourceError`) or drizzle
 * (`cause`) wrapped — a query that missed its deadline surfaces as a `DatabaseTimeoutError` inside
 * their errors, and a statement Postgres cancelled at its time limit becomes one. Null for anything
 * else (unexpected: rendered as a generic 500 / internal error).
 */
export function toAppError(err: unknown): AppError | null {
  for (let e = err, depth = 0; e && depth < 5; depth++) {
    if (e instanceof AppError) return e;
    if ((e as { code?: unknown }).code === QUERY_CANCELED) return new DatabaseTimeoutError();
    const wrapper = e as { cause?: unknown; sourceError?: unknown };
    e = wrapper.cause ?? wrapper.sourceError;
  }
  return null;
}

/** A failed tool call as both MCP surfaces answer it: `isError` with `{error: {code, message}}`. */
export interface ToolFailure {
  value: { error: { code: string; message: string } };
  isError: true;
}

/**
 * The one `AppError` → tool result renderer: the failure of an AppError (also one the driver or
 * drizzle wrapped, see {@link toAppError}); null for anything else (the caller rethrows it, and the
 * protocol core answers a JSON-RPC internal error).
 */
export function toolFailure(err: unknown): ToolFailure | null {
  const appError = toAppError(err);
  return appError
    ? { value: { error: { code: appError.code, message: appError.message } }, isError: true }
    : null;
}
