/**
 * `/openapi.json`: a well-formed OpenAPI 3.1 document (checked here field by field: paths,
 * operations, parameters, `$ref`s, security, and every schema a JSON Schema object), built from the
 * routes' own valibot schemas, covering every route the Hono app registers — and nothing it doesn't.
 */
import { describe, expect, it } from "vitest";
import { hotApp } from "../../src/worker/app.ts";
import { coldApp } from "../../src/worker/cold-app.ts";
import { api, apiJson } from "./helpers.ts";

type Json = Record<string, unknown>;
const HTTP_METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
const JSON_TYPES = ["string", "number", "integer", "boolean", "object", "array", "null"];
const SCHEMA_LISTS = ["anyOf", "allOf", "oneOf", "prefixItems"];
const SCHEMA_MAPS = ["properties", "patternProperties", "$defs", "definitions"];
const SCHEMA_SINGLES = [
  "items",
  "additionalProperties",
  "not",
  "contains",
  "propertyNames",
  "if",
  "then",
  "else",
];

/** Problems of a JSON Schema (2020-12) value, each prefixed with its location. */
function schemaProblems(schema: unknown, at: string): string[] {
  if (typeof schema === "boolean") return [];
  if (typeof schema !== "object" || schema === null || Array.isArray(schema))
    return [`${at}: not a schema object`];
  const s = schema as Json;
  const problems: string[] = [];
  if (s.type !== undefined) {
    const types = Array.isArray(s.type) ? s.type : [s.type];
    if (types.length === 0 || !types.every((t) => JSON_TYPES.includes(t as string)))
      problems.push(`${at}.type: ${JSON.stringify(s.type)}`);
  }
  if (
    s.required !== undefined &&
    !(Array.isArray(s.required) && s.required.every((r) => typeof r === "string"))
  )
    problems.push(`${at}.required: not an array of strings`);
  if (s.enum !== undefined && !Array.isArray(s.enum)) problems.push(`${at}.enum: not an array`);
  for (const key of SCHEMA_LISTS) {
    if (s[key] === undefined) continue;
    if (!Array.isArray(s[key])) problems.push(`${at}.${key}: not an array`);
    else
      for (const [i, sub] of (s[key] as unknown[]).entries())
        problems.push(...schemaProblems(sub, `${at}.${key}[${i}]`));
  }
  for (const key of SCHEMA_MAPS) {
    if (s[key] === undefined) continue;
    for (const [name, sub] of Object.entries(s[key] as Json))
      problems.push(...schemaProblems(sub, `${at}.${key}.${name}`));
  }
  for (const key of SCHEMA_SINGLES)
    if (s[key] !== undefined) problems.push(...schemaProblems(s[key], `${at}.${key}`));
  if (s.type === "object" && Array.isArray(s.required) && s.properties && s.additionalProperties === false) {
    for (const name of s.required as string[])
      if (!(name in (s.properties as Json))) problems.push(`${at}: required "${name}" is not a property`);
  }
  return problems;
}

/** Every `$ref` string anywhere in `value`. */
function refs(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(refs);
  if (typeof value !== "object" || value === null) return [];
  return Object.entries(value).flatMap(([k, v]) => (k === "$ref" && typeof v === "string" ? [v] : refs(v)));
}

