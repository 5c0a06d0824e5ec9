/**
 * The `amber mcp --inspect` table: one row per tool with its name, description and input schema.
 * Pure: tools in, text out. Names and descriptions are the tool file's: printed escaped.
 */

import { printable } from "../printable.ts";
import type { ToolSchema } from "./export-tools.ts";

function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, col) => Math.max(...rows.map((row) => row[col]!.length)));
  return rows.map((row) =>
    row
      .map((cell, col) => (col === row.length - 1 ? cell : cell.padEnd(widths[col]!)))
      .join("  ")
      .trimEnd(),
  );
}

/** Renders the tools of `file` as a readable, aligned table. */
export function renderToolTable(file: string, tools: ToolSchema[]): string {
  const rows = [
    ["NAME", "DESCRIPTION", "INPUT SCHEMA"],
    ...tools.map((t) => [t.name, t.description || "-", JSON.stringify(t.inputSchema)].map(printable)),
  ];
  const [header, ...body] = table(rows);
  const rule = "-".repeat(Math.max(...[header!, ...body].map((l) => l.length)));
  const count = `${tools.length} tool${tools.length === 1 ? "" : "s"}`;
  return `Tools in ${printable(file)} (${count})\n\n${header}\n${rule}\n${body.join("\n")}\n`;
}
