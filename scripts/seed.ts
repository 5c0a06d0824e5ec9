/**
 * Seeds the demo app through the platform's own HTTP API (the same paths a user takes): a developer,
 * a project, a client key, an end user, an exposed `recipes` collection with a few rows and the
 * hostname slug `demo`. The credentials are shown once by the API, so they are kept in
 * `.amba/demo.json`; on a restart the file is checked against the server and reused (idempotent).
 * On a database without pgvector the recipes have no `embedding` column (the platform refuses
 * vector columns there).
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";

export interface DemoCredentials {
  email: string;
  developerToken: string;
  projectId: string;
  clientKey: string;
  userEmail: string;
  userPassword: string;
  sessionToken: string;
  /** The demo app's hostname slug and its MCP URL (`http://<slug>.mcp.localhost:<port>/mcp` locally). */
  slug?: string;
  hostnameUrl?: string;
}

/**
 * Give the demo app a hostname slug (`demo`, or `demo-<project id>` when another project holds it or
 * released it less than 30 days ago); also for demo data seeded before slugs existed.
 */
async function ensureSlug(base: string, demo: DemoCredentials): Promise<DemoCredentials> {
  const path = `/v1/admin/projects/${demo.projectId}/app-mcp/config`;
  const headers = { authorization: `Bearer ${demo.developerToken}` };
  type Config = { slug: string | null; connection: { hostname_url: string | null } };
  let config = await call<Config>(base, path, { headers });
  if (config.slug === null) {
    config = await call<Config>(base, path, { method: "PATCH", headers, json: { slug: "demo" } }).catch(() =>
      call<Config>(base, path, {
        method: "PATCH",
        headers,
        json: { slug: `demo-${demo.projectId.slice(0, 8)}` },
      }),
    );
  }
  return {
    ...demo,
    slug: config.slug ?? undefined,
    hostnameUrl: config.connection.hostname_url ?? undefined,
  };
}

async function call<T>(base: string, path: string, init: RequestInit & { json?: unknown } = {}): Promise<T> {
  const headers = new Headers(init.headers);
  if (init.json !== undefined) headers.set("content-type", "application/json");
  const res = await fetch(base + path, {
    ...init,
    headers,
    body: init.json === undefined ? init.body : JSON.stringify(init.json),
  });
  const body = (await res.json().catch(() => null)) as T & { error?: { message: string } };
  if (!res.ok)
    throw new Error(`${init.method ?? "GET"} ${path} → ${res.status} ${body?.error?.message ?? ""}`);
  return body;
}

const RECIPES = [
  { title: "Tomato soup", calories: 180, tags: ["soup", "vegetarian"], embedding: [0.9, 0.1, 0.0] },
  { title: "Birthday cake", calories: 540, tags: ["dessert"], embedding: [0.1, 0.9, 0.2] },
  { title: "Green salad", calories: 120, tags: ["vegetarian", "quick"], embedding: [0.8, 0.0, 0.3] },
];

async function stillValid(base: string, demo: DemoCredentials): Promise<boolean> {
  const res = await fetch(`${base}/v1/admin/projects/${demo.projectId}`, {
    headers: { authorization: `Bearer ${demo.developerToken}` },
  });
  return res.ok;
}

export interface SeedOptions {
  /** Whether the database has pgvector: the demo gets its `embedding` column only then. */
  vectors: boolean;
}

const EMBEDDING_COLUMN = { name: "embedding", type: "vector", dimensions: 3, description: "Taste embedding" };

/** Seed once; later calls return the stored credentials after checking they still work. */
export async function seedDemo(
  base: string,
  stateFile: string,
  { vectors }: SeedOptions = { vectors: true },
): Promise<DemoCredentials> {
  if (existsSync(stateFile)) {
    const demo = JSON.parse(readFileSync(stateFile, "utf8")) as DemoCredentials;
    if (await stillValid(base, demo)) {
      // Session tokens expire; sign in again so the printed one always works.
      const session = await call<{ session_token: string }>(base, "/v1/auth/signin", {
        method: "POST",
        headers: { "x-api-key": demo.clientKey },
        json: { email: demo.userEmail, password: demo.userPassword },
      });
      const refreshed = await ensureSlug(base, { ...demo, sessionToken: session.session_token });
      writeFileSync(stateFile, JSON.stringify(refreshed, null, 2));
      return refreshed;
    }
  }
  const email = `demo+${Date.now()}@example.com`;
  const signup = await call<{ token: string; project: { id: string }; client_key: string }>(
    base,
    "/v1/developers/signup",
    { method: "POST", json: { email } },
  );
  const dev = { authorization: `Bearer ${signup.token}` };
  const projectId = signup.project.id;
  await call(base, `/v1/admin/projects/${projectId}/collections`, {
    method: "POST",
    headers: dev,
    json: {
      name: "recipes",
      columns: [
        { name: "title", type: "text", required: true, description: "Dish name" },
        { name: "calories", type: "integer", description: "Energy per serving, kcal" },
        { name: "tags", type: "text[]", description: "Free-form labels" },
        ...(vectors ? [EMBEDDING_COLUMN] : []),
      ],
      access: { read: "public", write: "owner" },
    },
  });
  for (const { embedding, ...recipe } of RECIPES) {
    await call(base, `/v1/projects/${projectId}/collections/recipes/rows`, {
      method: "POST",
      headers: dev,
      json: vectors ? { ...recipe, embedding } : recipe,
    });
  }
  await call(base, `/v1/admin/projects/${projectId}/app-mcp/exposure`, {
    method: "PUT",
    headers: dev,
    json: { collections: ["recipes"] },
  });
  const userEmail = "user@example.com";
  const userPassword = "demo-password";
  const user = await call<{ session_token: string }>(base, "/v1/auth/signup", {
    method: "POST",
    headers: { "x-api-key": signup.client_key },
    json: { email: userEmail, password: userPassword },
  });
  const demo: DemoCredentials = await ensureSlug(base, {
    email,
    developerToken: signup.token,
    projectId,
    clientKey: signup.client_key,
    userEmail,
    userPassword,
    sessionToken: user.session_token,
  });
  writeFileSync(stateFile, JSON.stringify(demo, null, 2));
  return demo;
}
