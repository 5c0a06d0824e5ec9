/**
 * The app MCP server: protocol handlers from the core, with a tool provider whose tools are the
 * app's generated surface. Every collection tool runs the data service's operation (the same code
 * the SDK routes run, policy included); every function tool runs the one function execution path.
 * Successful calls are metered as `agent_tool_calls`. Every `tools/call` (batched or not) counts
 * against the caller's rate limit, and its arguments meet the input limits (src/limits.ts) first.
 * Framework-free: the Worker's route (src/worker/routes/app-mcp.ts) builds the context.
 */
import { type AnswerBudget, answerWithin, chargeListAnswer, checkAnswerBudget } from "../answer-budget.ts";
import type { CollectionMeta } from "../data/columns.ts";
import { type Actor, type Operation, runOperation } from "../data/service.ts";
import type { StorageGuard } from "../data/storage-quota.ts";
import type { Db } from "../db.ts";
import { toolFailure } from "../errors.ts";
import type { FunctionUrlPolicy } from "../functions/outbound-policy.ts";
import { invokeFunction } from "../functions/service.ts";
import type { SigningKeys } from "../functions/signing.ts";
import {
  createMcpHandlers,
  type Handlers,
  INVALID_PARAMS,
  RpcError,
  type ToolOutcome,
} from "../mcp/index.ts";
import { appCallerKey, type Limiter } from "../rate-limit.ts";
import type { Meter } from "../usage/metering.ts";
import { checkInputLimits, parseInput } from "../validate.ts";
import { APP_VERSION } from "../version.ts";
import type { AppSurface } from "./surface.ts";
import {
  type AppTool,
  appToolPrefix,
  type CollectionOp,
  canWrite,
  NO_INPUT,
  readOnlyReason,
  type ToolBinding,
} from "./tools.ts";

/** Who calls the app MCP, as resolved with the request's credentials (`Principal`, src/credentials/principal.ts). */
export type AppCaller =
  | { scope: "developer"; developerId: string; project: { id: string } }
  | { scope: "end_user"; project: { id: string }; user: { id: string; email: string }; clientKeyId: string };

/** Everything one app-MCP request needs. */
export interface AppMcpContext {
  db: Db;
  principal: AppCaller;
  /** The data service's view of the principal (`actorOf`). */
  actor: Actor;
  /** The app's surface, loaded on first use (only tools/list and tools/call ask for it). */
  surface: () => Promise<AppSurface>;
  /** The rate limiter every `tools/call` counts against. */
  limit: Limiter;
  /** The outbound policy function tools call their URLs under. */
  policy: FunctionUrlPolicy;
  /** The keys function tools sign their calls with (the project's, from the credential resolution). */
  signing: SigningKeys;
  /** Counts successful calls (`agent_tool_calls`, and `function_invocations` for function tools). */
  meter: Meter;
  /** Refuses inserts and updates while the app's tables are over its storage quota (src/data/storage-quota.ts). */
  storage: StorageGuard;
  /** What this HTTP request's tool results have answered so far (src/answer-budget.ts). */
  answers: AnswerBudget;
}

/** A request context with its surface loaded. */
type Resolved = Omit<AppMcpContext, "surface"> & { surface: AppSurface };

/** The data service's operation behind a collection tool (only `find_nearest` is named differently). */
const operationOf = (op: CollectionOp): Operation => (op === "find_nearest" ? "nearest" : op);

function whoami({ principal, surface }: Resolved) {
  const app = {
    id: surface.meta.projectId,
    name: surface.meta.projectName,
    tool_prefix: appToolPrefix(surface.meta.projectName),
  };
  return principal.scope === "developer"
    ? { app, scope: "developer", developer_id: principal.developerId }
    : { app, scope: "end_user", user: principal.user };
}

/** What `<app>_list_collections` says a scope may not write, and why (the description's wording). */
function readOnly(c: CollectionMeta, scope: AppCaller["scope"]) {
  const reason = readOnlyReason(c, scope);
  return reason ? { read_only: true, read_only_reason: reason } : { read_only: false };
}

