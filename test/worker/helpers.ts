/**
 * Shared helpers for the Worker tests: call the Worker in-process, sign up a fresh developer (with
 * project, token and client key) or end user, read JSON, and reach the database directly for
 * assertions that must look at stored rows. The database is shared by every test file, so every
 * test makes its own developer via `signupDeveloper()`.
 */
import { env, exports } from "cloudflare:workers";
import { expect } from "vitest";
import type { Meter } from "../../src/usage/metering.ts";
import { createDb, type Db } from "../../src/worker/db.ts";
import type { Env } from "../../src/worker/env.ts";

/** Request options: `json` becomes the body; `token` an `Authorization: Bearer`; `apiKey` `X-Api-Key`. */
export interface ApiInit extends RequestInit {
  json?: unknown;
  token?: string;
  apiKey?: string;
}

const worker = (exports as unknown as { default: { fetch(req: Request): Promise<Response> } }).default;

/** Call the Worker (`exports.default.fetch`) with a path like `/v1/admin/projects`. */
export function api(path: string, init: ApiInit = {}): Promise<Response> {
  const { json, token, apiKey, ...rest } = init;
  const headers = new Headers(rest.headers);
  if (json !== undefined) {
    headers.set("content-type", "application/json");
    rest.body = JSON.stringify(json);
    rest.method ??= "POST";
  }
  if (token !== undefined) headers.set("authorization", `Bearer ${token}`);
  if (apiKey !== undefined) headers.set("x-api-key", apiKey);
  return worker.fetch(new Request(new URL(path, "http://local"), { ...rest, headers }));
}

/** A response's status and parsed JSON body (`any` by default: tests assert bodies, not types). */
// biome-ignore lint/suspicious/noExplicitAny: response bodies are asserted by the tests
export interface JsonResponse<T = any> {
  status: number;
  body: T;
}

/** `api()` + parse the JSON body. */
// biome-ignore lint/suspicious/noExplicitAny: response bodies are asserted by the tests
export async function apiJson<T = any>(path: string, init: ApiInit = {}): Promise<JsonResponse<T>> {
  const res = await api(path, init);
  const text = await res.text();
  let body: unknown;
  try {
    body = text === "" ? null : JSON.parse(text);
  } catch {
    throw new Error(`non-JSON response ${res.status} from ${path}: ${text.slice(0, 200)}`);
  }
  return { status: res.status, body: body as T };
}

/** Assert an error response `{error:{code,message}}` with this status (and message substring). */
export function expectError(res: JsonResponse, status: number, messageIncludes?: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body).toMatchObject({ error: { code: expect.any(String), message: expect.any(String) } });
  if (messageIncludes) expect(res.body.error.message).toContain(messageIncludes);
}

let counter = 0;
/** A fresh email address (unique across test files sharing the database). */
export const uniqueEmail = (tag = "user"): string =>
  `${tag}-${Date.now().toString(36)}-${(counter++).toString(36)}-${crypto.randomUUID().slice(0, 8)}@example.com`;

/** A signed-up developer with its first project. */
export interface TestDeveloper {
  developerId: string;
  email: string;
  /** Developer token (`Authorization: Bearer`). */
  token: string;
  projectId: string;
  /** The first project's client key (`X-Api-Key`). */
  clientKey: string;
}

/** `POST /v1/developers/signup` with a fresh email. */
export async function signupDeveloper(email = uniqueEmail("dev")): Promise<TestDeveloper> {
  const res = await apiJson("/v1/developers/signup", { json: { email } });
  if (res.status !== 201)
    throw new Error(`developer signup failed: ${res.status} ${JSON.stringify(res.body)}`);
  return {
    developerId: res.body.developer.id,
    email: res.body.developer.email,
    token: res.body.token,
    projectId: res.body.project.id,
    clientKey: res.body.client_key,
  };
}

/** A signed-up end user of a project. */
export interface TestUser {
  userId: string;
  email: string;
  password: string;
  /** Session token (`Authorization: Bearer`, together with the client key). */
  sessionToken: string;
}

/** `POST /v1/auth/signup` with the project's client key and a fresh email. */
export async function signupUser(
  _projectId: string,
  clientKey: string,
  email = uniqueEmail("enduser"),
  password = "correct horse battery",
): Promise<TestUser> {
  const res = await apiJson("/v1/auth/signup", { apiKey: clientKey, json: { email, password } });
  if (res.status !== 201) throw new Error(`user signup failed: ${res.status} ${JSON.stringify(res.body)}`);
  return {
    userId: res.body.user.id,
    email: res.body.user.email,
    password,
    sessionToken: res.body.session_token,
  };
}

/** Headers for the end-user scope: `X-Api-Key` + session Bearer. */
export const endUserHeaders = (clientKey: string, sessionToken: string): Record<string, string> => ({
  "x-api-key": clientKey,
  authorization: `Bearer ${sessionToken}`,
});

