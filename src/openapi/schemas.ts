/**
 * Response shapes of the REST API as JSON Schema (the routes build them in code, not from valibot),
 * plus `jsonSchemaOf`: a request body's valibot schema — the one its route validates with — as a JSON
 * Schema object for OpenAPI 3.1. Pure.
 */
import { toJsonSchema } from "@valibot/to-json-schema";
import type * as v from "valibot";
import { RATE_LIMIT_TIERS } from "../rate-limit.ts";

export type JsonSchema = Record<string, unknown>;

/**
 * The JSON Schema of a valibot schema. Refinements without a JSON Schema form (`check`, `transform`)
 * are left out (`errorMode: "ignore"`); the route still enforces them. `$schema` is dropped: inside an
 * OpenAPI 3.1 document the dialect is the document's.
 */
export function jsonSchemaOf(schema: v.GenericSchema): JsonSchema {
  const { $schema: _dialect, ...rest } = toJsonSchema(schema, { errorMode: "ignore" }) as JsonSchema;
  return rest;
}

const str = { type: "string" };
const dateTime = { type: "string", format: "date-time" };
const nullable = (schema: JsonSchema) => ({ anyOf: [schema, { type: "null" }] });
const obj = (properties: Record<string, JsonSchema>, required = Object.keys(properties)): JsonSchema => ({
  type: "object",
  properties,
  required,
});

const ColumnSchema = obj(
  {
    name: str,
    type: str,
    required: { type: "boolean" },
    unique: { type: "boolean" },
    default: {},
    description: str,
    dimensions: { type: "integer" },
  },
  ["name", "type"],
);

