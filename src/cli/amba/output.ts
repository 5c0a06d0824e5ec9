/**
 * Human output of a tool result (pure): top-level scalars as `key: value` lines, the first array of
 * objects as an aligned table; nested values compact (`[{name, type}]` lists as `title text, …`).
 * `--json` bypasses this and prints the result as JSON. Keys and values are the server's: every
 * piece is printed escaped (printable.ts), so a name cannot drive the terminal or break a row.
 */
import { printable } from "../../printable.ts";
import { CliError } from "./errors.ts";

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** A value printed as one word: `null` too (`-`), so `{url, hostname_url: null}` stays one line. */
const isScalar = (v: unknown): boolean => v === null || typeof v !== "object";

/** One cell, escaped: scalars as text, named lists as names, anything else as compact JSON. */
export const cell = (value: unknown): string => printable(cellText(value));

function cellText(value: unknown): string {
  if (value === null || value === undefined) return "-";
  if (typeof value !== "object") return String(value);
  if (Array.isArray(value)) {
    if (value.every(isScalar)) return value.map(cellText).join(", ") || "-";
    if (value.every((v) => isObject(v) && typeof v.name === "string"))
      return value.map((v) => [v.name, v.type].filter((x) => x !== undefined).join(" ")).join(", ");
  }
  if (isObject(value) && Object.values(value).every(isScalar))
    return Object.entries(value)
      .map(([k, v]) => `${k}=${cellText(v)}`)
      .join(" ");
  return JSON.stringify(value);
}

/** An aligned table of rows (columns: the keys of all rows, in first-seen order). */
export function table(rows: Record<string, unknown>[]): string {
  if (rows.length === 0) return "(none)";
  const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const cells = rows.map((r) => columns.map((c) => cell(r[c])));
  const headers = columns.map(printable);
  const widths = headers.map((c, i) => Math.max(c.length, ...cells.map((row) => (row[i] as string).length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i] as number))
      .join("  ")
      .trimEnd();
  return [line(headers), ...cells.map(line)].join("\n");
}

/** The human rendering of a result. */
export function render(result: Record<string, unknown>): string {
  const lines: string[] = [];
  let listed = false;
  for (const [key, value] of Object.entries(result)) {
    if (!listed && Array.isArray(value) && value.length > 0 && value.every(isObject)) {
      listed = true;
      lines.push(table(value as Record<string, unknown>[]));
    } else if (isObject(value) && !Object.values(value).every(isScalar)) {
      for (const [k, v] of Object.entries(value)) lines.push(`${printable(`${key}.${k}`)}: ${cell(v)}`);
    } else {
      lines.push(`${printable(key)}: ${cell(value)}`);
    }
  }
  return `${lines.join("\n")}\n`;
}

/**
 * A connection URL the server gave, as the URL parser writes it (control and non-ASCII characters
 * percent-encoded): `amba mcp config` puts it into shell commands and files the user pastes.
 */
export function pasteableUrl(text: string): string {
  const url = URL.canParse(text) ? new URL(text) : undefined;
  if (url?.protocol !== "https:" && url?.protocol !== "http:")
    throw new CliError(`the server gave an invalid connection URL: ${JSON.stringify(text)}`);
  return url.href;
}
