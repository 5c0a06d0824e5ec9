import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, inject, it } from "vitest";
import { billingPeriod, UsageMeter } from "../../../src/usage/metering.ts";
import { createApp } from "../../../src/worker/app.ts";
import type { Env } from "../../../src/worker/env.ts";
import { apiJson, expectError, signupDeveloper, type TestDeveloper, testDb } from "../helpers.ts";

const echoUrl = inject("echoUrl");

async function metaRev(projectId: string): Promise<number> {
  const { rows } = await testDb().execute(sql`select meta_rev from projects where id = ${projectId}::uuid`);
  return Number((rows[0] as { meta_rev: string }).meta_rev);
}

/** A collection's metadata row (exposure only looks at the name). */
async function addCollection(projectId: string, name: string) {
  await testDb().execute(
    sql`insert into collections (project_id, name, access) values (${projectId}::uuid, ${name}, '{"read":"owner","write":"owner"}'::jsonb)`,
  );
}

async function deployFunction(dev: TestDeveloper, name: string) {
  const res = await apiJson(`/v1/admin/projects/${dev.projectId}/functions/deploy`, {
    token: dev.token,
    json: { name, url: echoUrl },
  });
  expect(res.status).toBe(201);
}

describe("/v1/admin/projects/:id/app-mcp/exposure", () => {
  const path = (dev: TestDeveloper) => `/v1/admin/projects/${dev.projectId}/app-mcp/exposure`;
  const put = (dev: TestDeveloper, json: unknown) =>
    apiJson(path(dev), { token: dev.token, method: "PUT", json });

  it("hides everything by default", async () => {
    const dev = await signupDeveloper();
    const res = await apiJson(path(dev), { token: dev.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ collections: [], functions: [] });
  });

  it("replaces the full set per kind, leaves an omitted kind alone, and bumps meta_rev", async () => {
    const dev = await signupDeveloper();
    await addCollection(dev.projectId, "recipes");
    await addCollection(dev.projectId, "audit_log");
    await deployFunction(dev, "send_welcome_email");
    await deployFunction(dev, "ping");

    let rev = await metaRev(dev.projectId);
    const first = await put(dev, { collections: ["recipes"], functions: ["send_welcome_email"] });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ collections: ["recipes"], functions: ["send_welcome_email"] });
    expect(await metaRev(dev.projectId)).toBe(rev + 1);
    expect((await apiJson(path(dev), { token: dev.token })).body).toEqual(first.body);

    rev = await metaRev(dev.projectId);
    const collectionsOnly = await put(dev, { collections: ["audit_log", "recipes", "audit_log"] });
    expect(collectionsOnly.body).toEqual({
      collections: ["audit_log", "recipes"],
      functions: ["send_welcome_email"],
    });
    expect(await metaRev(dev.projectId)).toBe(rev + 1);

    const functionsOnly = await put(dev, { functions: ["ping"] });
    expect(functionsOnly.body).toEqual({ collections: ["audit_log", "recipes"], functions: ["ping"] });

    const hidden = await put(dev, { collections: [] });
    expect(hidden.body).toEqual({ collections: [], functions: ["ping"] });
    const none = await put(dev, { functions: [] });
    expect(none.body).toEqual({ collections: [], functions: [] });

    // An empty body changes nothing.
    rev = await metaRev(dev.projectId);
    expect((await put(dev, {})).body).toEqual({ collections: [], functions: [] });
    expect(await metaRev(dev.projectId)).toBe(rev);
  });

  it("keeps names that do not exist yet and lists them as pending (decision 6: an allowlist of names)", async () => {
    const dev = await signupDeveloper();
    await addCollection(dev.projectId, "recipes");
    await deployFunction(dev, "ping");
    await put(dev, { collections: ["recipes"] });
    const rev = await metaRev(dev.projectId);

    const res = await put(dev, { collections: ["recipes", "nope", "missing"], functions: ["ping", "ghost"] });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      collections: ["recipes", "nope", "missing"],
      functions: ["ping", "ghost"],
      pending: { collections: ["nope", "missing"], functions: ["ghost"] },
    });
    expect((await apiJson(path(dev), { token: dev.token })).body).toEqual(res.body);
    expect(await metaRev(dev.projectId)).toBe(rev + 1);
  });

  it("refuses invalid names with a 400 naming them, and changes nothing", async () => {
    const dev = await signupDeveloper();
    await put(dev, { collections: ["recipes"] });
    const rev = await metaRev(dev.projectId);
    expectError(
      await put(dev, { collections: ["recipes", "Bad-Name"] }),
      400,
      "collections.1: must be a lowercase",
    );
    const res = await put(dev, { collections: ["recipes", "select"], functions: ["ok_fn", "f".repeat(41)] });
    expectError(res, 400, 'collections.1: "select" is a reserved word');
    expect(res.body.error.message).toContain("functions.1: function name must be at most 40 characters");
    expect((await apiJson(path(dev), { token: dev.token })).body).toEqual({
      collections: ["recipes"],
      functions: [],
      pending: { collections: ["recipes"], functions: [] },
    });
    expect(await metaRev(dev.projectId)).toBe(rev);
  });

  it("accepts an existing collection whose name a later rule would refuse (only missing names are checked)", async () => {
    const dev = await signupDeveloper();
    await addCollection(dev.projectId, "select"); // a reserved word: refused for a new collection
    const res = await put(dev, { collections: ["select"] });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ collections: ["select"], functions: [] });
    expectError(
      await put(dev, { collections: ["select", "from"] }),
      400,
      'collections.1: "from" is a reserved word',
    );
  });

  it("does not see another project's collections or functions", async () => {
    const dev = await signupDeveloper();
    const other = await signupDeveloper();
    await addCollection(other.projectId, "theirs");
    await deployFunction(other, "their_fn");
    const res = await put(dev, { collections: ["theirs"], functions: ["their_fn"] });
    expect(res.body.pending).toEqual({ collections: ["theirs"], functions: ["their_fn"] });
  });

  it("rejects malformed bodies and foreign developers", async () => {
    const dev = await signupDeveloper();
    const other = await signupDeveloper();
    expectError(await put(dev, { collections: "recipes" }), 400, "collections");
    expectError(await put(dev, { tools: [] }), 400);
    expectError(
      await apiJson(path(dev), { token: other.token, method: "PUT", json: { collections: [] } }),
      404,
    );
    expectError(await apiJson(path(dev), { method: "PUT", json: { collections: [] } }), 401);
  });
});

