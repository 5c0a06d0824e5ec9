import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { Hono } from "hono";
import { describe, expect, it, vi } from "vitest";
import {
  authenticateDeveloper,
  authenticateProject,
  authenticateProjectAdmin,
} from "../../../src/worker/auth.ts";
import { createDb } from "../../../src/worker/db.ts";
import type { Env } from "../../../src/worker/env.ts";
import { renderError } from "../../../src/worker/errors.ts";
import type { AppEnv } from "../../../src/worker/hono.ts";
import { endUserHeaders, requestRoundTrips, signupDeveloper, signupUser, testDb } from "../helpers.ts";

/** A tiny app that exposes the resolvers, so their results can be asserted directly. */
function resolverApp() {
  const app = new Hono<AppEnv>();
  app.onError(renderError);
  app.use("*", async (c, next) => {
    c.set("db", createDb(c.env));
    await next();
  });
  app.get("/p/:id", async (c) => c.json(await authenticateProject(c, { projectId: c.req.param("id") })));
  app.get("/s/:slug", async (c) => c.json(await authenticateProject(c, { slug: c.req.param("slug") })));
  app.get("/admin/:id", async (c) => c.json(await authenticateProjectAdmin(c, c.req.param("id"))));
  app.get("/dev", async (c) => c.json(await authenticateDeveloper(c)));
  return app;
}

