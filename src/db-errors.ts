/**
 * Postgres errors as they reach us: the driver's error, sometimes wrapped (drizzle puts the driver
 * error in `cause`). One place to find the SQLSTATE and fields.
 */

/** The Postgres fields of an error. */
export interface PgErrorFields {
  code: string;
  message: string;
  detail?: string;
  constraint?: string;
}

/** The Postgres error inside `err` (following `cause`), or null when it is not one. */
export function pgError(err: unknown): PgErrorFields | null {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && /^[0-9A-Z]{5}$/.test(code)) return e as PgErrorFields;
  }
  return null;
}

/** True when `err` is (or wraps) a unique-constraint violation. */
export const isUniqueViolation = (err: unknown): boolean => pgError(err)?.code === "23505";