/** Headers of an MCP POST sent by hand: JSON in, JSON or SSE accepted, protocol 2025-06-18, a Bearer. */
export const mcpPostHeaders = (token: string): Record<string, string> => ({
  authorization: `Bearer ${token}`,
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
  "mcp-protocol-version": "2025-06-18",
});

/** A client's first JSON-RPC message: `initialize` at protocol 2025-06-18. */
export const INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
};

/** One JSON-RPC `tools/call` POSTed by hand to an MCP endpoint (`/mcp` or an app's) with a Bearer. */
export const mcpToolCall = (path: string, token: string, name: string, args: Record<string, unknown>) =>
  apiJson(path, {
    method: "POST",
    headers: mcpPostHeaders(token),
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }),
  });

/** A fresh developer whose project has `collection` (created through the API) exposed on its app MCP. */
export async function developerExposing(collection: {
  name: string;
  [field: string]: unknown;
}): Promise<TestDeveloper> {
  const dev = await signupDeveloper();
  const admin = `/v1/admin/projects/${dev.projectId}`;
  const created = await apiJson(`${admin}/collections`, { token: dev.token, json: collection });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const exposed = await apiJson(`${admin}/app-mcp/exposure`, {
    token: dev.token,
    method: "PUT",
    json: { collections: [collection.name] },
  });
  expect(exposed.status).toBe(200);
  return dev;
}

/**
 * A developer signed up with `signup` (email and project name) from the client address in
 * `headers`, every request sent from it, whose project has a `notes` collection (a required text
 * `body`) exposed on its app MCP.
 */
export async function developerWithNotes(
  headers: Record<string, string>,
  signup: { email: string; project_name: string },
): Promise<{ token: string; projectId: string; clientKey: string }> {
  const res = await apiJson("/v1/developers/signup", { headers, json: signup });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  const { token, client_key: clientKey } = res.body;
  const projectId: string = res.body.project.id;
  const admin = `/v1/admin/projects/${projectId}`;
  const notes = { name: "notes", columns: [{ name: "body", type: "text", required: true }] };
  expect((await apiJson(`${admin}/collections`, { token, headers, json: notes })).status).toBe(201);
  const exposed = await apiJson(`${admin}/app-mcp/exposure`, {
    method: "PUT",
    token,
    headers,
    json: { collections: ["notes"] },
  });
  expect(exposed.status).toBe(200);
  return { token, projectId, clientKey };
}

/** drizzle on the test database (same local endpoint the Worker uses), for raw checks. */
export const testDb = (): Db => createDb(env as unknown as Env);

/**
 * The database round trips a request made, from a spy on `fetch` (the Neon driver's transport):
 * every call except the background writes that any request may trigger after its response — usage
 * flushes (counts and MAU, `usage_*` tables, 250 ms after a window opens) and storage measurements
 * (`pg_total_relation_size`). An earlier request's flush can land while a later one runs: counting
 * it would make a one-statement request look like two.
 */
export function requestRoundTrips(spy: { mock: { calls: unknown[][] } }): number {
  return spy.mock.calls.filter(([, init]) => !isBackgroundStatement((init as RequestInit | undefined)?.body))
    .length;
}

/** Whether a driver request's body is one of those background writes or measurements. */
export function isBackgroundStatement(body: unknown): boolean {
  return /\busage_(batches|counters|active_users)\b|pg_total_relation_size/.test(String(body ?? ""));
}

/** A metering port that counts nothing (service calls whose metering a test does not look at). */
export const unmetered: Meter = () => {};

/**
 * Waits, when fewer than `needMs` are left in the current wall-clock window of `periodSeconds`,
 * until the next one starts. The local Rate Limiting bindings count in windows aligned to the clock
 * (miniflare), so a test that makes N allowed attempts and expects the next one refused must not
 * straddle a rollover (the count would start again).
 */
export async function withinOneRateLimitWindow(periodSeconds = 60, needMs = 20_000): Promise<void> {
  const periodMs = periodSeconds * 1000;
  const left = periodMs - (Date.now() % periodMs);
  if (left < needMs) await new Promise((resolve) => setTimeout(resolve, left + 50));
}

/**
 * A fresh documentation-range client address (`cf-connecting-ip`) in a /64 of its own: per-IP
 * limits count IPv6 by /64, and the limiters' state lives as long as the run.
 */
export const freshIp = (): string =>
  `2001:db8:${Array.from(crypto.getRandomValues(new Uint16Array(3)), (n) => n.toString(16)).join(":")}::1`;

/** The project's usage this period, as `GET /v1/admin/projects/:id/billing` answers it (200 asserted). */
export async function billingUsage(dev: TestDeveloper): Promise<Record<string, number>> {
  const res = await apiJson(`/v1/admin/projects/${dev.projectId}/billing`, { token: dev.token });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.usage;
}
