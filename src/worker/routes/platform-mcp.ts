/**
 * The platform MCP: `POST /mcp` (Streamable HTTP, stateless) with the `amba_*` tools of
 * `src/platform-mcp/tools.ts`. Every tool calls the same function its admin REST route calls, so
 * validation, errors, ownership and `meta_rev` bumps are identical; results are the REST responses'
 * JSON (text content + `structuredContent`). `/mcp` on a `<slug>.<APP_MCP_HOST_SUFFIX>` host is the
 * app MCP (routes/app-mcp.ts answers it before this sub-app sees it).
 *
 * Authentication (`Authorization: Bearer <developer token>`):
 * - no Authorization header: the connection works — `initialize`, `tools/list` and
 *   `amba_developer_signup` are open, so an agent can discover the tools and sign up; every other
 *   tool answers an `isError` result `{error: {code: "unauthorized", message}}` telling the agent to
 *   reconnect with the token;
 * - an Authorization header that is not a valid developer token: HTTP 401 for every request
 *   (with `WWW-Authenticate: Bearer realm="amba", error="invalid_token", error_description="…"`), so
 *   a misconfigured client fails loudly at connect time and shows why;
 * - a valid token: every tool; a `project_id` tool also resolves the project the way the admin
 *   routes do (`authenticateProjectAdmin`: another developer's project is "project not found").
 *
 * A tool that ran and failed (AppError) answers `isError` with `{error: {code, message}}`, as the app
 * MCP does; an unknown tool is JSON-RPC -32602. Platform tool calls are not metered; each one of a
 * developer counts against the developer's control-plane rate limit (`ADMIN_RATE_LIMITER`, shared
 * with the admin REST routes and the console).
 */
import { type Context, Hono } from "hono";
import {
  createDeveloperToken,
  listDeveloperTokens,
  revokeDeveloperToken,
} from "../../accounts/developer-tokens.ts";
import { signupDeveloper, whoami } from "../../accounts/developers.ts";
import { createClientKey, createProject, listProjects } from "../../accounts/projects.ts";
import { type AnswerBudget, answerBudget, answerWithin, checkAnswerBudget } from "../../answer-budget.ts";
import {
  type AppMcpSettings,
  connectionBase,
  readAppMcpConfig,
  readExposure,
  setExposure,
  updateAppMcpConfig,
} from "../../app-mcp/admin.ts";
import type { ProjectRef } from "../../credentials/principal.ts";
import { authenticateOAuthProject } from "../../credentials/resolve.ts";
import {
  alterCollection,
  createCollection,
  dropCollection,
  listCollectionViews,
} from "../../data/collections.ts";
import { AppError, forbidden, invalidInput, toolFailure, unauthorized } from "../../errors.ts";
import { deleteEvents, listEvents } from "../../events/service.ts";
import { functionUrlPolicy } from "../../functions/outbound-policy.ts";
import {
  deleteFunction,
  deployFunction,
  listFunctions,
  listVersions,
  promoteFunction,
  rotateSigningSecret,
} from "../../functions/service.ts";
import { signingSecretView } from "../../functions/signing.ts";
import {
  createMcpHandlers,
  handleMcpHttpRequest,
  INVALID_PARAMS,
  methodNotAllowed,
  RpcError,
  type ToolOutcome,
} from "../../mcp/index.ts";
import { grantPageInput } from "../../oauth/grant-page.ts";
import { listProjectGrants } from "../../oauth/grants.ts";
import {
  isPlatformTool,
  PLATFORM_TOOLS,
  type PlatformToolName,
  parseToolArguments,
  platformToolDefinitions,
  type ToolCall,
} from "../../platform-mcp/tools.ts";
import { billingStatus, dailyUsage } from "../../usage/billing.ts";
import { checkInputLimits } from "../../validate.ts";
import { APP_VERSION } from "../../version.ts";
import { authenticateDeveloper, authenticateProjectAdmin } from "../auth.ts";
import type { Db } from "../db.ts";
import { type AppEnv, answerAs } from "../hono.ts";
import { mcpOrigin } from "../mcp-edge.ts";
import { mcpResource, mcpUnauthorized } from "../mcp-oauth.ts";
import { settleUsage } from "../metering.ts";
import { enforceDeveloperRateLimit } from "../rate-limit.ts";
import { developerSignupOrigin } from "./developers.ts";
import { authenticatePlatformMcpOAuth, oauthHelpers, revokeProjectGrantOr404 } from "./oauth.ts";

/**
 * One platform-MCP request: the Hono context, the developer its token names (null: none given) and
 * that token's row id (for an OAuth connection, the token its grant was made with).
 */
export interface PlatformMcpContext {
  c: Context<AppEnv>;
  developerId: string | null;
  tokenId: string | null;
  /** Set when the developer came with an OAuth access token instead of their developer token. */
  oauth?: { developerId: string; tokenId: string; grantId: string; accessTokenId: string };
  /** What this HTTP request's tool results have answered so far (src/answer-budget.ts). */
  answers: AnswerBudget;
}

