import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, inject, it, vi } from "vitest";
import type { Principal } from "../../../src/credentials/principal.ts";
import { AppError } from "../../../src/errors.ts";
import {
  FUNCTION_VERSIONS_KEPT,
  invokeFunction,
  loadFunction,
  loadFunctions,
  MAX_FUNCTIONS_PER_PROJECT,
} from "../../../src/functions/service.ts";
import { unlimited } from "../../../src/rate-limit.ts";
import { UsageMeter } from "../../../src/usage/metering.ts";
import type { Env } from "../../../src/worker/env.ts";
import { rateLimiter } from "../../../src/worker/rate-limit.ts";
import { WELCOME_EMAIL_MCP } from "../../fixtures.ts";
import {
  apiJson,
  billingUsage,
  endUserHeaders,
  expectError,
  signupDeveloper,
  signupUser,
  type TestDeveloper,
  testDb,
  unmetered,
} from "../helpers.ts";

const echoUrl = inject("echoUrl");

const WELCOME = WELCOME_EMAIL_MCP;

const admin = (dev: TestDeveloper, path = "") => `/v1/admin/projects/${dev.projectId}/functions${path}`;

async function metaRev(projectId: string): Promise<number> {
  const { rows } = await testDb().execute(sql`select meta_rev from projects where id = ${projectId}::uuid`);
  return Number((rows[0] as { meta_rev: string }).meta_rev);
}

async function deploy(dev: TestDeveloper, body: unknown) {
  return apiJson(admin(dev, "/deploy"), { token: dev.token, json: body });
}