const app = resolverApp();
async function call(path: string, headers: Record<string, string> = {}) {
  const res = await app.fetch(new Request(`http://local${path}`, { headers }), env as unknown as Env);
  // biome-ignore lint/suspicious/noExplicitAny: response bodies are asserted by the tests
  return { status: res.status, body: (await res.json()) as any };
}
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe("authenticateProject", () => {
  it("resolves a developer and returns the project and app-MCP config", async () => {
    const dev = await signupDeveloper();
    const res = await call(`/p/${dev.projectId}`, bearer(dev.token));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      principal: {
        scope: "developer",
        developerId: dev.developerId,
        project: { id: dev.projectId, name: "My first project", developerId: dev.developerId, metaRev: 1 },
      },
      config: {
        enabled: true,
        authMode: "all",
        slug: null,
        exposedCollections: [],
        exposedFunctions: [],
        rateLimitPerMinute: 6000,
        allowedOrigins: [],
        functionSigning: { secret: expect.stringMatching(/^amba_fsig_[0-9a-f]{64}$/), previous: null },
      },
    });
  });

  it("reflects the stored config row, meta_rev and resolves by slug", async () => {
    const dev = await signupDeveloper();
    const slug = `s${crypto.randomUUID().slice(0, 8)}`;
    await testDb().batch([
      testDb().execute(sql`update app_mcp_configs set enabled = false, auth_mode = 'client_only', slug = ${slug},
        exposed_collections = '{recipes,notes}', exposed_functions = '{send}', rate_limit_per_minute = 60000 where project_id = ${dev.projectId}::uuid`),
      testDb().execute(sql`update projects set meta_rev = meta_rev + 4 where id = ${dev.projectId}::uuid`),
    ]);
    const res = await call(`/s/${slug}`, bearer(dev.token));
    expect(res.status).toBe(200);
    expect(res.body.principal.project).toMatchObject({ id: dev.projectId, metaRev: 5 });
    expect(res.body.config).toEqual({
      enabled: false,
      authMode: "client_only",
      slug,
      exposedCollections: ["recipes", "notes"],
      exposedFunctions: ["send"],
      rateLimitPerMinute: 60000,
      allowedOrigins: [],
      functionSigning: { secret: expect.stringMatching(/^amba_fsig_[0-9a-f]{64}$/), previous: null },
    });
    expect((await call("/s/no-such-slug", bearer(dev.token))).status).toBe(404);
  });

  it("resolves an end user from client key + session", async () => {
    const dev = await signupDeveloper();
    const user = await signupUser(dev.projectId, dev.clientKey);
    const res = await call(`/p/${dev.projectId}`, endUserHeaders(dev.clientKey, user.sessionToken));
    expect(res.status).toBe(200);
    expect(res.body.principal).toEqual({
      scope: "end_user",
      project: { id: dev.projectId, name: "My first project", developerId: dev.developerId, metaRev: 1 },
      user: { id: user.userId, email: user.email },
      clientKeyId: expect.any(String),
    });
    expect(dev.clientKey).toContain(res.body.principal.clientKeyId.replaceAll("-", ""));
  });

  it("prefers a developer Bearer even when X-Api-Key is sent too", async () => {
    const dev = await signupDeveloper();
    const res = await call(`/p/${dev.projectId}`, { ...bearer(dev.token), "x-api-key": dev.clientKey });
    expect(res.body.principal.scope).toBe("developer");
  });

  it("answers 404 for another developer's, unknown or malformed projects — after checking the token", async () => {
    const owner = await signupDeveloper();
    const other = await signupDeveloper();
    expect((await call(`/p/${owner.projectId}`, bearer(other.token))).status).toBe(404);
    expect((await call(`/admin/${owner.projectId}`, bearer(other.token))).status).toBe(404);
    expect((await call(`/p/${crypto.randomUUID()}`, bearer(owner.token))).status).toBe(404);
    expect((await call("/p/x'or'1'='1", bearer(owner.token))).status).toBe(404);
    // Without valid credentials nothing is said about the project.
    expect((await call(`/p/${crypto.randomUUID()}`, bearer("junk"))).status).toBe(401);
    expect((await call(`/p/${owner.projectId}`)).status).toBe(401);
  });

  it("answers 401 for end-user credentials of another project, and for missing parts", async () => {
    const a = await signupDeveloper();
    const b = await signupDeveloper();
    const userA = await signupUser(a.projectId, a.clientKey);
    const userB = await signupUser(b.projectId, b.clientKey);
    expect((await call(`/p/${b.projectId}`, endUserHeaders(a.clientKey, userA.sessionToken))).status).toBe(
      401,
    );
    expect((await call(`/p/${a.projectId}`, endUserHeaders(a.clientKey, userB.sessionToken))).status).toBe(
      401,
    );
    expect((await call(`/p/${a.projectId}`, { "x-api-key": a.clientKey })).status).toBe(401);
    const sessionOnly = await call(`/p/${a.projectId}`, bearer(userA.sessionToken));
    expect(sessionOnly.status).toBe(401);
    expect(sessionOnly.body.error.message).toContain("X-Api-Key");
    expect((await call(`/p/${a.projectId}`, endUserHeaders("amba_ck_bad", userA.sessionToken))).status).toBe(
      401,
    );
    // End-user credentials never pass the admin resolver.
    expect(
      (await call(`/admin/${a.projectId}`, endUserHeaders(a.clientKey, userA.sessionToken))).status,
    ).toBe(401);
  });

  it("answers 401 for a revoked or expired session and a revoked key", async () => {
    const dev = await signupDeveloper();
    const user = await signupUser(dev.projectId, dev.clientKey);
    const headers = endUserHeaders(dev.clientKey, user.sessionToken);
    expect((await call(`/p/${dev.projectId}`, headers)).status).toBe(200);
    await testDb().execute(
      sql`update sessions set expires_at = now() - interval '1 minute' where user_id = ${user.userId}::uuid`,
    );
    expect((await call(`/p/${dev.projectId}`, headers)).status).toBe(401);

    const fresh = await signupUser(dev.projectId, dev.clientKey);
    const freshHeaders = endUserHeaders(dev.clientKey, fresh.sessionToken);
    expect((await call(`/p/${dev.projectId}`, freshHeaders)).status).toBe(200);
    await testDb().execute(
      sql`update client_keys set revoked_at = now() where project_id = ${dev.projectId}::uuid`,
    );
    const revoked = await call(`/p/${dev.projectId}`, freshHeaders);
    expect(revoked.status).toBe(401);
    expect(revoked.body.error.code).toBe("unauthorized");
  });

  it("resolves in a single SQL round trip", async () => {
    const dev = await signupDeveloper();
    const user = await signupUser(dev.projectId, dev.clientKey);
    const fetchSpy = vi.spyOn(globalThis, "fetch");
    try {
      expect((await call(`/p/${dev.projectId}`, bearer(dev.token))).status).toBe(200);
      expect(requestRoundTrips(fetchSpy)).toBe(1);
      fetchSpy.mockClear();
      expect(
        (await call(`/p/${dev.projectId}`, endUserHeaders(dev.clientKey, user.sessionToken))).status,
      ).toBe(200);
      expect(requestRoundTrips(fetchSpy)).toBe(1);
      fetchSpy.mockClear();
      // Malformed credentials are refused before any query.
      expect((await call(`/p/${dev.projectId}`, bearer("amba_dev_nope"))).status).toBe(401);
      expect(requestRoundTrips(fetchSpy)).toBe(0);
    } finally {
      fetchSpy.mockRestore();
    }
  });

  it("compares secret digests with crypto.subtle.timingSafeEqual", async () => {
    const dev = await signupDeveloper();
    const subtle = crypto.subtle as SubtleCrypto & {
      timingSafeEqual: (a: ArrayBufferView, b: ArrayBufferView) => boolean;
    };
    const spy = vi.spyOn(subtle, "timingSafeEqual");
    try {
      expect((await call("/dev", bearer(dev.token))).status).toBe(200);
      expect(spy).toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
  });
});
