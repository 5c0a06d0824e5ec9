/**
 * Fixtures for the data-plane tests: a developer with a collection, end users, and short-hands for
 * the SDK data routes.
 */
import {
  apiJson,
  endUserHeaders,
  type JsonResponse,
  signupDeveloper,
  signupUser,
  type TestDeveloper,
  type TestUser,
} from "../helpers.ts";

/** Who calls: the developer (Bearer) or an end user (client key + session). */
export type Caller = { token: string } | { headers: Record<string, string> };

export interface DataProject {
  dev: TestDeveloper;
  developer: Caller;
  userA: Caller & { user: TestUser };
  userB: Caller & { user: TestUser };
}

/** A developer, two end users of its first project. */
export async function dataProject(): Promise<DataProject> {
  const dev = await signupDeveloper();
  const [a, b] = await Promise.all([
    signupUser(dev.projectId, dev.clientKey),
    signupUser(dev.projectId, dev.clientKey),
  ]);
  return {
    dev,
    developer: { token: dev.token },
    userA: { headers: endUserHeaders(dev.clientKey, a.sessionToken), user: a },
    userB: { headers: endUserHeaders(dev.clientKey, b.sessionToken), user: b },
  };
}

const auth = (caller: Caller) => ("token" in caller ? { token: caller.token } : { headers: caller.headers });

/** Create a collection as the developer; throws unless 201. */
export async function createCollection(p: DataProject, definition: unknown): Promise<JsonResponse> {
  const res = await apiJson(`/v1/admin/projects/${p.dev.projectId}/collections`, {
    ...auth(p.developer),
    json: definition,
  });
  if (res.status !== 201) throw new Error(`create collection: ${res.status} ${JSON.stringify(res.body)}`);
  return res;
}

/** Call a data route of `collection`: `path` like `rows`, `rows/<id>`, `find`. */
export function data(
  p: DataProject,
  caller: Caller,
  collection: string,
  path: string,
  init: { method?: string; json?: unknown } = {},
): Promise<JsonResponse> {
  return apiJson(`/v1/projects/${p.dev.projectId}/collections/${collection}/${path}`, {
    ...auth(caller),
    ...init,
  });
}

/** Insert a row; throws unless 201. */
export async function insert(p: DataProject, caller: Caller, collection: string, row: unknown) {
  const res = await data(p, caller, collection, "rows", { json: row });
  if (res.status !== 201) throw new Error(`insert: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** POST find; returns the body (asserting 200). */
export async function find(p: DataProject, caller: Caller, collection: string, input: unknown) {
  const res = await data(p, caller, collection, "find", { json: input });
  if (res.status !== 200) throw new Error(`find: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { rows: Record<string, unknown>[]; next_cursor: string | null };
}
