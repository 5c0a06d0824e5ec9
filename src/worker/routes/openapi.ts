/**
 * `GET /openapi.json` (the OpenAPI 3.1 document of the REST API, built from the route table and the
 * routes' own valibot schemas) and `GET /docs` (its reference page, server-rendered, no CDN).
 */
import { Hono } from "hono";
import { connectionBase } from "../../app-mcp/admin.ts";
import { CONSOLE_OPERATIONS } from "../../console/operations.ts";
import { pageHeaders, scriptNonce } from "../../console/session.ts";
import { WeightedLru } from "../../mcp/lru.ts";
import { buildOpenApiDocument, type OpenApiDocument } from "../../openapi/document.ts";
import { OPERATIONS } from "../../openapi/operations.ts";
import { referencePage } from "../../openapi/reference.ts";
import type { AppEnv } from "../hono.ts";

/**
 * Documents by server URL, a few at most: without `PUBLIC_BASE_URL` the URL is the request's own
 * origin, which the caller writes (`Host`), and an unbounded map would keep one document per name.
 */
const documents = new WeightedLru<string, OpenApiDocument>(8, () => 1);

/** The document for a server URL (built once per URL and isolate, while it is among the last few). */
export function openApiDocument(serverUrl: string, version: string): OpenApiDocument {
  let doc = documents.get(serverUrl);
  if (!doc) {
    doc = buildOpenApiDocument(serverUrl, version, [...OPERATIONS, ...CONSOLE_OPERATIONS]);
    documents.set(serverUrl, doc);
  }
  return doc;
}

export const openApiRoutes = new Hono<AppEnv>();

const documentOf = (c: { env: AppEnv["Bindings"]; req: { url: string } }) =>
  openApiDocument(connectionBase(c.env, c.req.url).baseUrl, c.env.APP_VERSION);

openApiRoutes.get("/openapi.json", (c) => c.json(documentOf(c)));

/**
 * The reference page takes a developer token into its "Try it" form and sends requests with it: it
 * is sent with the console pages' headers (src/console/session.ts) — no other site may frame it (a
 * framed page can be overlaid to make a person click "Send"), and only its own nonce'd script runs.
 */
openApiRoutes.get("/docs", (c) => {
  const nonce = scriptNonce();
  return c.html(referencePage(documentOf(c), nonce), 200, pageHeaders(nonce));
});
