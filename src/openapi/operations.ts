/**
 * Every public route of the Worker as an OpenAPI operation: method, path, who may call it, the
 * request body's valibot schema (imported from where the route validates with it) and the response.
 * `test/worker/openapi.test.ts` checks this table against the Hono app's registered routes, so a new
 * route without an entry fails the build. Pure data.
 */
import type * as v from "valibot";
import {
  CreateClientKeySchema,
  CreateDeveloperTokenSchema,
  CreateProjectSchema,
  DeveloperSignupSchema,
  EndUserCredentialsSchema,
  SigninSchema,
  UpdateProjectSchema,
} from "../accounts/schemas.ts";
import { ConfigPatchSchema, ExposureSchema } from "../app-mcp/admin.ts";
import { AlterCollectionSchema, CollectionDefinitionSchema } from "../data/columns.ts";
import { IngestSchema, MAX_EVENTS_DELETED, MAX_EVENTS_PAGE } from "../events/service.ts";
import {
  DeployFunctionSchema,
  PromoteFunctionSchema,
  RotateSigningSecretSchema,
} from "../functions/definition.ts";
import type { JsonSchema } from "./schemas.ts";

/** Who may call an operation (maps to OpenAPI security requirements). */
export type Access =
  | "none"
  | "developer"
  | "client_key"
  | "client_key_or_end_user"
  | "end_user"
  | "developer_or_end_user"
  | "console";

export type Method = "get" | "post" | "put" | "patch" | "delete";

/** One documented operation. */
export interface OperationSpec {
  method: Method;
  /** OpenAPI path (`{id}` parameters). */
  path: string;
  tag: string;
  summary: string;
  description?: string;
  access: Access;
  /** The valibot schema the route validates the JSON body with (or a JSON Schema when it is per-collection). */
  body?: v.GenericSchema | JsonSchema;
  /** The body may be left out (the route reads no body as `{}`). */
  bodyOptional?: boolean;
  /** Form fields (console pages: `application/x-www-form-urlencoded`). */
  form?: JsonSchema;
  query?: { name: string; description: string; schema: JsonSchema }[];
  /** Success status and the `#/components/schemas` name of its body (`html`: a page; `none`: empty). */
  response: { status: number; schema: string | "html" | "none" | "redirect"; description: string };
  /** Documented as the methods a route registered with `app.all` answers (the others: 405). */
  allMethods?: boolean;
}

/** Per-collection bodies: their shape follows the collection's columns. */
const ROW_BODY: JsonSchema = {
  type: "object",
  description: "Column values of the collection (server-managed columns are rejected).",
  additionalProperties: true,
};
const QUERY_BODY = (what: string): JsonSchema => ({
  type: "object",
  description: `${what}; the accepted fields follow the collection's columns (see the app MCP's tools/list input schemas).`,
  additionalProperties: true,
});

const ADMIN = "/v1/admin/projects/{id}";
const DATA = "/v1/projects/{id}/collections/{name}";
const period = {
  name: "period",
  description: "Billing period YYYY-MM (UTC); default the current month.",
  schema: { type: "string", pattern: "^\\d{4}-(0[1-9]|1[0-2])$" },
};

const DAY: JsonSchema = { type: "string", format: "date" };