describe("deploy, versions, promote, delete", () => {
  it("deploys versions 1, 2, … each active, and promote restores the old annotation", async () => {
    const dev = await signupDeveloper();
    const rev0 = await metaRev(dev.projectId);

    const v1 = await deploy(dev, { name: "send_welcome_email", url: `${echoUrl}/v1`, mcp: WELCOME });
    expect(v1.status).toBe(201);
    expect(v1.body).toMatchObject({
      name: "send_welcome_email",
      version: 1,
      url: `${echoUrl}/v1`,
      active: true,
      mcp: WELCOME,
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/),
    });
    expect(await metaRev(dev.projectId)).toBe(rev0 + 1);

    const v2 = await deploy(dev, { name: "send_welcome_email", url: `${echoUrl}/v2` });
    expect(v2.status).toBe(201);
    expect(v2.body).toMatchObject({ version: 2, url: `${echoUrl}/v2`, active: true, mcp: null });
    expect(await metaRev(dev.projectId)).toBe(rev0 + 2);

    const versions = await apiJson(admin(dev, "/send_welcome_email/versions"), { token: dev.token });
    expect(versions.status).toBe(200);
    expect(versions.body.name).toBe("send_welcome_email");
    expect(
      versions.body.versions.map((x: { version: number; active: boolean; mcp: unknown }) => [
        x.version,
        x.active,
        x.mcp,
      ]),
    ).toEqual([
      [1, false, WELCOME],
      [2, true, null],
    ]);

    const promoted = await apiJson(admin(dev, "/send_welcome_email/promote"), {
      token: dev.token,
      json: { version: 1 },
    });
    expect(promoted.status).toBe(200);
    expect(promoted.body).toMatchObject({
      name: "send_welcome_email",
      version: 1,
      active: true,
      mcp: WELCOME,
    });
    expect(await metaRev(dev.projectId)).toBe(rev0 + 3);

    const list = await apiJson(admin(dev), { token: dev.token });
    expect(list.status).toBe(200);
    expect(list.body.functions).toEqual([
      expect.objectContaining({
        name: "send_welcome_email",
        version: 1,
        active_version: 1,
        versions: 2,
        url: `${echoUrl}/v1`,
        active: true,
        mcp: WELCOME,
      }),
    ]);
    expect(await loadFunctions(testDb(), dev.projectId)).toEqual([
      { name: "send_welcome_email", version: 1, url: `${echoUrl}/v1`, mcp: WELCOME },
    ]);

    // A new deploy after a promote continues the numbering.
    const v3 = await deploy(dev, {
      name: "send_welcome_email",
      url: `${echoUrl}/v3`,
      mcp: { description: "v3" },
    });
    expect(v3.body).toMatchObject({ version: 3, active: true, mcp: { description: "v3" } });
  });

  it("keeps concurrent deploys of one name on distinct version numbers", async () => {
    const dev = await signupDeveloper();
    // Eight at once: more than the service's retries could absorb if they collided on numbers.
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => deploy(dev, { name: "racy", url: `${echoUrl}/r${i}` })),
    );
    expect(results.map((r) => r.status)).toEqual(Array(8).fill(201));
    expect(results.map((r) => r.body.version).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it("deploys seed 004's metadata without a url: the active version's URL is kept (none on a first deploy)", async () => {
    const dev = await signupDeveloper();
    const first = await deploy(dev, { name: "send_welcome_email", mcp: WELCOME });
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect(first.body).toMatchObject({ version: 1, url: null, active: true, mcp: WELCOME });
    await deploy(dev, { name: "send_welcome_email", url: `${echoUrl}/a` });
    await deploy(dev, { name: "send_welcome_email", url: `${echoUrl}/b` });
    // Promoted back to version 2: a metadata-only deploy keeps the *active* version's URL, not the newest.
    await apiJson(admin(dev, "/send_welcome_email/promote"), { token: dev.token, json: { version: 2 } });
    const metadata = await deploy(dev, { name: "send_welcome_email", mcp: WELCOME });
    expect(metadata.status, JSON.stringify(metadata.body)).toBe(201);
    expect(metadata.body).toMatchObject({ version: 4, url: `${echoUrl}/a`, active: true });
    expect(metadata.body.mcp.description).toBe(WELCOME.description);
  });

  it("answers 404 for an unknown function or version", async () => {
    const dev = await signupDeveloper();
    await deploy(dev, { name: "known", url: echoUrl });
    expectError(await apiJson(admin(dev, "/ghost/versions"), { token: dev.token }), 404, "ghost");
    expectError(await apiJson(admin(dev, "/ghost/promote"), { token: dev.token, json: { version: 1 } }), 404);
    expectError(
      await apiJson(admin(dev, "/known/promote"), { token: dev.token, json: { version: 7 } }),
      404,
      "no version 7",
    );
    expectError(await apiJson(admin(dev, "/ghost"), { token: dev.token, method: "DELETE" }), 404);
    expectError(await apiJson(admin(dev, "/known/promote"), { token: dev.token, json: { version: 0 } }), 400);
  });

  it("deletes a function with its versions and takes it off the exposure list", async () => {
    const dev = await signupDeveloper();
    await deploy(dev, { name: "gone", url: echoUrl });
    await deploy(dev, { name: "kept", url: echoUrl });
    const exposure = `/v1/admin/projects/${dev.projectId}/app-mcp/exposure`;
    await apiJson(exposure, { token: dev.token, method: "PUT", json: { functions: ["gone", "kept"] } });
    const rev = await metaRev(dev.projectId);

    const deleted = await apiJson(admin(dev, "/gone"), { token: dev.token, method: "DELETE" });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ name: "gone", deleted: true });
    expect(await metaRev(dev.projectId)).toBe(rev + 1);
    expectError(await apiJson(admin(dev, "/gone/versions"), { token: dev.token }), 404);
    expect((await apiJson(exposure, { token: dev.token })).body.functions).toEqual(["kept"]);

    // Redeploying the name starts over at version 1.
    expect((await deploy(dev, { name: "gone", url: echoUrl })).body.version).toBe(1);
  });

  it("keeps the newest versions of a function and bounds the functions of a project (403 quota_exceeded)", async () => {
    const dev = await signupDeveloper();
    expect((await deploy(dev, { name: "busy", url: echoUrl })).status).toBe(201);
    // Versions 2 … KEPT directly (one statement rather than a deploy each), the last one active.
    await testDb().execute(sql`
      insert into function_versions (function_id, version, url)
      select f.id, i, ${echoUrl} from functions f, generate_series(2, ${FUNCTION_VERSIONS_KEPT}) as i
      where f.project_id = ${dev.projectId} and f.name = 'busy'`);
    await testDb().execute(sql`update functions set active_version = ${FUNCTION_VERSIONS_KEPT}
      where project_id = ${dev.projectId} and name = 'busy'`);
    const next = await deploy(dev, { name: "busy", url: `${echoUrl}/next` });
    expect(next.body).toMatchObject({ version: FUNCTION_VERSIONS_KEPT + 1, active: true });
    const versions = await apiJson(admin(dev, "/busy/versions"), { token: dev.token });
    expect(versions.body.versions.map((v: { version: number }) => v.version)).toEqual(
      Array.from({ length: FUNCTION_VERSIONS_KEPT }, (_, i) => i + 2),
    );
    expectError(
      await apiJson(admin(dev, "/busy/promote"), { token: dev.token, json: { version: 1 } }),
      404,
      "no version 1",
    );

    // The quota counts function rows: fill them directly, then a new name is refused, a redeploy not.
    await testDb().execute(sql`insert into functions (project_id, name, active_version)
      select ${dev.projectId}::uuid, 'filler_' || i, 1 from generate_series(2, ${MAX_FUNCTIONS_PER_PROJECT}) as i`);
    const refused = await deploy(dev, { name: "one_too_many", url: echoUrl });
    expectError(refused, 403, `a project holds at most ${MAX_FUNCTIONS_PER_PROJECT} functions`);
    expect(refused.body.error.code).toBe("quota_exceeded");
    expect((await deploy(dev, { name: "busy", url: echoUrl })).status).toBe(201);
    expect((await apiJson(admin(dev, "/filler_2"), { token: dev.token, method: "DELETE" })).status).toBe(200);
    expect((await deploy(dev, { name: "one_too_many", url: echoUrl })).status).toBe(201);
  });

  it.each([
    ["an uppercase name", { name: "Send", url: "https://x.example" }, "name"],
    ["a name with a dash", { name: "send-mail", url: "https://x.example" }, "name"],
    ["a 41-character name", { name: "a".repeat(41), url: "https://x.example" }, "name"],
    ["a non-http url", { name: "f", url: "ftp://x.example/f" }, "url"],
    ["a relative url", { name: "f", url: "/f" }, "url"],
    ["an unknown mcp key", { name: "f", url: "https://x.example", mcp: { schema: {} } }, "mcp"],
    [
      "a $ref in the input schema",
      {
        name: "f",
        url: "https://x.example",
        mcp: { input_schema: { type: "object", properties: { a: { $ref: "#/x" } } } },
      },
      "mcp.input_schema.properties.a",
    ],
    [
      "oneOf in the input schema",
      { name: "f", url: "https://x.example", mcp: { input_schema: { type: "object", oneOf: [] } } },
      "mcp.input_schema.oneOf",
    ],
    [
      "a pattern in the input schema",
      {
        name: "f",
        url: "https://x.example",
        mcp: { input_schema: { type: "object", properties: { a: { type: "string", pattern: "x" } } } },
      },
      "mcp.input_schema.properties.a.pattern",
    ],
    [
      "a type list in the input schema",
      {
        name: "f",
        url: "https://x.example",
        mcp: { input_schema: { type: "object", properties: { a: { type: ["string", "null"] } } } },
      },
      "mcp.input_schema.properties.a.type",
    ],
  ])("rejects %s with a 400 naming the path", async (_label, body, path) => {
    const dev = await signupDeveloper();
    const rev = await metaRev(dev.projectId);
    const res = await deploy(dev, body);
    expectError(res, 400, path);
    expect(await metaRev(dev.projectId)).toBe(rev);
    expect((await apiJson(admin(dev), { token: dev.token })).body.functions).toEqual([]);
  });

  it("requires the owning developer", async () => {
    const dev = await signupDeveloper();
    const other = await signupDeveloper();
    const user = await signupUser(dev.projectId, dev.clientKey);
    const body = { name: "f", url: echoUrl };
    expectError(await apiJson(admin(dev, "/deploy"), { json: body }), 401);
    expectError(await apiJson(admin(dev, "/deploy"), { token: other.token, json: body }), 404);
    expectError(
      await apiJson(admin(dev, "/deploy"), {
        headers: endUserHeaders(dev.clientKey, user.sessionToken),
        json: body,
      }),
      401,
    );
    expectError(await apiJson(admin(dev), { token: other.token }), 404);
  });
});

