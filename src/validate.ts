/**
 * valibot at the edge: parse input against a schema and turn the first issues into one message
 * that names the field and what was expected (`calories: expected number, received "many"`).
 */
import * as v from "valibot";
import { invalidInput } from "./errors.ts";
import { findLimitViolation } from "./limits.ts";

/** Human-readable summary of valibot issues, field path first. */
export function describeIssues(issues: readonly v.BaseIssue<unknown>[]): string {
  return issues
    .slice(0, 5)
    .map((issue) => {
      const path = v.getDotPath(issue);
      // valibot's default for a strict object's unknown key reads "Invalid key: Expected never …",
      // and for a missing required key `Invalid key: Expected "name" but received undefined`.
      const invalidKey = issue.message.startsWith("Invalid key");
      const message =
        invalidKey && issue.expected === "never"
          ? "unknown field"
          : invalidKey && issue.received === "undefined"
            ? "is required"
            : issue.message;
      return path ? `${path}: ${message}` : message;
    })
    .join("; ");
}

/** Parse or throw a 400 `invalid_input` AppError. */
export function parseInput<S extends v.GenericSchema>(schema: S, input: unknown): v.InferOutput<S> {
  const result = v.safeParse(schema, input);
  if (!result.success) throw invalidInput(describeIssues(result.issues));
  return result.output;
}

/**
 * Throw a 400 `invalid_input` when parsed JSON breaks an input limit (depth, sizes, non-finite
 * numbers, NUL, control characters in keys); `root` names the value in the message (`body`, `arguments`).
 */
export function checkInputLimits(value: unknown, root: string): void {
  const problem = findLimitViolation(value, root);
  if (problem) throw invalidInput(problem);
}
