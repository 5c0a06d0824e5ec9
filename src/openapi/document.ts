/**
 * The OpenAPI 3.1 document of the REST API, built from the operation table (`operations.ts`):
 * request bodies from the valibot schemas the routes validate with (via `@valibot/to-json-schema`),
 * response bodies from `schemas.ts`, the three credential schemes and the one error shape
 * `{error: {code, message}}`. Pure; computed once per server URL.
 */
import { type Access, isValibot, OPERATIONS, type OperationSpec } from "./operations.ts";
import { type JsonSchema, jsonSchemaOf, RESPONSE_SCHEMAS } from "./schemas.ts";

export type OpenApiDocument = JsonSchema & {
  openapi: string;
  paths: Record<string, Record<string, JsonSchema>>;
};

const SECURITY: Record<Access, Record<string, string[]>[]> = {
  none: [],
  console: [{ consoleSession: [] }],
  developer: [{ developerBearer: [] }],
  client_key: [{ clientKey: [] }],
  client_key_or_end_user: [{ clientKey: [] }, { clientKey: [], endUserBearer: [] }],
  end_user: [{ clientKey: [], endUserBearer: [] }],
  developer_or_end_user: [{ developerBearer: [] }, { clientKey: [], endUserBearer: [] }],
};

const ERRORS: Record<string, string> = {
  "400": "Invalid input (`invalid_input`, naming the field; `result_too_large` for a page over 8 MiB)",
  "401": "Missing or invalid credentials (`unauthorized`)",
  "403":
    "Not allowed (`forbidden`; `quota_exceeded` past a quota: projects, collections (count or 4 MiB of column definitions) or functions, or an insert or update of an app whose tables are over its storage quota, or event ingestion of an app whose tables and events are)",
  "404": "Not found (`not_found`; also another developer's project)",
  "409":
    "Conflict (`conflict`; `function_not_deployed` when invoking a function that has no URL yet: deploy one first)",
  "413": "Body too large (`payload_too_large`)",
  "429":
    "Rate limited (`rate_limited`), or the app has too many database calls running and waiting at once (`too_many_concurrent_requests`); retry after `Retry-After`",
  "503":
    "The database or the OAuth store did not answer in time (`database_timeout`, `storage_timeout`), or a sign-in rate limit could not be checked (`rate_limiter_unavailable`); retry after `Retry-After`",
};

const errorResponse = (description: string) => ({
  description,
  content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
});

const pathParams = (path: string) =>
  [...path.matchAll(/\{(\w+)\}/g)].map(([, name]) => ({
    name,
    in: "path",
    required: true,
    schema: { type: "string" },
  }));

function requestBody(op: OperationSpec): JsonSchema | undefined {
  if (op.form)
    return { required: true, content: { "application/x-www-form-urlencoded": { schema: op.form } } };
  if (!op.body) return undefined;
  const schema = isValibot(op.body) ? jsonSchemaOf(op.body) : op.body;
  return { required: op.bodyOptional !== true, content: { "application/json": { schema } } };
}

function successResponse(op: OperationSpec): JsonSchema {
  const { schema, description } = op.response;
  if (schema === "html") return { description, content: { "text/html": { schema: { type: "string" } } } };
  if (schema === "redirect") return { description, headers: { location: { schema: { type: "string" } } } };
  if (schema === "none")
    return { description, content: { "application/json": { schema: { type: "object" } } } };
  return {
    description,
    content: { "application/json": { schema: { $ref: `#/components/schemas/${schema}` } } },
  };
}

function operation(op: OperationSpec): JsonSchema {
  const security = SECURITY[op.access];
  const parameters = [
    ...pathParams(op.path),
    ...(op.query ?? []).map((q) => ({
      name: q.name,
      in: "query",
      required: false,
      description: q.description,
      schema: q.schema,
    })),
  ];
  const errors = Object.fromEntries(
    Object.entries(ERRORS)
      .filter(([status]) => status !== "401" || security.length > 0)
      .map(([status, text]) => [status, errorResponse(text)]),
  );
  const body = requestBody(op);
  return {
    operationId: `${op.method}${op.path.replace(/[{}]/g, "").replace(/[^A-Za-z0-9]+(.)?/g, (_, c?: string) => (c ?? "").toUpperCase())}`,
    tags: [op.tag],
    summary: op.summary,
    ...(op.description ? { description: op.description } : {}),
    security,
    ...(parameters.length ? { parameters } : {}),
    ...(body ? { requestBody: body } : {}),
    responses: { [String(op.response.status)]: successResponse(op), ...errors },
  };
}

const TAGS = [
  ["platform", "Health, this document"],
  ["developers", "Developer accounts"],
  ["projects", "Projects and client keys (developer token)"],
  ["collections", "Typed collections: real Postgres tables"],
  ["functions", "Deployed functions: versions and the execution path"],
  ["app-mcp", "What the app's MCP endpoint exposes, and its config"],
  ["billing", "Usage"],
  ["end-users", "End-user accounts of an app (client key)"],
  ["data", "Rows of a collection (developer, or end user under the collection's policy)"],
  ["mcp", "MCP endpoints (Streamable HTTP, JSON-RPC)"],
  ["console", "The developer console (HTML)"],
] as const;

/** Build the document for operations `ops` (default: the whole REST API) served at `serverUrl`. */
export function buildOpenApiDocument(
  serverUrl: string,
  version: string,
  ops: readonly OperationSpec[] = OPERATIONS,
): OpenApiDocument {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const op of ops) {
    paths[op.path] ??= {};
    (paths[op.path] as Record<string, JsonSchema>)[op.method] = operation(op);
  }
  const used = new Set(ops.map((op) => op.tag));
  return {
    openapi: "3.1.0",
    info: {
      title: "Amba app MCP",
      version,
      description:
        "Developers, projects, typed collections and deployed functions — and every app's own MCP endpoint. Errors are JSON `{error: {code, message}}` with a fitting status.",
    },
    jsonSchemaDialect: "https://json-schema.org/draft/2020-12/schema",
    servers: [{ url: serverUrl }],
    tags: TAGS.filter(([name]) => used.has(name)).map(([name, description]) => ({ name, description })),
    paths,
    components: {
      schemas: RESPONSE_SCHEMAS,
      securitySchemes: {
        developerBearer: {
          type: "http",
          scheme: "bearer",
          description: "Developer token `amba_dev_…` (from POST /v1/developers/signup).",
        },
        clientKey: {
          type: "apiKey",
          in: "header",
          name: "X-Api-Key",
          description: "Client key `amba_ck_…` of a project.",
        },
        consoleSession: {
          type: "apiKey",
          in: "cookie",
          name: "amba_console",
          description:
            "The console's HttpOnly session cookie (set by POST /console/login from a developer token).",
        },
        endUserBearer: {
          type: "http",
          scheme: "bearer",
          description:
            "End-user session token `amba_sess_…` (with X-Api-Key), from /v1/auth/signup or /signin.",
        },
      },
    },
  };
}
