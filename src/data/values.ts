/**
 * JSON values ↔ Postgres: how a validated input value is bound (always as a parameter, with an
 * explicit cast), and — for column defaults only, because DDL cannot take parameters — how it is
 * rendered as an escaped literal.
 */
import { type SQL, sql } from "drizzle-orm";
import { arrayElementType, type ColumnSpec, type ColumnType, pgType } from "./columns.ts";

/** Postgres array literal (`{"a","b\"c"}`) for a list of scalar values; elements always quoted. */
export function arrayLiteral(values: readonly unknown[]): string {
  const items = values.map((item) => `"${String(item).replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`);
  return `{${items.join(",")}}`;
}

/** The parameter value (text, number or boolean) that carries `value` for a column of `type`. */
export function toParam(type: ColumnType, value: unknown): string | number | boolean {
  if (arrayElementType(type)) return arrayLiteral(value as unknown[]);
  switch (type) {
    case "json":
      return JSON.stringify(value);
    case "vector":
      return `[${(value as number[]).join(",")}]`;
    case "bigint":
      return String(value);
    default:
      return value as string | number | boolean;
  }
}

/** Cast target for a bound value of a column (vectors cast without a dimension: the column checks it). */
const castType = (column: Pick<ColumnSpec, "type" | "dimensions">): string =>
  column.type === "vector" ? "vector" : pgType(column);

/** `$n::<type>` for a non-null value; `NULL` for null. */
export function bind(column: Pick<ColumnSpec, "type" | "dimensions">, value: unknown): SQL {
  if (value === null || value === undefined) return sql`NULL`;
  return sql`${toParam(column.type, value)}::${sql.raw(castType(column))}`;
}

/** `$n::<type>[]` for a list of scalar values of a column (the `in` / `nin` / array operators). */
export function bindList(elementType: ColumnType, values: readonly unknown[]): SQL {
  return sql`${arrayLiteral(values.map((item) => toParam(elementType, item)))}::${sql.raw(`${pgType({ type: elementType })}[]`)}`;
}

/**
 * A string literal safe under any `standard_conforming_strings` setting: `E'…'` with backslashes
 * and quotes doubled. Only used for validated column defaults (no NUL characters).
 */
export function quoteLiteral(text: string): string {
  return `E'${text.replace(/\\/g, "\\\\").replace(/'/g, "''")}'`;
}

/** `DEFAULT` literal of a validated default value: `E'…'::<type>`. */
export function defaultLiteral(column: ColumnSpec): SQL {
  return sql.raw(`${quoteLiteral(String(toParam(column.type, column.default)))}::${pgType(column)}`);
}