async function setupInvoke() {
  const dev = await signupDeveloper();
  const user = await signupUser(dev.projectId, dev.clientKey);
  const headers = endUserHeaders(dev.clientKey, user.sessionToken);
  const invoke = (name: string, json: unknown, extra: Record<string, string> = {}) =>
    apiJson(`/v1/projects/${dev.projectId}/functions/${name}/invoke`, {
      headers: { ...headers, ...extra },
      json,
    });
  return { dev, user, headers, invoke };
}

const usage = billingUsage;

describe("POST /v1/projects/:id/functions/:name/invoke", () => {
  it("forwards validated arguments with identity headers and never the caller's credentials", async () => {
    const { dev, user, invoke } = await setupInvoke();
    await deploy(dev, { name: "send_welcome_email", url: `${echoUrl}/hooks/welcome?src=amba`, mcp: WELCOME });

    const spoofed = { cookie: "sid=1", "x-amba-user-id": "spoofed", "x-amba-project-id": "spoofed" };
    const res = await invoke("send_welcome_email", { user_id: "u-9", template: "full" }, spoofed);
    expect(res.status).toBe(200);
    const echo = res.body;
    expect(echo).toMatchObject({
      method: "POST",
      path: "/hooks/welcome",
      query: { src: "amba" },
      body: { user_id: "u-9", template: "full" },
    });
    expect(echo.headers).toMatchObject({
      "content-type": "application/json",
      "x-amba-project-id": dev.projectId,
      "x-amba-user-id": user.userId,
      "x-amba-user-email": user.email,
      "x-amba-function": "send_welcome_email",
      "x-amba-function-version": "1",
      "x-amba-request-id": expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect(echo.headers.authorization).toBeUndefined();
    expect(echo.headers["x-api-key"]).toBeUndefined();
    expect(echo.headers.cookie).toBeUndefined();
    const text = JSON.stringify(echo);
    expect(text).not.toContain(user.sessionToken);
    expect(text).not.toContain(dev.clientKey);
    expect(text).not.toContain(dev.token);
  });

  it("uses the active version's URL and schema after a promote", async () => {
    const { dev, invoke } = await setupInvoke();
    await deploy(dev, { name: "f", url: `${echoUrl}/one`, mcp: WELCOME });
    await deploy(dev, { name: "f", url: `${echoUrl}/two` });
    const two = await invoke("f", { body: { anything: true }, query: { page: 2 } });
    expect(two.body).toMatchObject({ path: "/two", query: { page: "2" }, body: { anything: true } });
    expect(two.body.headers["x-amba-function-version"]).toBe("2");

    await apiJson(admin(dev, "/f/promote"), { token: dev.token, json: { version: 1 } });
    expectError(await invoke("f", { body: {} }), 400, "user_id");
    const one = await invoke("f", { user_id: "x" });
    expect(one.body).toMatchObject({ path: "/one", body: { user_id: "x" } });
  });

  it("rejects arguments that break the declared schema with a 400 naming the field", async () => {
    const { dev, invoke } = await setupInvoke();
    await deploy(dev, { name: "f", url: echoUrl, mcp: WELCOME });
    expectError(await invoke("f", { template: "short" }), 400, "user_id");
    expectError(await invoke("f", { user_id: "x", template: "long" }), 400, "template");
    expectError(await invoke("f", { user_id: 5 }), 400, "user_id");
    // An open schema forwards an undeclared key; one with additionalProperties: false refuses it.
    expect((await invoke("f", { user_id: "x", is_admin: true })).body.body).toEqual({
      user_id: "x",
      is_admin: true,
    });
    const closed = { ...WELCOME, input_schema: { ...WELCOME.input_schema, additionalProperties: false } };
    expect((await deploy(dev, { name: "closed", url: echoUrl, mcp: closed })).status).toBe(201);
    expectError(
      await invoke("closed", { user_id: "x", is_admin: true }),
      400,
      "is_admin: not a declared property (additionalProperties is false)",
    );
    expect((await invoke("closed", { user_id: "x" })).body.body).toEqual({ user_id: "x" });
  });

  it("takes {body?, query?} for a function without a schema", async () => {
    const { dev, invoke } = await setupInvoke();
    await deploy(dev, { name: "raw", url: `${echoUrl}/raw` });
    const res = await invoke("raw", { body: [1, "two"], query: { q: "a b", n: 3 } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ path: "/raw", query: { q: "a b", n: "3" }, body: [1, "two"] });
    const empty = await invoke("raw", {});
    expect(empty.body).toMatchObject({ method: "POST", body: null });
    expectError(await invoke("raw", { user_id: "x" }), 400);
    expectError(await invoke("raw", { query: { nested: { no: 1 } } }), 400, "query.nested");
  });

  it("returns the upstream status, wraps non-JSON bodies, and maps an unreachable function to 502", async () => {
    const { dev, invoke } = await setupInvoke();
    await deploy(dev, { name: "broken", url: `${echoUrl}/status/500` });
    const broken = await invoke("broken", {});
    expect(broken.status).toBe(500);
    expect(broken.body).toEqual({ body: "upstream failure" });

    await deploy(dev, { name: "down", url: "http://127.0.0.1:1/nothing" });
    const down = await invoke("down", {});
    expectError(down, 502);
    expect(down.body.error.code).toBe("function_unreachable");
  });

  it("meters successful invocations only", async () => {
    const { dev, invoke } = await setupInvoke();
    await deploy(dev, { name: "ok", url: echoUrl });
    await deploy(dev, { name: "broken", url: `${echoUrl}/status/500` });
    expect((await usage(dev)).function_invocations).toBe(0);
    await invoke("ok", {});
    await invoke("ok", {});
    await invoke("broken", {});
    await invoke("ok", { nope: 1 });
    // Metering is batched per isolate and written after the responses (src/usage/metering.ts).
    await vi.waitFor(async () => expect((await usage(dev)).function_invocations).toBe(2));
    expect((await usage(dev)).agent_tool_calls).toBe(0);
  });

  it("refuses the developer scope, unknown functions and other projects' sessions", async () => {
    const { dev, invoke } = await setupInvoke();
    await deploy(dev, { name: "f", url: echoUrl });
    const asDeveloper = await apiJson(`/v1/projects/${dev.projectId}/functions/f/invoke`, {
      token: dev.token,
      json: {},
    });
    expectError(asDeveloper, 403);
    expectError(await invoke("ghost", {}), 404, "ghost");
    expectError(await apiJson(`/v1/projects/${dev.projectId}/functions/f/invoke`, { json: {} }), 401);

    const other = await signupDeveloper();
    const stranger = await signupUser(other.projectId, other.clientKey);
    const res = await apiJson(`/v1/projects/${dev.projectId}/functions/f/invoke`, {
      headers: endUserHeaders(other.clientKey, stranger.sessionToken),
      json: {},
    });
    expectError(res, 401);
  });
});

describe("invokeFunction (the execution path the app-MCP tool shares)", () => {
  async function principalFor() {
    const { dev, user } = await setupInvoke();
    const principal: Principal = {
      scope: "end_user",
      project: { id: dev.projectId, name: "p", developerId: dev.developerId, metaRev: 1 },
      user: { id: user.userId, email: user.email },
      clientKeyId: "key-1",
    };
    await deploy(dev, { name: "f", url: echoUrl, mcp: WELCOME });
    return { dev, principal, fn: await loadFunction(testDb(), dev.projectId, "f") };
  }

  it("answers 429 when the rate limiter refuses, keyed by client key and user, without calling upstream", async () => {
    const { principal, fn } = await principalFor();
    const keys: string[] = [];
    const limiter = {
      limit: async ({ key }: { key: string }) => {
        keys.push(key);
        return { success: false };
      },
    } as unknown as RateLimit;
    const meter = new UsageMeter();
    const error = await invokeFunction(
      {
        policy: "dev",
        limit: rateLimiter({ RATE_LIMITER: limiter }),
        meter: meter.add.bind(meter),
        signing: { secret: "amba_fsig_test", previous: null },
      },
      principal,
      fn,
      {
        user_id: "x",
      },
    ).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).status).toBe(429);
    expect(keys).toEqual([`fn:key-1:${principal.scope === "end_user" ? principal.user.id : ""}`]);
    expect(meter.pending()).toEqual([]);
  });

  it("runs without a rate limit and returns status, body and request id", async () => {
    const { dev, principal, fn } = await principalFor();
    const meter = new UsageMeter();
    const result = await invokeFunction(
      {
        policy: "dev",
        limit: unlimited,
        meter: meter.add.bind(meter),
        signing: { secret: "amba_fsig_test", previous: null },
      },
      principal,
      fn,
      { user_id: "x" },
      { requestId: "req-42" },
    );
    expect(result.status).toBe(200);
    expect(result.requestId).toBe("req-42");
    expect((result.body as { headers: Record<string, string> }).headers["x-amba-request-id"]).toBe("req-42");
    await meter.flush(testDb());
    expect((await usage(dev)).function_invocations).toBe(1);
  });

  it("uses the configured RATE_LIMITER binding when present", async () => {
    const { principal, fn } = await principalFor();
    const result = await invokeFunction(
      {
        policy: "dev",
        limit: rateLimiter(env as unknown as Env),
        meter: unmetered,
        signing: { secret: "amba_fsig_test", previous: null },
      },
      principal,
      fn,
      { user_id: "x" },
    );
    expect(result.status).toBe(200);
  });
});