describe("/v1/admin/projects/:id/app-mcp/config", () => {
  const path = (dev: TestDeveloper) => `/v1/admin/projects/${dev.projectId}/app-mcp/config`;
  const patch = (dev: TestDeveloper, json: unknown) =>
    apiJson(path(dev), { token: dev.token, method: "PATCH", json });
  const slugOf = () => `app-${crypto.randomUUID().slice(0, 8)}`;

  it("defaults to enabled, all, no slug, with the path-addressed connection url", async () => {
    const dev = await signupDeveloper();
    const res = await apiJson(path(dev), { token: dev.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      enabled: true,
      auth_mode: "all",
      slug: null,
      allowed_origins: [],
      rate_limit_per_minute: 6000,
      connection: { url: `https://mcp.amba.dev/app/${dev.projectId}/mcp`, hostname_url: null },
    });
  });

  it("patches any subset, reserves a slug's hostname, and bumps meta_rev", async () => {
    const dev = await signupDeveloper();
    const slug = slugOf();
    const rev = await metaRev(dev.projectId);
    const res = await patch(dev, { enabled: false, auth_mode: "client_only", slug });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      enabled: false,
      auth_mode: "client_only",
      slug,
      allowed_origins: [],
      rate_limit_per_minute: 6000,
      connection: {
        url: `https://mcp.amba.dev/app/${dev.projectId}/mcp`,
        hostname_url: `https://${slug}.mcp.amba.host/mcp`,
      },
    });
    expect(await metaRev(dev.projectId)).toBe(rev + 1);

    const partial = await patch(dev, { auth_mode: "developer_only" });
    expect(partial.body).toMatchObject({ enabled: false, auth_mode: "developer_only", slug });
    expect((await apiJson(path(dev), { token: dev.token })).body).toEqual(partial.body);

    // Setting one's own slug again is not a conflict.
    expect((await patch(dev, { slug })).status).toBe(200);
  });

  it("keeps slugs globally unique; null releases one (reserved for 30 days: slug-cooldown.test.ts)", async () => {
    const first = await signupDeveloper();
    const second = await signupDeveloper();
    const slug = slugOf();
    expect((await patch(first, { slug })).status).toBe(200);
    const rev = await metaRev(second.projectId);
    expectError(await patch(second, { slug }), 409, slug);
    expect(await metaRev(second.projectId)).toBe(rev);

    const released = await patch(first, { slug: null });
    expect(released.body).toMatchObject({ slug: null, connection: { hostname_url: null } });
    expectError(await patch(second, { slug }), 409, "reserved until");
  });

  it.each([
    ["uppercase", { slug: "MyApp" }, "slug"],
    ["an underscore", { slug: "my_app" }, "slug"],
    ["a leading hyphen", { slug: "-app" }, "slug"],
    ["a trailing hyphen", { slug: "app-" }, "slug"],
    ["an empty slug", { slug: "" }, "slug"],
    ["64 characters", { slug: "a".repeat(64) }, "slug"],
    ["a dot", { slug: "a.b" }, "slug"],
    ["an unknown auth mode", { auth_mode: "everyone" }, "auth_mode"],
    ["a non-boolean enabled", { enabled: "yes" }, "enabled"],
    ["an unknown key", { hostname: "x" }, "hostname"],
  ])("rejects %s with a 400", async (_label, body, field) => {
    const dev = await signupDeveloper();
    expectError(await patch(dev, body), 400, field);
  });

  it("accepts a 63-character and a one-character label", async () => {
    const dev = await signupDeveloper();
    const long = `${crypto.randomUUID().replaceAll("-", "")}${"z".repeat(31)}`;
    expect(long).toHaveLength(63);
    expect((await patch(dev, { slug: long })).status).toBe(200);
  });

  it("uses the request origin when PUBLIC_BASE_URL is empty", async () => {
    const dev = await signupDeveloper();
    const app = createApp();
    const res = await app.fetch(
      new Request(`http://localhost:8787${path(dev)}`, { headers: { authorization: `Bearer ${dev.token}` } }),
      { ...(env as unknown as Env), PUBLIC_BASE_URL: "" },
    );
    const body = (await res.json()) as { connection: { url: string } };
    expect(body.connection.url).toBe(`http://localhost:8787/app/${dev.projectId}/mcp`);
  });
});