function listCollections(ctx: Resolved) {
  const tools = ctx.surface.tools(ctx.principal.scope);
  const toolsOf = (predicate: (b: ToolBinding) => boolean) =>
    tools.filter((t) => predicate(t.binding)).map((t) => t.name);
  return {
    collections: ctx.surface.meta.collections.map((c) => ({
      name: c.name,
      columns: c.columns.map((col) => ({
        name: col.name,
        type: col.type,
        ...(col.dimensions !== undefined ? { dimensions: col.dimensions } : {}),
        ...(col.required ? { required: true } : {}),
        ...(col.description ? { description: col.description } : {}),
      })),
      access: c.access,
      ...readOnly(c, ctx.principal.scope),
      tools: toolsOf((b) => b.kind === "collection" && b.collection.name === c.name),
    })),
    functions: ctx.surface.meta.functions.map((f) => ({
      name: f.name,
      version: f.version,
      description: f.mcp?.description ?? null,
      typed: f.mcp?.input_schema !== undefined,
      tool: toolsOf((b) => b.kind === "function" && b.fn.name === f.name)[0] ?? null,
    })),
  };
}

async function execute(
  binding: ToolBinding,
  args: Record<string, unknown>,
  ctx: Resolved,
): Promise<ToolOutcome> {
  switch (binding.kind) {
    case "whoami":
      parseInput(NO_INPUT, args);
      return { value: whoami(ctx) };
    case "list_collections":
      parseInput(NO_INPUT, args);
      return { value: listCollections(ctx) };
    case "collection": {
      const op = operationOf(binding.op);
      return { value: await runOperation(ctx.db, ctx.actor, binding.collection, op, args, ctx.storage) };
    }
    case "function": {
      const ports = {
        policy: ctx.policy,
        limit: ctx.limit,
        meter: ctx.meter,
        signing: ctx.signing,
      };
      const result = await invokeFunction(ports, ctx.principal, binding.fn, args);
      // Same shape as the invoke route's answer; a non-2xx upstream answer is a failed tool call.
      const value = { status: result.status, body: result.body ?? null };
      return { value, isError: result.status < 200 || result.status >= 300 };
    }
  }
}

/** Collection operations that only read: their result can be dropped unseen. */
const READ_OPS: ReadonlySet<string> = new Set(["list", "get", "find", "aggregate", "find_nearest"]);

/**
 * `execute` behind the caller's rate limit. A write waits for the limiter's answer before it runs.
 * A read is counted in the background where the host offers it (`Limiter.inBackground`): it is
 * refused at once when the caller was refused moments ago, and otherwise answered without waiting
 * for the limiter, whose refusal then refuses the caller's next calls. The limiter protects the
 * database and the other tenants, and a read refused after the fact has cost them no more than one
 * refused and dropped (the read ran while the limiter answered before): the caller's overshoot is
 * bounded by its reads in flight, never by its rate.
 */
async function limitedExecute(
  binding: ToolBinding,
  args: Record<string, unknown>,
  ctx: Resolved,
): Promise<ToolOutcome> {
  const key = appCallerKey(ctx.principal);
  const what = "this app MCP caller";
  const reads = binding.kind === "collection" && READ_OPS.has(binding.op);
  if (reads && ctx.limit.inBackground) ctx.limit.inBackground(key, what);
  else await ctx.limit(key, what);
  return execute(binding, args, ctx);
}

/**
 * A write tool of an exposed collection that this scope is not shown because its write policy
 * refuses the scope (end users on `write: "developer"`, issue 15). Seed 004 gives every exposed
 * collection its `_insert`/`_update`/`_delete` and says tools run "through the same enforcement
 * path as the client SDK", so a call still reaches the data service, which refuses it as the REST
 * route does (403 `forbidden` → an `isError` result), rather than a protocol error.
 */
