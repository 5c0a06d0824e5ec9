/**
 * What one MCP HTTP request may answer: the tool results of all the calls in it (a JSON-RPC batch
 * holds up to 100) together hold at most {@link MAX_REQUEST_ANSWER_CHARS} characters of text. Each
 * answer is bounded on its own (a database answer by `MAX_RESULT_BYTES`, src/worker/db.ts; a
 * function's by `MAX_RESPONSE_BYTES`; the admin listings by the project quotas), but a batch kept
 * every answer — the values, their text, then the response built from them — until its last call:
 * 100 reads of ≈ 8 MiB each, several copies of each, in an isolate of 128 MB whose other requests,
 * other tenants' included, fail with it. Used by the app MCP (src/app-mcp/handlers.ts) and the
 * platform MCP (src/worker/routes/platform-mcp.ts), one budget per HTTP request. Pure.
 */
import { AppError } from "./errors.ts";
import { RawJson, RpcError, type ToolOutcome } from "./mcp/index.ts";

/** Characters of tool-result text one request answers: as much as one database answer may hold. */
export const MAX_REQUEST_ANSWER_CHARS = 8 * 1024 * 1024;

/** One request's tally of answered characters (mutable, shared by the calls of a batch). */
export interface AnswerBudget {
  chars: number;
}

/** A fresh budget for one HTTP request. */
export const answerBudget = (): AnswerBudget => ({ chars: 0 });

const spent = (): AppError =>
  new AppError(
    400,
    "result_too_large",
    `this request's tool results reached ${MAX_REQUEST_ANSWER_CHARS / (1024 * 1024)} MiB together; send this call in another request (fewer large reads per batch) or ask for less`,
  );

/** Refuses (400 `result_too_large`) a call that would start after the request's budget is spent. */
export function checkAnswerBudget(budget: AnswerBudget): void {
  if (budget.chars >= MAX_REQUEST_ANSWER_CHARS) throw spent();
}

/**
 * The outcome with its text rendered here, once (the MCP core sends `content` as given), and
 * charged to the budget. A `droppable` call (a read: nothing happened that its caller must learn of)
 * whose text would pass the budget is refused instead, unless it is the request's first answer —
 * one call is bounded by its own cap alone. A call that changed something is always answered.
 */
export function answerWithin(budget: AnswerBudget, outcome: ToolOutcome, droppable: boolean): ToolOutcome {
  const { value } = outcome;
  const text = typeof value === "string" ? value : (JSON.stringify(value) ?? "null");
  const before = budget.chars;
  if (droppable && before > 0 && before + text.length > MAX_REQUEST_ANSWER_CHARS) throw spent();
  budget.chars = before + text.length;
  return { ...outcome, content: [{ type: "text", text }] };
}

/**
 * JSON-RPC error code of a `tools/list` refused for the request's budget (the implementation-defined
 * server error range; a tool call's refusal is an `isError` result instead).
 */
export const ANSWER_BUDGET_EXCEEDED = -32001;

/**
 * Charges a `tools/list` result (a page is bounded by its weight, ≈ 1 MB with long column
 * descriptions, and served from memory — a batch asked for it up to 100 times) to the budget; a page
 * past it is a JSON-RPC error, unless it is the request's first answer.
 */
export function chargeListAnswer(budget: AnswerBudget, result: unknown): void {
  const chars = result instanceof RawJson ? result.text.length : (JSON.stringify(result) ?? "").length;
  const before = budget.chars;
  if (before > 0 && before + chars > MAX_REQUEST_ANSWER_CHARS)
    throw new RpcError(
      ANSWER_BUDGET_EXCEEDED,
      `this request's answers reached ${MAX_REQUEST_ANSWER_CHARS / (1024 * 1024)} MiB together; send tools/list in another request`,
    );
  budget.chars = before + chars;
}
