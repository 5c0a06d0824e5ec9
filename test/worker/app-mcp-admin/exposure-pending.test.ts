/**
 * The exposure allowlist is a list of names (seed 004: "a collection or function only becomes a
 * tool after you opt it in", example body `{"collections": ["recipes"], "functions":
 * ["send_welcome_email"]}`): a valid name that does not exist yet is kept and reported under
 * `pending`, is no tool until a collection / function of that name exists, and becomes one on the
 * next `tools/list` once it does (official MCP SDK client). Invalid names stay a 400 that changes
 * nothing. REST, the platform MCP tool and the console page alike.
 */
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { sql } from "drizzle-orm";
import { describe, expect, inject, it } from "vitest";
import { WELCOME_EMAIL_MCP } from "../../fixtures.ts";
import { connectClient, resultJson } from "../app-mcp/mcp-client.ts";
import {
  api,
  apiJson,
  endUserHeaders,
  expectError,
  signupDeveloper,
  signupUser,
  type TestDeveloper,
  testDb,
} from "../helpers.ts";

const echoUrl = inject("echoUrl");

/** Seed 004's example body, verbatim. */
const SEED_BODY = { collections: ["recipes"], functions: ["send_welcome_email"] };

async function metaRev(projectId: string): Promise<number> {
  const { rows } = await testDb().execute(sql`select meta_rev from projects where id = ${projectId}::uuid`);
  return Number((rows[0] as { meta_rev: string }).meta_rev);
}

const admin = (dev: TestDeveloper, path: string) => `/v1/admin/projects/${dev.projectId}${path}`;
const getExposure = (dev: TestDeveloper) => apiJson(admin(dev, "/app-mcp/exposure"), { token: dev.token });
const putExposure = (dev: TestDeveloper, json: unknown) =>
  apiJson(admin(dev, "/app-mcp/exposure"), { token: dev.token, method: "PUT", json });
const appUrl = (dev: TestDeveloper) => `http://local/app/${dev.projectId}/mcp`;