/** The public REST surface, in document order. */
export const OPERATIONS: readonly OperationSpec[] = [
  {
    method: "get",
    path: "/healthz",
    tag: "platform",
    summary: "Health check (database round trip)",
    access: "none",
    response: {
      status: 200,
      schema: "Health",
      description: "Healthy (503 when the database is unreachable)",
    },
  },
  {
    method: "post",
    path: "/v1/developers/signup",
    tag: "developers",
    summary: "Sign up as a developer",
    description:
      "A developer, a developer token, a first project and a client key; the secrets are shown once.",
    access: "none",
    body: DeveloperSignupSchema,
    response: { status: 201, schema: "DeveloperSignup", description: "Created" },
  },
  {
    method: "get",
    path: "/v1/admin/tokens",
    tag: "developers",
    summary: "List your developer tokens (no secrets)",
    description: "Oldest first; `current` marks the token the request came with.",
    access: "developer",
    response: { status: 200, schema: "DeveloperTokenList", description: "Developer tokens" },
  },
  {
    method: "post",
    path: "/v1/admin/tokens",
    tag: "developers",
    summary: "Create a developer token",
    description: "At most 20 live tokens per developer (403 quota_exceeded); the secret is shown once.",
    access: "developer",
    body: CreateDeveloperTokenSchema,
    response: { status: 201, schema: "DeveloperToken", description: "Created; token is shown once" },
  },
  {
    method: "delete",
    path: "/v1/admin/tokens/{tokenId}",
    tag: "developers",
    summary: "Revoke a developer token",
    description:
      "Idempotent; may revoke the token making the request, but not your last live one (409 conflict: developers have no other way back in; create another token first). Another developer's token answers 404. OAuth grants made with the token end at their next refresh.",
    access: "developer",
    response: { status: 200, schema: "DeveloperToken", description: "Revoked" },
  },
  {
    method: "get",
    path: "/v1/admin/projects",
    tag: "projects",
    summary: "List your projects",
    access: "developer",
    response: { status: 200, schema: "ProjectList", description: "Projects, oldest first" },
  },
  {
    method: "post",
    path: "/v1/admin/projects",
    tag: "projects",
    summary: "Create a project",
    access: "developer",
    body: CreateProjectSchema,
    response: { status: 201, schema: "Project", description: "Created" },
  },
  {
    method: "get",
    path: ADMIN,
    tag: "projects",
    summary: "Get a project",
    access: "developer",
    response: { status: 200, schema: "Project", description: "The project" },
  },
  {
    method: "patch",
    path: ADMIN,
    tag: "projects",
    summary: "Rename a project",
    access: "developer",
    body: UpdateProjectSchema,
    response: { status: 200, schema: "Project", description: "Renamed" },
  },
  {
    method: "delete",
    path: ADMIN,
    tag: "projects",
    summary: "Delete a project with all its data",
    access: "developer",
    response: { status: 200, schema: "Deleted", description: "Deleted" },
  },
  {
    method: "post",
    path: `${ADMIN}/client-keys`,
    tag: "projects",
    summary: "Create a client key",
    access: "developer",
    body: CreateClientKeySchema,
    response: { status: 201, schema: "ClientKey", description: "Created; client_key is shown once" },
  },
  {
    method: "get",
    path: `${ADMIN}/client-keys`,
    tag: "projects",
    summary: "List client keys (no secrets)",
    access: "developer",
    response: { status: 200, schema: "ClientKeyList", description: "Client keys" },
  },
  {
    method: "delete",
    path: `${ADMIN}/client-keys/{keyId}`,
    tag: "projects",
    summary: "Revoke a client key",
    access: "developer",
    response: { status: 200, schema: "ClientKey", description: "Revoked" },
  },
  {
    method: "post",
    path: `${ADMIN}/collections`,
    tag: "collections",
    summary: "Create a collection",
    access: "developer",
    body: CollectionDefinitionSchema,
    response: { status: 201, schema: "Collection", description: "Created" },
  },
  {
    method: "get",
    path: `${ADMIN}/collections`,
    tag: "collections",
    summary: "List collections",
    access: "developer",
    response: { status: 200, schema: "CollectionList", description: "Collections with columns and policy" },
  },
  {
    method: "patch",
    path: `${ADMIN}/collections/{name}`,
    tag: "collections",
    summary: "Alter a collection (add/drop columns, policy)",
    access: "developer",
    body: AlterCollectionSchema,
    response: { status: 200, schema: "Collection", description: "Altered" },
  },
  {
    method: "delete",
    path: `${ADMIN}/collections/{name}`,
    tag: "collections",
    summary: "Drop a collection",
    access: "developer",
    response: { status: 200, schema: "NamedDeleted", description: "Dropped" },
  },
  {
    method: "post",
    path: `${ADMIN}/functions/deploy`,
    tag: "functions",
    summary: "Deploy a function version (becomes active)",
    description:
      "Without `url` the new version keeps the active version's URL; a function's first deploy without one (seed 004's metadata `{name, mcp}`) makes a function with `url: null`: its app MCP tool is listed, typed by `mcp.input_schema`, and invoking it is a 409 `function_not_deployed` until a deploy gives it a URL.",
    access: "developer",
    body: DeployFunctionSchema,
    response: { status: 201, schema: "FunctionVersion", description: "Deployed" },
  },
  {
    method: "get",
    path: `${ADMIN}/functions`,
    tag: "functions",
    summary: "List functions",
    access: "developer",
    response: { status: 200, schema: "FunctionList", description: "Functions with their active version" },
  },
  {
    method: "get",
    path: `${ADMIN}/functions/{name}/versions`,
    tag: "functions",
    summary: "List a function's versions",
    access: "developer",
    response: { status: 200, schema: "FunctionVersions", description: "Versions, oldest first" },
  },
  {
    method: "post",
    path: `${ADMIN}/functions/{name}/promote`,
    tag: "functions",
    summary: "Make a version active",
    access: "developer",
    body: PromoteFunctionSchema,
    response: { status: 200, schema: "FunctionVersion", description: "Promoted" },
  },
  {
    method: "delete",
    path: `${ADMIN}/functions/{name}`,
    tag: "functions",
    summary: "Delete a function",
    access: "developer",
    response: { status: 200, schema: "NamedDeleted", description: "Deleted" },
  },
  {
    method: "get",
    path: `${ADMIN}/functions/signing-secret`,
    tag: "functions",
    summary: "Read the function signing secret",
    description:
      'The secret every call to this project\'s functions is signed with: `x-amba-signature: t=<unix seconds>,v1=<hex HMAC-SHA256>` over the timestamp, method, URL, body digest and identity headers (README "Verifying calls to your function").',
    access: "developer",
    response: { status: 200, schema: "FunctionSigningSecret", description: "The current secret" },
  },
  {
    method: "post",
    path: `${ADMIN}/functions/signing-secret/rotate`,
    tag: "functions",
    summary: "Rotate the function signing secret",
    description:
      "Replaces the secret with a fresh random one and returns it. Calls are signed with the new secret from the next invocation (other Worker isolates within seconds). Without a body (or with `previous_valid_for_seconds: 0`) the old one stops verifying at once — after a leak. With `previous_valid_for_seconds` (up to 604800, 7 days) every call carries both signatures until then, `t=…,v1=<new>,v1=<old>`, so deployed functions keep verifying while they get the new secret; `previous_expires_at` says when the old one stops. Only one previous secret is kept: rotating again within an overlap makes the secret being replaced the previous one.",
    access: "developer",
    body: RotateSigningSecretSchema,
    bodyOptional: true,
    response: { status: 200, schema: "FunctionSigningSecret", description: "The new secret" },
  },
  {
    method: "get",
    path: `${ADMIN}/app-mcp/exposure`,
    tag: "app-mcp",
    summary: "What the app MCP exposes",
    access: "developer",
    response: { status: 200, schema: "Exposure", description: "Exposure allowlist" },
  },
  {
    method: "put",
    path: `${ADMIN}/app-mcp/exposure`,
    tag: "app-mcp",
    summary: "Set the exposure (full-set replacement per kind)",
    description:
      "An allowlist of names: each list replaces that kind's set (an empty array hides everything of that kind, an omitted kind stays as it is). A valid name that no collection / function has yet is kept and listed under `pending`; it becomes a tool as soon as one of that name is created or deployed. Deleting a collection or function takes its name off the list. Invalid names (not a lowercase identifier, too long, reserved, more names than a project may hold) are a 400 and change nothing.",
    access: "developer",
    body: ExposureSchema,
    response: { status: 200, schema: "Exposure", description: "The new allowlist" },
  },
  {
    method: "get",
    path: `${ADMIN}/app-mcp/config`,
    tag: "app-mcp",
    summary: "App MCP config and connection URLs",
    access: "developer",
    response: { status: 200, schema: "AppMcpConfig", description: "Config" },
  },
  {
    method: "patch",
    path: `${ADMIN}/app-mcp/config`,
    tag: "app-mcp",
    summary: "Change enabled, auth_mode, slug, allowed_origins, rate_limit_per_minute",
    access: "developer",
    body: ConfigPatchSchema,
    response: {
      status: 200,
      schema: "AppMcpConfig",
      description:
        "The new config (409 when the slug is taken, or was released by another developer less than 30 days ago: reserved until a time the message gives)",
    },
  },
  {
    method: "get",
    path: `${ADMIN}/billing`,
    tag: "billing",
    summary: "Usage of a billing period",
    access: "developer",
    query: [period],
    response: {
      status: 200,
      schema: "Billing",
      description:
        "Usage: agent_tool_calls, function_invocations, events, mau; storage_bytes for the current period",
    },
  },
  {
    method: "get",
    path: `${ADMIN}/billing/daily`,
    tag: "billing",
    summary: "Usage per UTC day over a range (default the last 30 days), zero-filled",
    access: "developer",
    query: [
      { name: "from", description: "First UTC day YYYY-MM-DD; default 29 days before `to`.", schema: DAY },
      {
        name: "to",
        description: "Last UTC day YYYY-MM-DD (at most 366 days after `from`); default today.",
        schema: DAY,
      },
    ],
    response: { status: 200, schema: "BillingDaily", description: "Usage per day, oldest first" },
  },
  {
    method: "get",
    path: `${ADMIN}/events`,
    tag: "events",
    summary: "List the project's events, newest first",
    access: "developer",
    query: [
      {
        name: "limit",
        description: `Events per page (1–${MAX_EVENTS_PAGE}, default 50).`,
        schema: { type: "integer", minimum: 1, maximum: MAX_EVENTS_PAGE },
      },
      { name: "cursor", description: "next_cursor of the previous page.", schema: { type: "string" } },
      { name: "name", description: "Only events with this name.", schema: { type: "string" } },
    ],
    response: {
      status: 200,
      schema: "EventPage",
      description: "A page of events (next_cursor null on the last)",
    },
  },
  {
    method: "delete",
    path: `${ADMIN}/events`,
    tag: "events",
    summary: `Delete the project's events received before a time, oldest first, at most ${MAX_EVENTS_DELETED} a request`,
    description:
      "Frees what they count in the storage quota (billing `storage_bytes`) in the same statement; while the project is over its quota, `POST /v1/events` answers 403 `quota_exceeded`. Repeat while `more` is true.",
    access: "developer",
    query: [
      {
        name: "before",
        description:
          "Required. ISO-8601 date-time with a time zone: events received before it are deleted (by their id's time, minted at reception).",
        schema: { type: "string", format: "date-time" },
      },
      { name: "name", description: "Only events with this name.", schema: { type: "string" } },
    ],
    response: {
      status: 200,
      schema: "EventsDeleted",
      description: "How many were deleted, the bytes freed, and whether more match",
    },
  },
  {
    method: "post",
    path: "/v1/auth/signup",
    tag: "end-users",
    summary: "Sign up an end user",
    access: "client_key",
    body: EndUserCredentialsSchema,
    response: { status: 201, schema: "Session", description: "Signed up and signed in" },
  },
  {
    method: "post",
    path: "/v1/auth/signin",
    tag: "end-users",
    summary: "Sign in an end user",
    access: "client_key",
    body: SigninSchema,
    response: { status: 200, schema: "Session", description: "Signed in" },
  },
  {
    method: "post",
    path: "/v1/auth/signout",
    tag: "end-users",
    summary: "Revoke the session",
    access: "end_user",
    response: { status: 200, schema: "none", description: "Signed out ({signed_out: true})" },
  },
  {
    method: "get",
    path: "/v1/auth/me",
    tag: "end-users",
    summary: "The signed-in end user",
    access: "end_user",
    response: { status: 200, schema: "Me", description: "The user and project" },
  },
  {
    method: "get",
    path: `${DATA}/rows`,
    tag: "data",
    summary: "List rows (policy applies)",
    access: "developer_or_end_user",
    query: [
      {
        name: "limit",
        description: "Page size (1–100, default 20).",
        schema: { type: "integer", minimum: 1, maximum: 100 },
      },
      { name: "cursor", description: "next_cursor of the previous page.", schema: { type: "string" } },
    ],
    response: { status: 200, schema: "RowPage", description: "A page of rows" },
  },
  {
    method: "get",
    path: `${DATA}/rows/{rowId}`,
    tag: "data",
    summary: "Get a row",
    access: "developer_or_end_user",
    response: { status: 200, schema: "Row", description: "The row" },
  },
  {
    method: "post",
    path: `${DATA}/rows`,
    tag: "data",
    summary: "Insert a row",
    access: "developer_or_end_user",
    body: ROW_BODY,
    response: { status: 201, schema: "Row", description: "Inserted" },
  },
  {
    method: "patch",
    path: `${DATA}/rows/{rowId}`,
    tag: "data",
    summary: "Update a row",
    access: "developer_or_end_user",
    body: ROW_BODY,
    response: { status: 200, schema: "Row", description: "Updated" },
  },
  {
    method: "delete",
    path: `${DATA}/rows/{rowId}`,
    tag: "data",
    summary: "Delete a row (soft unless hard=true)",
    access: "developer_or_end_user",
    query: [{ name: "hard", description: "true: delete for good.", schema: { enum: ["true", "false"] } }],
    response: { status: 200, schema: "RowDeleted", description: "Deleted" },
  },
  {
    method: "post",
    path: `${DATA}/find`,
    tag: "data",
    summary: "Find rows with a where / order_by",
    access: "developer_or_end_user",
    body: QUERY_BODY("{where?, order_by?, limit?, cursor?}"),
    response: { status: 200, schema: "RowPage", description: "A page of rows" },
  },
  {
    method: "post",
    path: `${DATA}/aggregate`,
    tag: "data",
    summary: "Aggregate (count, sum, avg, min, max; group_by)",
    access: "developer_or_end_user",
    body: QUERY_BODY("{aggregates, group_by?, where?}"),
    response: { status: 200, schema: "none", description: "{groups: [...]}" },
  },
  {
    method: "post",
    path: `${DATA}/nearest`,
    tag: "data",
    summary: "Nearest rows by a vector column",
    access: "developer_or_end_user",
    body: QUERY_BODY("{column, vector, limit?, where?}"),
    response: { status: 200, schema: "none", description: "Rows with their distance" },
  },
  {
    method: "post",
    path: "/v1/projects/{id}/functions/{name}/invoke",
    tag: "functions",
    summary: "Invoke a function (the function execution path)",
    description:
      "End-user scope. A function whose active version has no URL yet answers 409 `function_not_deployed` (nothing is called or metered).",
    access: "developer_or_end_user",
    body: {
      type: "object",
      description: "The function's input (checked against its declared input_schema).",
    },
    response: { status: 200, schema: "none", description: "The upstream's status and body" },
  },
  {
    method: "post",
    path: "/v1/events",
    tag: "events",
    summary: "Send events from an app's client code (one, or a batch of up to 100)",
    description:
      "X-Api-Key, with or without the end user's session Bearer (the event then carries their user_id). `{name, properties?, timestamp?}` or `{events: [...]}`: all stored or none (400 naming the first bad field), each stored event counted as `events` in the billing view and its bytes in `storage_bytes` (the storage quota: 403 `quota_exceeded` while the project is over it). Rate-limited as a data-route write: per end user, or per client address without a session.",
    access: "client_key_or_end_user",
    body: IngestSchema,
    response: {
      status: 201,
      schema: "EventsAccepted",
      description: "Stored: how many, and their ids in the order sent",
    },
  },
  {
    method: "post",
    path: "/app/{projectId}/mcp",
    tag: "mcp",
    summary: "The app's MCP endpoint (Streamable HTTP)",
    description:
      "Also at https://<slug>.<APP_MCP_HOST_SUFFIX>/mcp. GET and DELETE answer 405 (stateless server).",
    access: "developer_or_end_user",
    body: { $ref: "#/components/schemas/JsonRpc" },
    allMethods: true,
    response: { status: 200, schema: "JsonRpc", description: "JSON-RPC response (202 for notifications)" },
  },
  {
    method: "post",
    path: "/mcp",
    tag: "mcp",
    summary: "The platform MCP (amba_* tools)",
    description:
      "Developer Bearer optional: without it only initialize, tools/list and amba_developer_signup work. On a <slug> host this path is the app MCP.",
    access: "developer",
    body: { $ref: "#/components/schemas/JsonRpc" },
    allMethods: true,
    response: { status: 200, schema: "JsonRpc", description: "JSON-RPC response" },
  },
  {
    method: "get",
    path: `${ADMIN}/oauth/grants`,
    tag: "oauth",
    summary: "List the project's OAuth grants",
    description:
      "Grants made by the project's end users and its developer through MCP authorization, a page of users (OAuth subjects) at a time: each page reads a bounded number of store records however many users the app has.",
    access: "developer",
    query: [
      {
        name: "limit",
        description: "Users per page (1–100, default 50).",
        schema: { type: "integer", minimum: 1, maximum: 100 },
      },
      { name: "cursor", description: "next_cursor of the previous page.", schema: { type: "string" } },
    ],
    response: {
      status: 200,
      schema: "none",
      description:
        "`{grants: [...], next_cursor}` (next_cursor null on the last page; a page may hold no grants and still have one)",
    },
  },
  {
    method: "delete",
    path: `${ADMIN}/oauth/grants/{grantId}`,
    tag: "oauth",
    summary: "Revoke one of the project's OAuth grants",
    description:
      "grantId: a grant's `id` as listed (`<subject>.<grant id>`); 404 when it is not one of the project's.",
    access: "developer",
    response: { status: 200, schema: "none", description: "`{id, revoked: true}`" },
  },
  {
    method: "get",
    path: "/v1/auth/oauth/grants",
    tag: "oauth",
    summary: "List the signed-in end user's own OAuth grants",
    access: "end_user",
    response: { status: 200, schema: "none", description: "`{grants: [...]}`" },
  },
  {
    method: "delete",
    path: "/v1/auth/oauth/grants/{grantId}",
    tag: "oauth",
    summary: "Revoke one of the end user's own OAuth grants",
    access: "end_user",
    response: { status: 200, schema: "none", description: "`{id, revoked: true}`" },
  },
  {
    method: "get",
    path: "/.well-known/oauth-protected-resource/mcp",
    tag: "oauth",
    summary: "Protected resource metadata (RFC 9728) of the platform MCP, or of the app MCP on a <slug> host",
    access: "none",
    response: { status: 200, schema: "none", description: "RFC 9728 metadata" },
  },
  {
    method: "get",
    path: "/.well-known/oauth-protected-resource/app/{projectId}/mcp",
    tag: "oauth",
    summary: "Protected resource metadata (RFC 9728) of an app MCP endpoint",
    access: "none",
    response: { status: 200, schema: "none", description: "RFC 9728 metadata" },
  },
  {
    method: "get",
    path: "/.well-known/oauth-authorization-server",
    tag: "oauth",
    summary: "Authorization server metadata (RFC 8414)",
    access: "none",
    response: { status: 200, schema: "none", description: "RFC 8414 metadata" },
  },
  {
    method: "post",
    path: "/oauth/register",
    tag: "oauth",
    summary: "Dynamic client registration (RFC 7591)",
    access: "none",
    response: { status: 201, schema: "none", description: "The registered client" },
  },
  {
    method: "post",
    path: "/oauth/token",
    tag: "oauth",
    summary: "Token endpoint: authorization code (PKCE S256) and refresh token grants",
    access: "none",
    response: { status: 200, schema: "none", description: "OAuth token response" },
  },
  {
    method: "get",
    path: "/authorize",
    tag: "oauth",
    summary: "Authorization page: sign in to the app (end user) or with a developer token, then consent",
    access: "none",
    query: [
      { name: "client_id", description: "Registered client id", schema: { type: "string" } },
      { name: "redirect_uri", description: "One of the client's redirect URIs", schema: { type: "string" } },
      { name: "code_challenge", description: "PKCE S256 challenge", schema: { type: "string" } },
      { name: "resource", description: "The MCP endpoint URL (RFC 8707)", schema: { type: "string" } },
    ],
    response: { status: 200, schema: "html", description: "HTML" },
  },
  {
    method: "post",
    path: "/authorize",
    tag: "oauth",
    summary: "Submit the sign-in and consent form (CSRF-protected)",
    access: "none",
    form: { type: "object", additionalProperties: true },
    response: { status: 302, schema: "redirect", description: "Back to the client's redirect URI" },
  },
  {
    method: "get",
    path: "/openapi.json",
    tag: "platform",
    summary: "This document",
    access: "none",
    response: { status: 200, schema: "none", description: "OpenAPI 3.1" },
  },
  {
    method: "get",
    path: "/docs",
    tag: "platform",
    summary: "API reference page",
    access: "none",
    response: { status: 200, schema: "html", description: "HTML" },
  },
];

/** True when `body` is a valibot schema (else it is already JSON Schema). */
export const isValibot = (body: v.GenericSchema | JsonSchema): body is v.GenericSchema =>
  (body as { kind?: unknown }).kind === "schema" &&
  typeof (body as { "~run"?: unknown })["~run"] === "function";
