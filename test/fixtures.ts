/**
 * Shared test literals: the `recipes` collection of DESIGN.md and the `send_welcome_email`
 * annotation of seed 004, so every suite tests the documented examples, spelled once; and a
 * stand-in Rate Limiting binding for the suites that must see each key it was asked about.
 */
import type { ColumnSpec } from "../src/data/columns.ts";

/** DESIGN.md's `recipes` columns. */
export const RECIPES_COLUMNS: ColumnSpec[] = [
  { name: "title", type: "text", required: true, description: "Dish name" },
  { name: "calories", type: "integer" },
  { name: "tags", type: "text[]" },
  { name: "embedding", type: "vector", dimensions: 3 },
];

/** Seed 004's function annotation (`POST …/functions/deploy` `mcp`). */
export const WELCOME_EMAIL_MCP = {
  description: "Send the branded welcome email to a user.",
  input_schema: {
    type: "object" as const,
    properties: {
      user_id: { type: "string" as const, description: "The recipient app user id" },
      template: { type: "string" as const, enum: ["short", "full"] },
    },
    required: ["user_id"],
  },
};

/** A Rate Limiting binding that allows the first `allowed` calls per key and counts every call. */
export function countingLimiter(allowed: number) {
  const calls = new Map<string, number>();
  return {
    calls,
    limit: async ({ key }: { key: string }) => {
      const n = (calls.get(key) ?? 0) + 1;
      calls.set(key, n);
      return { success: n <= allowed };
    },
  };
}