interface OpenScope {
  c: Context<AppEnv>;
  db: Db;
}
interface DeveloperScope extends OpenScope {
  developerId: string;
  tokenId: string;
}
interface ProjectScope extends DeveloperScope {
  project: ProjectRef;
  config: AppMcpSettings;
}

type ScopeOf<N extends PlatformToolName> = {
  none: OpenScope;
  developer: DeveloperScope;
  project: ProjectScope;
}[(typeof PLATFORM_TOOLS)[N]["auth"]];

type Runner<N extends PlatformToolName> = (call: ToolCall<N>, scope: ScopeOf<N>) => Promise<unknown>;

/** What each tool runs: the service its admin REST route calls, which validates the body. */
const RUN: { [N in PlatformToolName]: Runner<N> } = {
  amba_developer_signup: ({ body }, { c, db }) =>
    signupDeveloper(db, body, developerSignupOrigin(c.env, c.req.raw.headers)),
  amba_whoami: (_call, { db, developerId }) => whoami(db, developerId),
  amba_tokens_list: async (_call, { db, developerId, tokenId }) => ({
    tokens: await listDeveloperTokens(db, developerId, tokenId),
  }),
  amba_tokens_create: ({ body }, { db, developerId }) => createDeveloperToken(db, developerId, body),
  amba_tokens_revoke: ({ params }, { db, developerId, tokenId }) =>
    revokeDeveloperToken(db, developerId, params.token_id, tokenId),
  amba_projects_list: async (_call, { db, developerId }) => ({
    projects: await listProjects(db, developerId),
  }),
  amba_projects_create: ({ body }, { db, developerId }) => createProject(db, developerId, body),
  amba_client_keys_create: ({ body }, { db, project }) => createClientKey(db, project.id, body),
  amba_collections_list: (_call, { db, project }) => listCollectionViews(db, project.id),
  amba_collections_create: ({ body }, { db, project }) => createCollection(db, project.id, body),
  amba_collections_alter: ({ params, body }, { db, project }) =>
    alterCollection(db, project.id, params.name, body),
  amba_collections_drop: ({ params }, { db, project }) => dropCollection(db, project.id, params.name),
  amba_functions_deploy: ({ body }, { c, db, project }) =>
    deployFunction(db, project.id, body, functionUrlPolicy(c.env.FUNCTION_URL_POLICY)),
  amba_functions_list: async (_call, { db, project }) => ({ functions: await listFunctions(db, project.id) }),
  amba_functions_versions: async ({ params }, { db, project }) => ({
    name: params.name,
    versions: await listVersions(db, project.id, params.name),
  }),
  amba_functions_promote: ({ params, body }, { db, project }) =>
    promoteFunction(db, project.id, params.name, body),
  amba_functions_delete: ({ params }, { db, project }) => deleteFunction(db, project.id, params.name),
  amba_functions_signing_secret: async (_call, { config }) => signingSecretView(config.functionSigning),
  amba_functions_rotate_signing_secret: ({ body }, { db, project }) =>
    rotateSigningSecret(db, project.id, body),
  amba_app_mcp_get_exposure: (_call, { db, project, config }) => readExposure(db, project.id, config),
  amba_app_mcp_set_exposure: ({ body }, { db, project, config }) => setExposure(db, project.id, config, body),
  amba_app_mcp_get_config: (_call, { c, db, project, config }) =>
    readAppMcpConfig(db, connectionBase(c.env, c.req.url), project.id, config),
  amba_app_mcp_update_config: ({ body }, { c, db, project }) =>
    updateAppMcpConfig(db, connectionBase(c.env, c.req.url), project.id, body),
  amba_billing_status: async ({ params }, { db, project }) => {
    await settleUsage(db);
    return billingStatus(db, project.id, params.period);
  },
  amba_billing_daily: async ({ params }, { db, project }) => {
    await settleUsage(db);
    return dailyUsage(db, project.id, { from: params.from, to: params.to });
  },
  // The REST listing's query, as its strings: `listEvents` checks limit, cursor and name for both.
  amba_events_list: ({ params }, { db, project }) =>
    listEvents(db, project.id, {
      limit: params.limit === undefined ? undefined : String(params.limit),
      cursor: params.cursor,
      name: params.name,
    }),
  // The REST delete's query: `deleteEvents` checks before and name for both.
  amba_events_delete: ({ params }, { db, project }) =>
    deleteEvents(db, project, { before: params.before, name: params.name }),
  amba_oauth_grants_list: ({ params }, { c, project }) =>
    listProjectGrants(c.env, oauthHelpers(c), project.id, grantPageInput(params.limit, params.cursor)),
  amba_oauth_grants_revoke: ({ params }, { c, project }) =>
    revokeProjectGrantOr404(c, project.id, params.grant_id),
};

const NO_TOKEN =
  "unauthorized: this tool needs a developer token — reconnect to this MCP server with the header Authorization: Bearer <developer token> (amba_developer_signup returns one)";

/**
 * An OAuth grant is revocable (by the developer, and with the token it was made with); a developer
 * token minted through it would outlive both. So only a developer token creates another.
 */
