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

/**
 * True when `err` is (or wraps) a unique-constraint violation — of `constraint` when given, so a
 * caller maps only the violation it means (a slug taken, a name taken) and not one that fired
 * elsewhere in the same statement or batch (a catalog index, another column).
 */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const pg = pgError(err);
  return pg?.code === "23505" && (constraint === undefined || pg.constraint === constraint);
}

/**
 * SQLSTATE of a slug claimed while another developer's release of it is less than 30 days old:
 * raised by the `app_mcp_configs_slug_cooldown` trigger (migrations 0009, 0010), DETAIL the UTC time
 * it is free.
 */
export const SLUG_RESERVED = "ZSLUG";

/**
 * True when the transaction lost a race and may simply be retried: a serialization failure
 * (SQLSTATE 40001, also raised by the `amba_guard()` conflict guard) or a deadlock (40P01).
 */
export function isConcurrentChange(err: unknown): boolean {
  const code = pgError(err)?.code;
  return code === "40001" || code === "40P01";
}