function policyRefusedTool(ctx: Resolved, name: string): AppTool | undefined {
  if (ctx.principal.scope !== "end_user") return undefined;
  const tool = ctx.surface.tool("developer", name);
  const b = tool?.binding;
  return b?.kind === "collection" && WRITE_OPS.has(b.op) && !canWrite(b.collection, "end_user")
    ? tool
    : undefined;
}

const WRITE_OPS: ReadonlySet<string> = new Set(["insert", "update", "delete"]);

/** Tools per `tools/list` page (the rest behind `nextCursor`). */
export const TOOLS_PAGE_SIZE = 100;

/**
 * Columns the tools of one `tools/list` page may carry (`definitionWeight`, src/app-mcp/definitions.ts:
 * a collection tool weighs its columns plus one): a page ends before the tool that would pass it.
 * By count alone, a first page of 100 tools of 100-column collections cost ≈ 70 ms of JS in a fresh
 * isolate (BENCHMARKS.md "Worst-case CPU per request"), ≈ 7–13 µs a unit. 3,000 bounds that page to
 * its 30-column equivalent while every app whose collections average up to 29 columns keeps 100
 * tools a page: a page is what a client that does not follow `nextCursor` sees, so the budget only
 * shrinks pages of apps wider than the common case (a page always holds one tool, whatever it weighs).
 */
export const TOOLS_PAGE_WEIGHT = 3000;

/** The protocol core's handlers of every app endpoint (the per-app part lives in the request context). */
const coreHandlers = createMcpHandlers<AppMcpContext>({
  serverInfo: { name: "amba-app-mcp", title: "Amba app MCP", version: APP_VERSION },
  instructions:
    "Tools generated from this app's exposed collections and functions. Call <app>_list_collections for the index and <app>_whoami for your scope; list/find return next_cursor for paging.",
  lists: [],
  toolsPageSize: TOOLS_PAGE_SIZE,
  toolsPageWeight: TOOLS_PAGE_WEIGHT,
  // Each (rev, scope) surface keeps one definitions list: its pages are built and serialised once.
  rawToolPages: true,
  tools: {
    list: async (ctx) => (await ctx.surface()).definitions(ctx.principal.scope),
    async call(name, args, context) {
      const ctx: Resolved = { ...context, surface: await context.surface() };
      const tool = ctx.surface.tool(ctx.principal.scope, name) ?? policyRefusedTool(ctx, name);
      if (!tool) throw new RpcError(INVALID_PARAMS, `Unknown tool: ${name}`);
      try {
        checkInputLimits(args, "arguments");
        checkAnswerBudget(ctx.answers);
        const outcome = await limitedExecute(tool.binding, args, ctx);
        // A read whose answer would pass the request's budget is dropped unseen (src/answer-budget.ts).
        const reads = tool.binding.kind === "collection" && READ_OPS.has(tool.binding.op);
        const answered = answerWithin(ctx.answers, outcome, reads);
        // Counted in the isolate's pending usage, written after the response by a batched flush: a
        // failed write can never turn a call that happened into an error an agent would retry.
        if (!outcome.isError) ctx.meter(ctx.surface.meta.projectId, "agent_tool_calls");
        return answered;
      } catch (err) {
        const failure = toolFailure(err);
        if (failure) return failure;
        throw err;
      }
    },
  },
});

/**
 * The MCP handlers of every app endpoint: the core's, with each `tools/list` page charged to the
 * request's answer budget like a tool result (src/answer-budget.ts).
 */
export const appMcpHandlers: Handlers<AppMcpContext> = {
  ...coreHandlers,
  async "tools/list"(params, ctx, message, transport) {
    const list = coreHandlers["tools/list"] as NonNullable<Handlers<AppMcpContext>[string]>;
    const page = await list(params, ctx, message, transport);
    chargeListAnswer(ctx.answers, page);
    return page;
  },
};