async function createRecipes(dev: TestDeveloper, name = "recipes") {
  const res = await apiJson(admin(dev, "/collections"), {
    token: dev.token,
    json: { name, columns: [{ name: "title", type: "text" }] },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
}

async function deploy(dev: TestDeveloper, name = "send_welcome_email") {
  const res = await apiJson(admin(dev, "/functions/deploy"), {
    token: dev.token,
    json: { name, url: echoUrl, mcp: WELCOME_EMAIL_MCP },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
}

describe("exposure of names that do not exist yet", () => {
  it("accepts seed 004's example body verbatim on a fresh project and reports both names as pending", async () => {
    const dev = await signupDeveloper();
    const rev = await metaRev(dev.projectId);
    const res = await putExposure(dev, SEED_BODY);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({
      collections: ["recipes"],
      functions: ["send_welcome_email"],
      pending: { collections: ["recipes"], functions: ["send_welcome_email"] },
    });
    expect((await getExposure(dev)).body).toEqual(res.body);
    expect(await metaRev(dev.projectId)).toBe(rev + 1);

    // Existing and pending names mixed: only the missing ones are pending, in the order sent.
    await createRecipes(dev, "notes");
    const mixed = await putExposure(dev, { collections: ["zeta", "notes", "alpha"] });
    expect(mixed.body).toEqual({
      collections: ["zeta", "notes", "alpha"],
      functions: ["send_welcome_email"],
      pending: { collections: ["zeta", "alpha"], functions: ["send_welcome_email"] },
    });
    // Nothing pending: the response is exactly the allowlist (no `pending` field).
    const plain = await putExposure(dev, { collections: ["notes"], functions: [] });
    expect(plain.body).toEqual({ collections: ["notes"], functions: [] });
    expect((await getExposure(dev)).body).toEqual(plain.body);
  });

  it("keeps a pending name out of every tool surface, then makes it a tool on the next tools/list once it exists", async () => {
    const dev = await signupDeveloper();
    const user = await signupUser(dev.projectId, dev.clientKey);
    expect((await putExposure(dev, SEED_BODY)).status).toBe(200);

    // Connected before anything exists: the same clients see the tools appear (cache keyed by meta_rev).
    const asDev = await connectClient(appUrl(dev), { authorization: `Bearer ${dev.token}` });
    const asUser = await connectClient(appUrl(dev), endUserHeaders(dev.clientKey, user.sessionToken));
    const names = async (client: typeof asDev) => (await client.listTools()).tools.map((t) => t.name);

    const before = await names(asDev);
    expect(before).toHaveLength(2);
    const prefix = before.find((n) => n.endsWith("_whoami"))!.slice(0, -"_whoami".length);
    expect(before).toEqual([`${prefix}_list_collections`, `${prefix}_whoami`]);
    expect(await names(asUser)).toEqual([`${prefix}_list_collections`, `${prefix}_whoami`]);
    const index = await asDev.callTool({ name: `${prefix}_list_collections`, arguments: {} });
    expect(index.isError ?? false).toBe(false);
    expect(resultJson(index)).toMatchObject({ collections: [], functions: [] });
    await expect(asDev.callTool({ name: "recipes_list", arguments: {} })).rejects.toSatisfy(
      (err: unknown) => err instanceof McpError && err.code === -32602,
    );
    await expect(
      asUser.callTool({ name: `${prefix}_fn_send_welcome_email`, arguments: { user_id: "u" } }),
    ).rejects.toSatisfy((err: unknown) => err instanceof McpError && err.code === -32602);
    // REST data routes know nothing of a collection that does not exist (404, not a 500).
    expectError(
      await apiJson(`/v1/projects/${dev.projectId}/collections/recipes/rows`, {
        apiKey: dev.clientKey,
        token: user.sessionToken,
      }),
      404,
    );

    await createRecipes(dev);
    expect(await names(asDev)).toContain("recipes_list");
    expect(await names(asUser)).toContain("recipes_insert");
    const indexed = resultJson(await asDev.callTool({ name: `${prefix}_list_collections`, arguments: {} }));
    expect(indexed.collections.map((c: { name: string }) => c.name)).toEqual(["recipes"]);
    expect((await getExposure(dev)).body).toEqual({
      ...SEED_BODY,
      pending: { collections: [], functions: ["send_welcome_email"] },
    });
    const inserted = await asUser.callTool({ name: "recipes_insert", arguments: { title: "Cake" } });
    expect(inserted.isError ?? false, JSON.stringify(inserted)).toBe(false);

    await deploy(dev);
    expect(await names(asUser)).toContain(`${prefix}_fn_send_welcome_email`);
    const called = await asUser.callTool({
      name: `${prefix}_fn_send_welcome_email`,
      arguments: { user_id: user.userId },
    });
    expect(called.isError ?? false, JSON.stringify(called)).toBe(false);
    expect((await getExposure(dev)).body).toEqual(SEED_BODY);
    await asDev.close();
    await asUser.close();
  });

  it("takes a name off the allowlist when its collection or function is deleted; a namesake created later starts hidden", async () => {
    const dev = await signupDeveloper();
    expect((await putExposure(dev, SEED_BODY)).status).toBe(200);
    await createRecipes(dev);
    await deploy(dev);
    expect((await getExposure(dev)).body).toEqual(SEED_BODY);

    expect(
      (await apiJson(admin(dev, "/collections/recipes"), { token: dev.token, method: "DELETE" })).status,
    ).toBe(200);
    expect(
      (await apiJson(admin(dev, "/functions/send_welcome_email"), { token: dev.token, method: "DELETE" }))
        .status,
    ).toBe(200);
    expect((await getExposure(dev)).body).toEqual({ collections: [], functions: [] });

    await createRecipes(dev);
    const client = await connectClient(appUrl(dev), { authorization: `Bearer ${dev.token}` });
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).not.toContain("recipes_list");
    await client.close();
  });

  it("keeps another project's names pending: they never reach this project's tools", async () => {
    const dev = await signupDeveloper();
    const other = await signupDeveloper();
    await createRecipes(other, "theirs");
    const res = await putExposure(dev, { collections: ["theirs"] });
    expect(res.body).toEqual({
      collections: ["theirs"],
      functions: [],
      pending: { collections: ["theirs"], functions: [] },
    });
  });

  it("accepts the longest valid names", async () => {
    const dev = await signupDeveloper();
    const collection = `c${"x".repeat(50)}`; // 51: `<name>_find_nearest` fits MCP's 64
    const fn = `f${"y".repeat(39)}`; // 40
    const res = await putExposure(dev, { collections: [collection], functions: [fn] });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.pending).toEqual({ collections: [collection], functions: [fn] });
  });

  const tooMany = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);
  it.each([
    ["an uppercase collection name", { collections: ["Recipes"] }, "collections"],
    ["a hyphenated collection name", { collections: ["my-recipes"] }, "collections"],
    ["an empty name", { collections: [""] }, "collections"],
    ["a name starting with a digit", { functions: ["1fn"] }, "functions"],
    ["a 52-character collection name", { collections: [`c${"x".repeat(51)}`] }, "at most 51"],
    ["a 41-character function name", { functions: [`f${"y".repeat(40)}`] }, "at most 40"],
    ["a reserved word", { collections: ["select"] }, "reserved"],
    ["a pg_ name", { collections: ["pg_stats"] }, "pg_"],
    ["a non-string name", { collections: [42] }, "collections"],
    ["1001 collections", { collections: tooMany(1001, "c") }, "at most 1000"],
    ["101 functions", { functions: tooMany(101, "f") }, "at most 100"],
  ])("refuses %s with a 400 and changes nothing", async (_label, body, message) => {
    const dev = await signupDeveloper();
    expect((await putExposure(dev, SEED_BODY)).status).toBe(200);
    const stored = (await getExposure(dev)).body;
    const rev = await metaRev(dev.projectId);
    // A valid other kind in the same body is not applied either.
    const res = await putExposure(dev, { collections: ["other"], ...body });
    expectError(res, 400, message);
    expect(res.body.error.code).toBe("invalid_input");
    expect((await getExposure(dev)).body).toEqual(stored);
    expect(await metaRev(dev.projectId)).toBe(rev);
  });

  it("answers the same through amba_app_mcp_set_exposure / amba_app_mcp_get_exposure", async () => {
    const dev = await signupDeveloper();
    const client = await connectClient("http://local/mcp", { authorization: `Bearer ${dev.token}` });
    // The seed's literal call: no project_id (the developer has one project).
    const set = await client.callTool({ name: "amba_app_mcp_set_exposure", arguments: SEED_BODY });
    expect(set.isError ?? false, JSON.stringify(set)).toBe(false);
    expect(resultJson(set)).toEqual({
      ...SEED_BODY,
      pending: { collections: ["recipes"], functions: ["send_welcome_email"] },
    });
    const got = await client.callTool({ name: "amba_app_mcp_get_exposure", arguments: {} });
    expect(resultJson(got)).toEqual(resultJson(set));
    expect(resultJson(got)).toEqual((await getExposure(dev)).body);

    const bad = await client.callTool({
      name: "amba_app_mcp_set_exposure",
      arguments: { functions: ["Bad"] },
    });
    expect(bad.isError).toBe(true);
    expect(resultJson(bad).error.code).toBe("invalid_input");
    await client.close();
  });

  it("documents `pending` in the OpenAPI Exposure schema", async () => {
    const { body } = await apiJson("/openapi.json");
    const exposure = body.components.schemas.Exposure;
    expect(exposure.required).toEqual(["collections", "functions"]);
    expect(exposure.properties.pending).toMatchObject({
      type: "object",
      properties: { collections: { type: "array" }, functions: { type: "array" } },
    });
  });
});

describe("console: pending exposure", () => {
  it("shows pending names checked and marked as not created yet; saving the form as shown keeps them", async () => {
    const dev = await signupDeveloper();
    await createRecipes(dev, "notes");
    expect(
      (await putExposure(dev, { collections: ["notes", "recipes"], functions: ["send_welcome_email"] }))
        .status,
    ).toBe(200);
    const login = await api("/console/login", {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token: dev.token }).toString(),
    });
    expect(login.status).toBe(303);
    const cookie = (login.headers.get("set-cookie") ?? "").split(";")[0] as string;
    const projectPath = `/console/projects/${dev.projectId}`;
    const page = await (await api(projectPath, { headers: { cookie } })).text();
    const section = /<section id="exposure">[\s\S]*?<\/section>/.exec(page)?.[0] ?? "";
    expect(section).toMatch(/<input type="checkbox" name="collections" value="notes" checked>/);
    expect(section).toMatch(/<input type="checkbox" name="collections" value="recipes" checked>[^<]*recipes/);
    expect(section).toMatch(
      /<input type="checkbox" name="functions" value="send_welcome_email" checked>[^<]*send_welcome_email/,
    );
    expect(section).toMatch(/recipes[\s\S]{0,80}not created yet/);
    expect(section).toMatch(/send_welcome_email[\s\S]{0,80}not deployed yet/);

    const csrf = /name="csrf" value="([^"]+)"/.exec(page)?.[1] as string;
    const form = new URLSearchParams({ csrf });
    for (const [, kind, name] of section.matchAll(/name="(collections|functions)" value="([^"]+)" checked/g))
      form.append(kind as string, name as string);
    const saved = await api(`${projectPath}/exposure`, {
      method: "POST",
      redirect: "manual",
      headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      body: form.toString(),
    });
    expect(saved.status).toBe(303);
    expect((await getExposure(dev)).body).toEqual({
      collections: ["notes", "recipes"],
      functions: ["send_welcome_email"],
      pending: { collections: ["recipes"], functions: ["send_welcome_email"] },
    });
  });
});