describe("/v1/admin/projects/:id/billing", () => {
  const path = (dev: TestDeveloper, query = "") => `/v1/admin/projects/${dev.projectId}/billing${query}`;

  it("reports every known metric for the current UTC month, 0 when none", async () => {
    const dev = await signupDeveloper();
    const res = await apiJson(path(dev), { token: dev.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      period: new Date().toISOString().slice(0, 7),
      usage: { agent_tool_calls: 0, function_invocations: 0, events: 0, mau: 0, storage_bytes: 0 },
    });
  });

  it("adds up recorded usage per project and period", async () => {
    const dev = await signupDeveloper();
    const other = await signupDeveloper();
    const db = testDb();
    // Three flushes (of three isolates' meters) at once, on random shards.
    const meters = [new UsageMeter(), new UsageMeter(), new UsageMeter()];
    meters[0]?.add(dev.projectId, "agent_tool_calls");
    meters[0]?.add(dev.projectId, "agent_tool_calls", 11);
    for (const meter of meters) meter.add(dev.projectId, "function_invocations");
    meters[1]?.add(other.projectId, "agent_tool_calls", 5);
    await Promise.all(meters.map((meter) => meter.flush(db)));

    const res = await apiJson(path(dev), { token: dev.token });
    expect(res.body.usage).toMatchObject({ agent_tool_calls: 12, function_invocations: 3 });
    expect((await apiJson(path(other), { token: other.token })).body.usage.agent_tool_calls).toBe(5);

    const past = await apiJson(path(dev, "?period=2001-01"), { token: dev.token });
    expect(past.body).toEqual({
      period: "2001-01",
      usage: { agent_tool_calls: 0, function_invocations: 0, events: 0, mau: 0 },
    });
    expectError(await apiJson(path(dev, "?period=2001-13"), { token: dev.token }), 400, "period");
    expectError(await apiJson(path(dev), { token: other.token }), 404);
  });

  it("names periods by UTC month", () => {
    expect(billingPeriod(new Date("2026-11-30T23:59:59Z"))).toBe("2026-11");
    expect(billingPeriod(new Date("2026-12-01T00:00:00Z"))).toBe("2026-12");
  });
});