/** Problems of the whole document. */
function documentProblems(doc: Json): string[] {
  const problems: string[] = [];
  if (typeof doc.openapi !== "string" || !/^3\.1\.\d+$/.test(doc.openapi))
    problems.push(`openapi: ${doc.openapi}`);
  const info = doc.info as Json | undefined;
  if (typeof info?.title !== "string" || typeof info?.version !== "string")
    problems.push("info: title and version");
  const components = (doc.components ?? {}) as { schemas?: Json; securitySchemes?: Json };
  for (const [name, schema] of Object.entries(components.schemas ?? {}))
    problems.push(...schemaProblems(schema, `components.schemas.${name}`));
  const operationIds = new Set<string>();
  for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
    if (!path.startsWith("/")) problems.push(`${path}: must start with /`);
    const methods = Object.keys(item).filter((m) => HTTP_METHODS.includes(m));
    if (methods.length === 0) problems.push(`${path}: no operations`);
    const templated = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
    for (const method of methods) {
      const op = item[method] as Json;
      const at = `${method.toUpperCase()} ${path}`;
      if (typeof op.operationId !== "string" || operationIds.has(op.operationId))
        problems.push(`${at}: operationId`);
      operationIds.add(op.operationId as string);
      const params = (op.parameters ?? []) as Json[];
      for (const name of templated) {
        const p = params.find((x) => x.name === name && x.in === "path");
        if (p?.required !== true) problems.push(`${at}: path parameter ${name} missing or not required`);
      }
      for (const p of params) {
        if (!["path", "query", "header", "cookie"].includes(p.in as string))
          problems.push(`${at}: parameter in ${p.in}`);
        problems.push(...schemaProblems(p.schema, `${at} parameter ${p.name}`));
      }
      const body = op.requestBody as { content?: Record<string, Json> } | undefined;
      for (const [type, media] of Object.entries(body?.content ?? {}))
        problems.push(...schemaProblems(media.schema, `${at} request ${type}`));
      const responses = Object.entries((op.responses ?? {}) as Record<string, Json>);
      if (!responses.some(([status]) => /^[23]\d\d$/.test(status)))
        problems.push(`${at}: no success response`);
      for (const [status, response] of responses) {
        if (!/^[1-5]\d\d$/.test(status)) problems.push(`${at}: status ${status}`);
        if (typeof response.description !== "string") problems.push(`${at} ${status}: description`);
        for (const [type, media] of Object.entries((response.content ?? {}) as Record<string, Json>))
          problems.push(...schemaProblems(media.schema, `${at} ${status} ${type}`));
      }
      for (const requirement of (op.security ?? []) as Json[])
        for (const scheme of Object.keys(requirement))
          if (!components.securitySchemes?.[scheme])
            problems.push(`${at}: unknown security scheme ${scheme}`);
    }
  }
  for (const ref of refs(doc)) {
    const name = /^#\/components\/schemas\/(\w+)$/.exec(ref)?.[1];
    if (!name || !components.schemas?.[name]) problems.push(`unresolved $ref ${ref}`);
  }
  return problems;
}

/** The app's registered routes, both halves, as `METHOD /openapi/{path}` (middleware left out). */
function registeredRoutes(): string[] {
  // CORS preflights (OPTIONS) and HEAD twins of a GET are protocol plumbing, not API operations.
  const routes = [...hotApp().routes, ...coldApp().routes].filter(
    (r) =>
      r.path !== "*" &&
      r.path !== "/*" &&
      !r.path.endsWith("/*") &&
      r.method !== "OPTIONS" &&
      r.method !== "HEAD",
  );
  return [...new Set(routes.map((r) => `${r.method} ${r.path.replace(/:(\w+)/g, "{$1}")}`))];
}

