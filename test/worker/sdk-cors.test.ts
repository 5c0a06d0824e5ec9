/**
 * CORS on the SDK routes (an app's client code in a browser): `/v1/projects/:id/…` (data, invoke),
 * `/v1/auth/*` and `POST /v1/events`. An `Origin` the project lists in `allowed_origins` gets
 * `Access-Control-Allow-Origin` on every answer, errors included; any other `Origin` (or none) is
 * answered exactly as before, without CORS headers. Preflights: answered for listed origins on the
 * project routes (403 otherwise); answered without naming any origin on the credential-only routes,
 * whose preflight names no project.
 */
import { beforeAll, describe, expect, it, vi } from "vitest";
import {
  api,
  apiJson,
  endUserHeaders,
  expectError,
  freshIp,
  requestRoundTrips,
  signupDeveloper,
  signupUser,
  type TestDeveloper,
  type TestUser,
  withinOneRateLimitWindow,
} from "./helpers.ts";

const ORIGIN = "https://app.example.com";
const OTHER = "https://other.example.com";

let dev: TestDeveloper;
let user: TestUser;
let other: TestDeveloper;

async function allow(d: TestDeveloper, origins: string[]) {
  const res = await apiJson(`/v1/admin/projects/${d.projectId}/app-mcp/config`, {
    method: "PATCH",
    token: d.token,
    json: { allowed_origins: origins },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

beforeAll(async () => {
  dev = await signupDeveloper();
  other = await signupDeveloper();
  await allow(dev, [ORIGIN, "http://localhost:5173"]);
  await allow(other, [OTHER]);
  const created = await apiJson(`/v1/admin/projects/${dev.projectId}/collections`, {
    token: dev.token,
    json: {
      name: "notes",
      columns: [{ name: "title", type: "text", required: true }],
      access: { read: "public", write: "owner" },
    },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  user = await signupUser(dev.projectId, dev.clientKey);
});

const rows = (d: TestDeveloper = dev) => `/v1/projects/${d.projectId}/collections/notes/rows`;

/** Asserts the answer carries the CORS headers for `origin`. */
function expectCors(res: Response, origin: string) {
  expect(res.headers.get("access-control-allow-origin")).toBe(origin);
  expect(res.headers.get("vary") ?? "").toMatch(/origin/i);
  expect(res.headers.get("access-control-expose-headers") ?? "").toMatch(/retry-after/i);
  expect(res.headers.get("access-control-allow-credentials")).toBeNull();
}

/** Asserts the answer carries no CORS header at all. */
function expectNoCors(res: Response) {
  expect(res.headers.get("access-control-allow-origin")).toBeNull();
  expect(res.headers.get("access-control-expose-headers")).toBeNull();
  expect(res.headers.get("access-control-allow-methods")).toBeNull();
}

const asUser = (origin?: string, extra: Record<string, string> = {}) => ({
  ...endUserHeaders(dev.clientKey, user.sessionToken),
  ...(origin === undefined ? {} : { origin }),
  ...extra,
});

describe("SDK data routes", () => {
  it("a listed origin gets CORS headers on success (read and write)", async () => {
    const inserted = await api(rows(), { headers: asUser(ORIGIN), json: { title: "hi" } });
    expect(inserted.status).toBe(201);
    expectCors(inserted, ORIGIN);
    const listed = await api(rows(), { headers: asUser(ORIGIN) });
    expect(listed.status).toBe(200);
    expectCors(listed, ORIGIN);
    expect(((await listed.json()) as { rows: unknown[] }).rows.length).toBeGreaterThan(0);
    const local = await api(rows(), { headers: asUser("http://localhost:5173") });
    expectCors(local, "http://localhost:5173");
  });

  it("a listed origin gets CORS headers on errors (401, 404, 400)", async () => {
    const badKey = await api(rows(), {
      headers: { origin: ORIGIN, "x-api-key": "amba_ck_nope", authorization: "Bearer x" },
    });
    expect(badKey.status).toBe(401);
    expectCors(badKey, ORIGIN);
    const noCreds = await api(rows(), { headers: { origin: ORIGIN } });
    expect(noCreds.status).toBe(401);
    expectCors(noCreds, ORIGIN);
    const missing = await api(`/v1/projects/${dev.projectId}/collections/nope/rows`, {
      headers: asUser(ORIGIN),
    });
    expect(missing.status).toBe(404);
    expectCors(missing, ORIGIN);
    const invalid = await api(rows(), { headers: asUser(ORIGIN), json: { nope: 1 } });
    expect(invalid.status).toBe(400);
    expectCors(invalid, ORIGIN);
    const invoke = await api(`/v1/projects/${dev.projectId}/functions/nope/invoke`, {
      headers: asUser(ORIGIN),
      json: {},
    });
    expect(invoke.status).toBe(404);
    expectCors(invoke, ORIGIN);
  });

  it("refusals before any route (path guard 400, body limit 413) carry them too", async () => {
    const guarded = await api(`/v1/projects/${dev.projectId}/collections/a%00b/rows`, {
      headers: asUser(ORIGIN),
    });
    expect(guarded.status).toBe(400);
    expectCors(guarded, ORIGIN);
    const big = await api(`/v1/projects/${dev.projectId}/collections/notes/find`, {
      method: "POST",
      headers: { ...asUser(ORIGIN), "content-type": "application/json" },
      body: JSON.stringify({ where: {}, pad: "x".repeat(1024 * 1024 + 10) }),
    });
    expect(big.status).toBe(413);
    expectCors(big, ORIGIN);
  });

  it("costs a warm request no round trip: the origins come with the cached resolution", async () => {
    const find = () =>
      api(`/v1/projects/${dev.projectId}/collections/notes/find`, {
        headers: asUser(ORIGIN),
        json: { where: { title: { eq: "x" } } },
      });
    expect((await find()).status).toBe(200);
    const fetchSpy = vi.spyOn(globalThis, "fetch");
    try {
      const warm = await find();
      expect(warm.status).toBe(200);
      expectCors(warm, ORIGIN);
      expect(requestRoundTrips(fetchSpy)).toBe(1);
    } finally {
      fetchSpy.mockRestore();
    }
  });

  it("an unlisted or absent origin is answered as before, without CORS headers", async () => {
    for (const origin of [undefined, OTHER, "null"]) {
      const res = await api(rows(), { headers: asUser(origin) });
      expect(res.status).toBe(200);
      expectNoCors(res);
      const denied = await api(rows(), { headers: { ...(origin ? { origin } : {}) } });
      expect(denied.status).toBe(401);
      expectNoCors(denied);
    }
  });

  it("hostile spellings of a listed origin are unlisted", async () => {
    const hostile = [
      "null",
      `${ORIGIN}/`,
      `${ORIGIN}/path`,
      "https://user@app.example.com",
      "HTTPS://APP.EXAMPLE.COM",
      "https://app.example.com:443",
      "https://app.example.com.evil.com",
      `${ORIGIN}, ${OTHER}`,
      "",
    ];
    for (const origin of hostile) {
      const res = await api(rows(), { headers: asUser(origin) });
      expect(res.status, origin).toBe(200);
      expectNoCors(res);
      const preflight = await api(rows(), {
        method: "OPTIONS",
        headers: { origin, "access-control-request-method": "GET" },
      });
      if (origin === "") {
        // No Origin to speak of: not a CORS preflight, answered as before.
        expectNoCors(preflight);
        continue;
      }
      expect(preflight.status, origin).toBe(403);
      expectNoCors(preflight);
    }
  });

  it("another project's listed origin does not open this project", async () => {
    const res = await api(rows(), { headers: asUser(OTHER) });
    expect(res.status).toBe(200);
    expectNoCors(res);
    // Nor do that project's own credentials, sent to this project's path.
    const foreign = await api(rows(), { headers: { origin: OTHER, "x-api-key": other.clientKey } });
    expect(foreign.status).toBe(401);
    expectNoCors(foreign);
    const preflight = await api(rows(), {
      method: "OPTIONS",
      headers: { origin: OTHER, "access-control-request-method": "POST" },
    });
    expect(preflight.status).toBe(403);
    expectNoCors(preflight);
    // And this project's origin opens nothing of the other's.
    const theirs = await api(rows(other), { method: "OPTIONS", headers: { origin: ORIGIN } });
    expect(theirs.status).toBe(403);
  });

  it("answers the preflight of a listed origin (204, the route's methods, headers, max-age)", async () => {
    const routes = [
      [rows(), ["GET", "POST"]],
      [`${rows()}/${crypto.randomUUID()}`, ["GET", "PATCH", "DELETE"]],
      [`/v1/projects/${dev.projectId}/collections/notes/find`, ["POST"]],
      [`/v1/projects/${dev.projectId}/collections/notes/aggregate`, ["POST"]],
      [`/v1/projects/${dev.projectId}/functions/f/invoke`, ["POST"]],
    ] as const;
    for (const [path, methods] of routes) {
      const res = await api(path, {
        method: "OPTIONS",
        headers: {
          origin: ORIGIN,
          "access-control-request-method": methods[0],
          "access-control-request-headers": "content-type, authorization, x-api-key",
        },
      });
      expect(res.status, path).toBe(204);
      expect(res.headers.get("access-control-allow-origin")).toBe(ORIGIN);
      expect(res.headers.get("vary") ?? "").toMatch(/origin/i);
      for (const method of methods) expect(res.headers.get("access-control-allow-methods")).toContain(method);
      const allowed = (res.headers.get("access-control-allow-headers") ?? "").toLowerCase();
      for (const h of ["content-type", "authorization", "x-api-key"]) expect(allowed).toContain(h);
      expect(Number(res.headers.get("access-control-max-age"))).toBeGreaterThan(0);
      expect(res.headers.get("access-control-allow-credentials")).toBeNull();
    }
  });

  it("refuses the preflight of an unlisted origin, and of an unknown project, with 403 and no CORS", async () => {
    const unlisted = await apiJson(rows(), { method: "OPTIONS", headers: { origin: OTHER } });
    expectError(unlisted, 403);
    expect(unlisted.body.error.code).toBe("forbidden");
    const unknown = await api(`/v1/projects/${crypto.randomUUID()}/collections/notes/rows`, {
      method: "OPTIONS",
      headers: { origin: ORIGIN, "cf-connecting-ip": freshIp() },
    });
    expect(unknown.status).toBe(403);
    expectNoCors(unknown);
    const malformed = await api("/v1/projects/not-a-uuid/collections/notes/rows", {
      method: "OPTIONS",
      headers: { origin: ORIGIN, "cf-connecting-ip": freshIp() },
    });
    expect(malformed.status).toBe(403);
    expectNoCors(malformed);
  });

  it("follows a change of allowed_origins at once (the cached resolution is forgotten)", async () => {
    const d = await signupDeveloper();
    await allow(d, [ORIGIN]);
    const events = () =>
      api("/v1/events", { apiKey: d.clientKey, headers: { origin: ORIGIN }, json: { name: "x" } });
    const path = `/v1/projects/${d.projectId}/collections/none/rows`;
    const rowsAs = () => api(path, { token: d.token, headers: { origin: ORIGIN } });
    expectCors(await events(), ORIGIN);
    expectCors(await rowsAs(), ORIGIN);
    const preflight = () => api(path, { method: "OPTIONS", headers: { origin: ORIGIN } });
    expect((await preflight()).status).toBe(204);
    await allow(d, []);
    const after = await events();
    expect(after.status).toBe(201);
    expectNoCors(after);
    const gone = await rowsAs();
    expect(gone.status).toBe(404);
    expectNoCors(gone);
    expect((await preflight()).status).toBe(403);
  });

  it("an OPTIONS without Origin is answered as before", async () => {
    const before = await api(rows(), { method: "OPTIONS" });
    expect(before.status).toBe(404);
    expectNoCors(before);
  });
});

describe("credential-only routes: /v1/auth/* and POST /v1/events", () => {
  it("answers their preflight for any origin without naming it", async () => {
    for (const [path, method] of [
      ["/v1/events", "POST"],
      ["/v1/auth/signup", "POST"],
      ["/v1/auth/signin", "POST"],
      ["/v1/auth/signout", "POST"],
      ["/v1/auth/me", "GET"],
    ] as const) {
      for (const origin of [ORIGIN, OTHER, "null"]) {
        const res = await api(path, {
          method: "OPTIONS",
          headers: { origin, "access-control-request-method": method },
        });
        expect(res.status, `${path} ${origin}`).toBe(204);
        expect(res.headers.get("access-control-allow-origin")).toBe("*");
        expect(res.headers.get("access-control-allow-methods")).toContain(method);
        const allowed = (res.headers.get("access-control-allow-headers") ?? "").toLowerCase();
        for (const h of ["content-type", "authorization", "x-api-key"]) expect(allowed).toContain(h);
        expect(res.headers.get("access-control-allow-credentials")).toBeNull();
      }
    }
  });

  it("events: the key's project's listed origin gets CORS headers, success and errors", async () => {
    const ok = await api("/v1/events", {
      apiKey: dev.clientKey,
      headers: { origin: ORIGIN },
      json: { name: "app.opened" },
    });
    expect(ok.status).toBe(201);
    expectCors(ok, ORIGIN);
    const withSession = await api("/v1/events", { headers: asUser(ORIGIN), json: { name: "x" } });
    expect(withSession.status).toBe(201);
    expectCors(withSession, ORIGIN);
    const invalid = await api("/v1/events", {
      apiKey: dev.clientKey,
      headers: { origin: ORIGIN },
      json: { nope: true },
    });
    expect(invalid.status).toBe(400);
    expectCors(invalid, ORIGIN);
  });

  it("events: another project's key, an unlisted or absent origin get no CORS headers", async () => {
    const foreign = await api("/v1/events", {
      apiKey: other.clientKey,
      headers: { origin: ORIGIN },
      json: { name: "x" },
    });
    expect(foreign.status).toBe(201);
    expectNoCors(foreign);
    for (const origin of [undefined, OTHER, `${ORIGIN}/`, "null"]) {
      const res = await api("/v1/events", {
        apiKey: dev.clientKey,
        headers: origin === undefined ? {} : { origin },
        json: { name: "x" },
      });
      expect(res.status).toBe(201);
      expectNoCors(res);
    }
    const badKey = await api("/v1/events", {
      apiKey: "amba_ck_nope",
      headers: { origin: ORIGIN },
      json: { name: "x" },
    });
    expect(badKey.status).toBe(401);
    expectNoCors(badKey);
  });

  it("auth: sign-up, sign-in (and its 401), me and sign-out carry CORS for the key's listed origin", async () => {
    const ip = { "cf-connecting-ip": freshIp() };
    const email = `cors-${crypto.randomUUID().slice(0, 8)}@example.com`;
    const signup = await api("/v1/auth/signup", {
      apiKey: dev.clientKey,
      headers: { origin: ORIGIN, ...ip },
      json: { email, password: "correct horse battery" },
    });
    expect(signup.status).toBe(201);
    expectCors(signup, ORIGIN);
    const wrong = await api("/v1/auth/signin", {
      apiKey: dev.clientKey,
      headers: { origin: ORIGIN, ...ip },
      json: { email, password: "wrong password here" },
    });
    expect(wrong.status).toBe(401);
    expectCors(wrong, ORIGIN);
    const signin = await api("/v1/auth/signin", {
      apiKey: dev.clientKey,
      headers: { origin: ORIGIN, ...ip },
      json: { email, password: "correct horse battery" },
    });
    expect(signin.status).toBe(200);
    expectCors(signin, ORIGIN);
    const session = ((await signin.json()) as { session_token: string }).session_token;
    const headers = { ...endUserHeaders(dev.clientKey, session), origin: ORIGIN };
    const me = await api("/v1/auth/me", { headers });
    expect(me.status).toBe(200);
    expectCors(me, ORIGIN);
    const unlisted = await api("/v1/auth/me", { headers: { ...headers, origin: OTHER } });
    expect(unlisted.status).toBe(200);
    expectNoCors(unlisted);
    const out = await api("/v1/auth/signout", { method: "POST", headers });
    expect(out.status).toBe(200);
    expectCors(out, ORIGIN);
    const gone = await api("/v1/auth/me", { headers });
    // The key checks out: its project's origin reads the expired session's 401 too.
    expect(gone.status).toBe(401);
    expectCors(gone, ORIGIN);
  });

  it("auth: a sign-in refused by its rate limit (429) is readable, Retry-After exposed", async () => {
    await withinOneRateLimitWindow();
    const email = `cors-limit-${crypto.randomUUID().slice(0, 8)}@example.com`;
    let last: Response | undefined;
    for (let i = 0; i < 12; i++) {
      last = await api("/v1/auth/signin", {
        apiKey: dev.clientKey,
        headers: { origin: ORIGIN, "cf-connecting-ip": freshIp() },
        json: { email, password: "wrong password here" },
      });
      if (last.status === 429) break;
      expect(last.status).toBe(401);
      expectCors(last, ORIGIN);
    }
    expect(last?.status).toBe(429);
    expectCors(last as Response, ORIGIN);
    expect(last?.headers.get("retry-after")).toMatch(/^\d+$/);
  });

  it("auth: another project's key does not open this project's origin", async () => {
    const res = await api("/v1/auth/signup", {
      apiKey: other.clientKey,
      headers: { origin: ORIGIN, "cf-connecting-ip": freshIp() },
      json: { email: `x-${crypto.randomUUID().slice(0, 8)}@example.com`, password: "correct horse battery" },
    });
    expect(res.status).toBe(201);
    expectNoCors(res);
  });
});