const NO_TOKENS_OVER_OAUTH =
  "a developer token cannot be created over an OAuth connection (it would outlive the grant); connect with Authorization: Bearer <developer token> or use POST /v1/admin/tokens";

/**
 * The project a tool call without `project_id` means: the developer's only one. With none or several
 * the target is not obvious, so the argument stays required (a 400 naming it).
 */
async function soleProjectId(db: Db, developerId: string): Promise<string> {
  const projects = await listProjects(db, developerId);
  if (projects.length === 1) return projects[0]!.id;
  throw invalidInput(
    `project_id: is required (you have ${projects.length} projects; amba_projects_list lists them)`,
  );
}

/** Authorize, validate the params, then run the operation. */
async function runTool<N extends PlatformToolName>(
  name: N,
  args: Record<string, unknown>,
  { c, developerId, tokenId, oauth }: PlatformMcpContext,
): Promise<unknown> {
  const { auth } = PLATFORM_TOOLS[name];
  if (auth !== "none" && developerId === null) throw unauthorized(NO_TOKEN);
  // Per call, not per HTTP request: a JSON-RPC batch pays for each tool call in it.
  if (developerId !== null) await enforceDeveloperRateLimit(c.env, developerId);
  checkInputLimits(args, "arguments");
  if (auth === "project" && developerId !== null && args.project_id === undefined) {
    args = { ...args, project_id: await soleProjectId(c.var.db, developerId) };
  }
  const call = parseToolArguments(name, args);
  if (oauth && name === "amba_tokens_create") throw forbidden(NO_TOKENS_OVER_OAUTH);
  const run = RUN[name] as Runner<PlatformToolName>;
  const db = c.var.db;
  if (auth === "none") return run(call, { c, db } as ScopeOf<PlatformToolName>);
  if (auth === "developer") return run(call, { c, db, developerId, tokenId } as ScopeOf<PlatformToolName>);
  const projectId = (call.params as unknown as { project_id: string }).project_id;
  // An OAuth developer has no developer token header: its grant's token id is checked instead.
  const access = oauth
    ? await authenticateOAuthProject(db, { kind: "developer", ...oauth }, { projectId })
    : await authenticateProjectAdmin(c, projectId);
  const project = "principal" in access ? access.principal.project : access.project;
  const config = access.config;
  return run(call, { c, db, developerId, project, config } as ScopeOf<PlatformToolName>);
}

/** The platform MCP's handlers: a fixed tool list, each call through {@link RUN}. */
export const platformMcpHandlers = createMcpHandlers<PlatformMcpContext>({
  serverInfo: { name: "amba-platform-mcp", title: "Amba platform MCP", version: APP_VERSION },
  instructions:
    "Provision an Amba backend: projects, client keys, typed collections, functions, and each app's own MCP surface. Without credentials, call amba_developer_signup and reconnect with Authorization: Bearer <token>. Then amba_collections_create, amba_app_mcp_set_exposure, and connect to the app MCP at connection.url from amba_app_mcp_get_config.",
  lists: [],
  tools: {
    list: () => platformToolDefinitions(),
    async call(name, args, ctx): Promise<ToolOutcome> {
      if (!isPlatformTool(name)) throw new RpcError(INVALID_PARAMS, `Unknown tool: ${name}`);
      try {
        checkAnswerBudget(ctx.answers);
        const value = await runTool(name, args, ctx);
        // A read-only tool's answer past the request's budget is dropped unseen (src/answer-budget.ts).
        return answerWithin(ctx.answers, { value }, PLATFORM_TOOLS[name].annotations.readOnlyHint);
      } catch (err) {
        const failure = toolFailure(err);
        if (failure) return failure;
        throw err;
      }
    },
  },
});

export const platformMcpRoutes = new Hono<AppEnv>();

// Browsers: only the platform's own origin (and loopback origins on a loopback host) may call.
platformMcpRoutes.use("/mcp", mcpOrigin());

platformMcpRoutes.all("/mcp", async (c) => {
  // Stateless server: no SSE stream (GET), no session to end (DELETE).
  if (c.req.method !== "POST") return methodNotAllowed();
  let developerId: string | null = null;
  let tokenId: string | null = null;
  let oauth: PlatformMcpContext["oauth"];
  if (c.req.header("authorization") !== undefined) {
    try {
      oauth = (await authenticatePlatformMcpOAuth(c)) ?? undefined;
      ({ developerId, tokenId } = oauth ?? (await authenticateDeveloper(c)));
    } catch (err) {
      if (!(err instanceof AppError) || err.status !== 401) throw err;
      return mcpUnauthorized(c, mcpResource(c, "platform"), err);
    }
    c.set("credentialHolder", { developerId });
    answerAs(c, `developer:${developerId}`, developerId);
  }
  return handleMcpHttpRequest(c.req.raw, {
    handlers: platformMcpHandlers,
    ctx: { c, developerId, tokenId, oauth, answers: answerBudget() },
    onInternalError: (err, method) => console.error(`platform MCP ${method} failed`, err),
  });
});