/** Named response schemas (`#/components/schemas/<name>`). */
export const RESPONSE_SCHEMAS: Record<string, JsonSchema> = {
  Error: obj({
    error: obj({
      code: {
        type: "string",
        description: "Machine-readable code: invalid_input, unauthorized, not_found, …",
      },
      message: { type: "string", description: "What went wrong, naming the field when there is one." },
    }),
  }),
  DeveloperSignup: obj({
    developer: obj({ id: str, email: str }),
    token: { type: "string", description: "Developer token, shown once." },
    project: obj({ id: str, name: str }),
    client_key: { type: "string", description: "Client key of the first project, shown once." },
  }),
  Project: obj({ id: str, name: str, meta_rev: { type: "integer" }, created_at: nullable(dateTime) }),
  ProjectList: obj({ projects: { type: "array", items: { $ref: "#/components/schemas/Project" } } }),
  Deleted: obj({ id: str, deleted: { const: true } }, ["deleted"]),
  ClientKey: obj(
    {
      id: str,
      name: str,
      prefix: str,
      created_at: nullable(dateTime),
      revoked: { type: "boolean" },
      revoked_at: nullable(dateTime),
      client_key: { type: "string", description: "The secret; only in the creation response." },
    },
    ["id", "name", "prefix", "created_at", "revoked", "revoked_at"],
  ),
  DeveloperToken: obj(
    {
      id: str,
      name: str,
      created_at: nullable(dateTime),
      revoked: { type: "boolean" },
      revoked_at: nullable(dateTime),
      current: { type: "boolean", description: "Whether this is the token the request came with." },
      token: { type: "string", description: "The secret; only in the creation response." },
    },
    ["id", "name", "created_at", "revoked", "revoked_at", "current"],
  ),
  DeveloperTokenList: obj({
    tokens: { type: "array", items: { $ref: "#/components/schemas/DeveloperToken" } },
  }),
  ClientKeyList: obj({ client_keys: { type: "array", items: { $ref: "#/components/schemas/ClientKey" } } }),
  Collection: obj({
    name: str,
    columns: { type: "array", items: ColumnSchema },
    access: obj({ read: { enum: ["public", "owner"] }, write: { enum: ["owner", "developer"] } }),
  }),
  CollectionList: obj({ collections: { type: "array", items: { $ref: "#/components/schemas/Collection" } } }),
  NamedDeleted: obj({ name: str, deleted: { const: true } }),
  FunctionVersion: obj({
    name: str,
    version: { type: "integer" },
    url: {
      ...nullable(str),
      description:
        "Where calls are forwarded; null until a deploy gives the function a URL (invoking it is then a 409 `function_not_deployed`).",
    },
    active: { type: "boolean" },
    mcp: nullable(obj({ description: str, input_schema: { type: "object" } }, ["description"])),
    created_at: dateTime,
  }),
  FunctionList: obj({
    functions: {
      type: "array",
      items: {
        allOf: [
          { $ref: "#/components/schemas/FunctionVersion" },
          obj({ active_version: { type: "integer" }, versions: { type: "integer" } }),
        ],
      },
    },
  }),
  FunctionVersions: obj({
    name: str,
    versions: { type: "array", items: { $ref: "#/components/schemas/FunctionVersion" } },
  }),
  FunctionSigningSecret: obj({
    signing_secret: {
      type: "string",
      description:
        "The key the platform signs every call to this project's functions with (HMAC-SHA256 keyed with this string's UTF-8 bytes).",
    },
    header: { const: "x-amba-signature" },
    algorithm: { const: "HMAC-SHA256" },
    previous_expires_at: {
      ...nullable({ type: "string", format: "date-time" }),
      description:
        "During a rotation's overlap, when the secret it replaced stops being signed with (calls carry a second v1= until then); null otherwise. The previous secret itself is never shown.",
    },
  }),
  Exposure: obj(
    {
      collections: { type: "array", items: str },
      functions: { type: "array", items: str },
      pending: {
        ...obj({ collections: { type: "array", items: str }, functions: { type: "array", items: str } }),
        description:
          "Only when some exposed name does not exist yet: those names per kind, in list order. They are kept on the allowlist and become tools once a collection / function of that name is created or deployed.",
      },
    },
    ["collections", "functions"],
  ),
  AppMcpConfig: obj({
    enabled: { type: "boolean" },
    auth_mode: { enum: ["all", "client_only", "developer_only"] },
    slug: nullable(str),
    allowed_origins: { type: "array", items: str },
    rate_limit_per_minute: { enum: [...RATE_LIMIT_TIERS] },
    connection: obj({ url: str, hostname_url: nullable(str) }),
  }),
  Billing: obj({
    period: { type: "string", pattern: "^\\d{4}-\\d{2}$" },
    usage: { type: "object", additionalProperties: { type: "integer" } },
  }),
  BillingDaily: obj({
    from: { type: "string", format: "date" },
    to: { type: "string", format: "date" },
    days: {
      type: "array",
      items: obj({
        day: { type: "string", format: "date" },
        usage: { type: "object", additionalProperties: { type: "integer" } },
      }),
    },
  }),
  EventsAccepted: obj({ accepted: { type: "integer" }, ids: { type: "array", items: str } }),
  EventsDeleted: obj({
    deleted: { type: "integer" },
    more: { type: "boolean" },
    freed_bytes: { type: "integer" },
  }),
  EventPage: obj({
    events: {
      type: "array",
      items: obj({
        id: str,
        name: str,
        properties: { type: "object", additionalProperties: true },
        user_id: nullable(str),
        occurred_at: dateTime,
        received_at: dateTime,
      }),
    },
    next_cursor: nullable(str),
  }),
  Row: {
    type: "object",
    description: "A row: the collection's columns plus id, owner_id, created_at, updated_at.",
    properties: { id: str, owner_id: nullable(str), created_at: dateTime, updated_at: dateTime },
    additionalProperties: true,
  },
  RowPage: obj({
    rows: { type: "array", items: { $ref: "#/components/schemas/Row" } },
    next_cursor: nullable(str),
  }),
  RowDeleted: obj({ id: str, deleted: { const: true }, hard: { type: "boolean" } }),
  Session: obj({ session_token: str, expires_at: dateTime, user: obj({ id: str, email: str }) }),
  Me: obj({ user: obj({ id: str, email: str }), project: obj({ id: str }) }),
  Health: obj({ ok: { type: "boolean" }, version: str, database: obj({ ok: { type: "boolean" } }) }, ["ok"]),
  JsonRpc: {
    type: "object",
    description: "A JSON-RPC 2.0 message (MCP Streamable HTTP, stateless).",
    properties: {
      jsonrpc: { const: "2.0" },
      id: { type: ["string", "integer"] },
      method: str,
      params: { type: "object" },
    },
    required: ["jsonrpc"],
  },
};