describe("GET /openapi.json", () => {
  it("is a valid OpenAPI 3.1 document", async () => {
    const res = await apiJson("/openapi.json");
    expect(res.status).toBe(200);
    expect(documentProblems(res.body)).toEqual([]);
    expect(res.body.servers).toEqual([{ url: expect.stringMatching(/^https?:\/\//) }]);
  });

  it("documents every registered route, and only those", async () => {
    const { body } = await apiJson("/openapi.json");
    const documented = Object.entries(body.paths as Record<string, Json>).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
    );
    const registered = registeredRoutes();
    const missing = registered.filter((route) => {
      const [method, path] = route.split(" ");
      // ALL: an `.all()` route (the MCP endpoints, documented as POST) or a path's own middleware
      // (the SDK routes' CORS, src/worker/sdk-cors.ts): some operation of that path is documented.
      return method === "ALL" ? !documented.some((d) => d.endsWith(` ${path}`)) : !documented.includes(route);
    });
    expect(missing).toEqual([]);
    const extra = documented.filter((route) => {
      const [, path] = route.split(" ");
      return !registered.includes(route) && !registered.includes(`ALL ${path}`);
    });
    expect(extra).toEqual([]);
  });

  it("takes request bodies from the routes' valibot schemas, with credentials and the error shape", async () => {
    const { body } = await apiJson("/openapi.json");
    const create = body.paths["/v1/admin/projects/{id}/collections"].post;
    const schema = create.requestBody.content["application/json"].schema;
    expect(schema).toMatchObject({
      type: "object",
      required: ["name"],
      additionalProperties: false,
    });
    expect(schema.properties.columns).toMatchObject({ type: "array" });
    expect(schema.properties.access.properties.read).toMatchObject({ enum: ["public", "owner"] });
    expect(create.security).toEqual([{ developerBearer: [] }]);
    expect(create.responses["400"].content["application/json"].schema).toEqual({
      $ref: "#/components/schemas/Error",
    });
    const config =
      body.paths["/v1/admin/projects/{id}/app-mcp/config"].patch.requestBody.content["application/json"];
    expect(config.schema.properties.auth_mode).toMatchObject({
      enum: ["all", "client_only", "developer_only"],
    });
    const rows = body.paths["/v1/projects/{id}/collections/{name}/rows"].get;
    expect(rows.security).toEqual([{ developerBearer: [] }, { clientKey: [], endUserBearer: [] }]);
    expect(body.components.securitySchemes).toMatchObject({
      developerBearer: { type: "http", scheme: "bearer" },
      clientKey: { type: "apiKey", in: "header", name: "X-Api-Key" },
      endUserBearer: { type: "http", scheme: "bearer" },
    });
    expect(body.components.schemas.Error).toMatchObject({ required: ["error"] });
  });

  it("documents a function deploy without url (seed 004's metadata) and its null url", async () => {
    const { body } = await apiJson("/openapi.json");
    const deploy = body.paths["/v1/admin/projects/{id}/functions/deploy"].post;
    const schema = deploy.requestBody.content["application/json"].schema;
    expect(schema.required).toEqual(["name"]);
    expect(schema.properties.url).toMatchObject({ type: "string" });
    expect(body.components.schemas.FunctionVersion.properties.url.anyOf).toEqual([
      { type: "string" },
      { type: "null" },
    ]);
    const invoke = body.paths["/v1/projects/{id}/functions/{name}/invoke"].post;
    expect(invoke.responses["409"].description).toContain("function_not_deployed");
  });

  it("catches a malformed document (the checks can fail)", () => {
    const problems = documentProblems({
      openapi: "3.0.3",
      info: { title: "x", version: "1" },
      paths: {
        "/a/{id}": {},
        "/b/{id}": {
          get: {
            operationId: "b",
            responses: {
              "200": {
                description: "ok",
                content: {
                  "application/json": { schema: { type: "thing", $ref: "#/components/schemas/Nope" } },
                },
              },
            },
          },
        },
      },
    });
    expect(problems).toEqual([
      "openapi: 3.0.3",
      "/a/{id}: no operations",
      "GET /b/{id}: path parameter id missing or not required",
      'GET /b/{id} 200 application/json.type: "thing"',
      "unresolved $ref #/components/schemas/Nope",
    ]);
  });
});

describe("GET /docs", () => {
  it("serves a self-contained HTML reference of every operation", async () => {
    const res = await api("/docs");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    const page = await res.text();
    expect(page).toContain("<code>/v1/admin/projects/{id}/app-mcp/exposure</code>");
    expect(page).not.toMatch(/<script[^>]+src=/);
  });
});
