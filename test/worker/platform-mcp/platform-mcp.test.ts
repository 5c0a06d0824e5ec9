/**
 * The platform MCP (`POST /mcp`) end to end, through the official MCP SDK client: discovery and
 * sign-up without a token, the seed's provision → expose → app MCP round trip, every amba_* tool
 * against its REST route, and the failure modes (bad input, foreign projects, missing or invalid
 * token, unknown tools).
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { PLATFORM_TOOLS, type PlatformToolName } from "../../../src/platform-mcp/tools.ts";
import { connectClient, resultJson } from "../app-mcp/mcp-client.ts";
import { api, apiJson, signupDeveloper, type TestDeveloper, uniqueEmail } from "../helpers.ts";

const MCP_URL = "http://local/mcp";

const ALL_TOOLS = [
  "amba_developer_signup",
  "amba_whoami",
  "amba_tokens_list",
  "amba_tokens_create",
  "amba_tokens_revoke",
  "amba_projects_list",
  "amba_projects_create",
  "amba_client_keys_create",
  "amba_collections_list",
  "amba_collections_create",
  "amba_collections_alter",
  "amba_collections_drop",
  "amba_functions_deploy",
  "amba_functions_list",
  "amba_functions_versions",
  "amba_functions_promote",
  "amba_functions_delete",
  "amba_functions_signing_secret",
  "amba_functions_rotate_signing_secret",
  "amba_app_mcp_get_exposure",
  "amba_app_mcp_set_exposure",
  "amba_app_mcp_get_config",
  "amba_app_mcp_update_config",
  "amba_billing_status",
  "amba_billing_daily",
  "amba_events_list",
  "amba_events_delete",
  "amba_oauth_grants_list",
  "amba_oauth_grants_revoke",
];

const RECIPES = {
  name: "recipes",
  columns: [
    { name: "title", type: "text", required: true, description: "Dish name" },
    { name: "calories", type: "integer" },
  ],
  access: { read: "owner", write: "owner" },
};

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** Call a tool and return `{isError, body}` (body = the parsed text content, = structuredContent). */
// biome-ignore lint/suspicious/noExplicitAny: tests assert the shape
async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<any> {
  const result = await client.callTool({ name, arguments: args });
  const body = resultJson(result);
  if (body !== null && typeof body === "object" && !Array.isArray(body)) {
    expect(result.structuredContent).toEqual(body);
  }
  return { isError: result.isError, body };
}

/** A successful call's body. */
// biome-ignore lint/suspicious/noExplicitAny: tests assert the shape
async function ok(client: Client, name: string, args: Record<string, unknown> = {}): Promise<any> {
  const { isError, body } = await call(client, name, args);
  expect(isError, `${name}: ${JSON.stringify(body)}`).toBe(false);
  return body;
}

/** A failed call's `{code, message}`. */
async function fails(client: Client, name: string, args: Record<string, unknown> = {}) {
  const { isError, body } = await call(client, name, args);
  expect(isError, `${name} should fail: ${JSON.stringify(body)}`).toBe(true);
  expect(body).toEqual({ error: { code: expect.any(String), message: expect.any(String) } });
  return body.error as { code: string; message: string };
}

describe("platform MCP without a token", () => {
  it("lists every tool, typed and annotated, and signs a developer up", async () => {
    const client = await connectClient(MCP_URL, {});
    expect(client.getServerVersion()?.name).toBe("amba-platform-mcp");
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(ALL_TOOLS);
    const create = tools.find((t) => t.name === "amba_collections_create")!;
    // project_id may be left out while the developer has one project (docs/contract-audit.md).
    expect(create.inputSchema.required).toEqual(["name"]);
    expect(Object.keys(create.inputSchema.properties ?? {})).toEqual([
      "project_id",
      "name",
      "columns",
      "access",
    ]);
    expect(create.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false });
    expect(tools.find((t) => t.name === "amba_collections_drop")!.annotations).toMatchObject({
      destructiveHint: true,
    });
    expect(tools.find((t) => t.name === "amba_billing_status")!.annotations).toMatchObject({
      readOnlyHint: true,
    });

    const email = uniqueEmail("mcp-signup");
    const signup = await ok(client, "amba_developer_signup", { email });
    expect(signup).toEqual({
      developer: { id: expect.any(String), email },
      token: expect.any(String),
      project: { id: expect.any(String), name: "My first project" },
      client_key: expect.any(String),
    });
    // The same account as the REST signup: the email is now taken there too.
    const again = await apiJson("/v1/developers/signup", { json: { email } });
    expect(again.status).toBe(409);
    expect(await fails(client, "amba_developer_signup", { email })).toEqual({
      code: again.body.error.code,
      message: again.body.error.message,
    });
    const bad = await apiJson("/v1/developers/signup", { json: { email: "nope" } });
    expect(await fails(client, "amba_developer_signup", { email: "nope" })).toEqual(bad.body.error);

    // Every other tool asks the agent to reconnect with the token.
    for (const name of ALL_TOOLS.filter((n) => n !== "amba_developer_signup")) {
      const error = await fails(client, name, { project_id: signup.project.id });
      expect(error.code).toBe("unauthorized");
      expect(error.message).toMatch(/^unauthorized: .*Authorization: Bearer <developer token>/);
    }
    await client.close();

    const authed = await connectClient(MCP_URL, bearer(signup.token));
    const me = await ok(authed, "amba_whoami");
    expect(me.developer).toEqual(signup.developer);
    expect(me.projects.map((p: { id: string }) => p.id)).toEqual([signup.project.id]);
    await authed.close();
  });

  it("answers HTTP 401 to an invalid token, and 405 to GET", async () => {
    await expect(connectClient(MCP_URL, bearer("amba_dev_not-a-real-token"))).rejects.toSatisfy(
      (err: unknown) =>
        (err as { code?: number }).code === 401 && String(err).includes("invalid developer token"),
    );
    const res = await api("/mcp", {
      method: "POST",
      token: "garbage",
      headers: { accept: "application/json, text/event-stream" },
      json: { jsonrpc: "2.0", id: 1, method: "tools/list" },
    });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toMatch(/^Bearer /);
    expect(await res.json()).toEqual({ error: { code: "unauthorized", message: expect.any(String) } });
    expect((await api("/mcp")).status).toBe(405);
  });
});

describe("platform MCP with a developer token", () => {
  let dev: TestDeveloper;
  let client: Client;
  let admin: string;
  const rest = (path: string, init: Parameters<typeof apiJson>[1] = {}) =>
    apiJson(`${admin}${path}`, { token: dev.token, ...init });

  beforeAll(async () => {
    dev = await signupDeveloper();
    admin = `/v1/admin/projects/${dev.projectId}`;
    client = await connectClient(MCP_URL, bearer(dev.token));
  });
  afterAll(() => client.close());

  it("provisions, exposes and serves a collection on the app MCP (the seed's round trip)", async () => {
    const anonymous = await connectClient(MCP_URL, {});
    const signup = await ok(anonymous, "amba_developer_signup", { email: uniqueEmail("roundtrip") });
    await anonymous.close();
    const platform = await connectClient(MCP_URL, bearer(signup.token));
    const project_id = signup.project.id;
    expect(await ok(platform, "amba_collections_create", { project_id, ...RECIPES })).toEqual(RECIPES);
    expect(await ok(platform, "amba_app_mcp_set_exposure", { project_id, collections: ["recipes"] })).toEqual(
      {
        collections: ["recipes"],
        functions: [],
      },
    );
    const config = await ok(platform, "amba_app_mcp_get_config", { project_id });
    expect(config.connection.url).toMatch(new RegExp(`/app/${project_id}/mcp$`));
    await platform.close();

    const app = await connectClient(`http://local/app/${project_id}/mcp`, bearer(signup.token));
    const row = await ok(app, "recipes_insert", { title: "Birthday Cake", calories: 540 });
    expect(row).toMatchObject({ id: expect.any(String), title: "Birthday Cake", calories: 540 });
    const found = await ok(app, "recipes_find", { where: { title: { ilike: "%cake%" } } });
    expect(found).toEqual({ rows: [row], next_cursor: null });
    await app.close();
  });

  it("manages projects and client keys like the REST routes", async () => {
    const created = await ok(client, "amba_projects_create", { name: "Second app" });
    expect(created).toEqual({
      id: expect.any(String),
      name: "Second app",
      meta_rev: 1,
      created_at: expect.any(String),
    });
    const listed = await ok(client, "amba_projects_list");
    expect(listed).toEqual((await apiJson("/v1/admin/projects", { token: dev.token })).body);
    expect(listed.projects.map((p: { id: string }) => p.id)).toEqual([dev.projectId, created.id]);

    const key = await ok(client, "amba_client_keys_create", { project_id: created.id, name: "web" });
    expect(key).toMatchObject({ name: "web", revoked: false, client_key: expect.any(String) });
    // The key works: an end user signs up to the new project with it.
    const user = await apiJson("/v1/auth/signup", {
      apiKey: key.client_key,
      json: { email: uniqueEmail("enduser"), password: "correct horse battery" },
    });
    expect(user.status).toBe(201);
    const keys = await apiJson(`/v1/admin/projects/${created.id}/client-keys`, { token: dev.token });
    expect(keys.body.client_keys.map((k: { id: string }) => k.id)).toContain(key.id);
  });

  it("creates, lists, alters and drops collections, bumping meta_rev", async () => {
    const project_id = dev.projectId;
    const rev = async () => (await rest("")).body.meta_rev as number;
    const before = await rev();
    await ok(client, "amba_collections_create", { project_id, ...RECIPES });
    expect(await rev()).toBe(before + 1);
    await ok(client, "amba_collections_create", {
      project_id,
      name: "notes",
      columns: [{ name: "body", type: "text" }],
    });

    const listed = await ok(client, "amba_collections_list", { project_id });
    expect(listed).toEqual((await rest("/collections")).body);
    expect(listed.collections.map((c: { name: string }) => c.name).sort()).toEqual(["notes", "recipes"]);

    const altered = await ok(client, "amba_collections_alter", {
      project_id,
      name: "recipes",
      add_columns: [{ name: "servings", type: "integer" }],
      drop_columns: ["calories"],
      access: { read: "public" },
    });
    expect(altered).toEqual({
      name: "recipes",
      columns: [RECIPES.columns[0], { name: "servings", type: "integer" }],
      access: { read: "public", write: "owner" },
    });
    expect(await rev()).toBe(before + 3);

    expect(await ok(client, "amba_collections_drop", { project_id, name: "notes" })).toEqual({
      name: "notes",
      deleted: true,
    });
    expect((await rest("/collections")).body.collections.map((c: { name: string }) => c.name)).toEqual([
      "recipes",
    ]);
    expect(await rev()).toBe(before + 4);
  });

  it("deploys, lists, versions, promotes and deletes functions", async () => {
    const project_id = dev.projectId;
    const mcp = {
      description: "Send the welcome email.",
      input_schema: { type: "object", properties: { user_id: { type: "string" } }, required: ["user_id"] },
    };
    const v1 = await ok(client, "amba_functions_deploy", {
      project_id,
      name: "send_welcome",
      url: "https://example.com/v1",
      mcp,
    });
    expect(v1).toMatchObject({
      name: "send_welcome",
      version: 1,
      url: "https://example.com/v1",
      active: true,
      mcp,
    });
    const v2 = await ok(client, "amba_functions_deploy", {
      project_id,
      name: "send_welcome",
      url: "https://example.com/v2",
    });
    expect(v2).toMatchObject({ version: 2, mcp: null });

    const listed = await ok(client, "amba_functions_list", { project_id });
    expect(listed).toEqual((await rest("/functions")).body);
    expect(listed.functions).toEqual([
      expect.objectContaining({ name: "send_welcome", active_version: 2, versions: 2 }),
    ]);

    const promoted = await ok(client, "amba_functions_promote", {
      project_id,
      name: "send_welcome",
      version: 1,
    });
    expect(promoted).toMatchObject({ version: 1, url: "https://example.com/v1", active: true, mcp });
    const versions = await ok(client, "amba_functions_versions", { project_id, name: "send_welcome" });
    expect(versions).toEqual((await rest("/functions/send_welcome/versions")).body);
    expect(versions.versions.map((v: { active: boolean }) => v.active)).toEqual([true, false]);

    const secret = await ok(client, "amba_functions_signing_secret", { project_id });
    expect(secret).toEqual((await rest("/functions/signing-secret")).body);
    const rotated = await ok(client, "amba_functions_rotate_signing_secret", { project_id });
    expect(rotated.signing_secret).not.toBe(secret.signing_secret);
    expect(rotated).toEqual((await rest("/functions/signing-secret")).body);
    const overlap = await ok(client, "amba_functions_rotate_signing_secret", {
      project_id,
      previous_valid_for_seconds: 3600,
    });
    expect(overlap.previous_expires_at).toEqual(expect.any(String));
    expect(overlap).toEqual((await rest("/functions/signing-secret")).body);

    // Seed 004's metadata without a url: a first deploy makes a function with none yet.
    const deployTool = (await client.listTools()).tools.find((t) => t.name === "amba_functions_deploy");
    expect(deployTool?.inputSchema.required).not.toContain("url");
    const metadataOnly = await ok(client, "amba_functions_deploy", { project_id, name: "later", mcp });
    expect(metadataOnly).toMatchObject({ name: "later", version: 1, url: null, active: true, mcp });

    for (const name of ["send_welcome", "later"])
      expect(await ok(client, "amba_functions_delete", { project_id, name })).toEqual({
        name,
        deleted: true,
      });
    expect((await rest("/functions")).body).toEqual({ functions: [] });
  });

  it("reads and writes the app MCP exposure and config, and billing, exactly as REST does", async () => {
    const project_id = dev.projectId;
    await ok(client, "amba_collections_create", {
      project_id,
      name: "tips",
      columns: [{ name: "text", type: "text" }],
    });
    expect(await ok(client, "amba_app_mcp_get_exposure", { project_id })).toEqual(
      (await rest("/app-mcp/exposure")).body,
    );
    const exposure = await ok(client, "amba_app_mcp_set_exposure", { project_id, collections: ["tips"] });
    expect(exposure).toEqual({ collections: ["tips"], functions: [] });
    expect((await rest("/app-mcp/exposure")).body).toEqual(exposure);

    const slug = `pm-${crypto.randomUUID().slice(0, 8)}`;
    const updated = await ok(client, "amba_app_mcp_update_config", {
      project_id,
      slug,
      auth_mode: "developer_only",
    });
    expect(updated).toEqual({
      enabled: true,
      auth_mode: "developer_only",
      slug,
      allowed_origins: [],
      rate_limit_per_minute: 6000,
      connection: { url: expect.stringMatching(/\/mcp$/), hostname_url: `https://${slug}.mcp.amba.host/mcp` },
    });
    expect(await ok(client, "amba_app_mcp_get_config", { project_id })).toEqual(
      (await rest("/app-mcp/config")).body,
    );
    expect((await rest("/app-mcp/config")).body).toEqual(updated);

    // /mcp on the slug's host is still the app MCP, not the platform MCP.
    const app = await connectClient(`http://${slug}.mcp.amba.host/mcp`, bearer(dev.token));
    expect(app.getServerVersion()?.name).toBe("amba-app-mcp");
    expect((await app.listTools()).tools.map((t) => t.name)).toContain("tips_insert");
    await ok(app, "tips_insert", { text: "Salt the pasta water" });
    await app.close();

    // Metering is batched per isolate and written after the response (src/usage/metering.ts).
    await vi.waitFor(async () =>
      expect((await rest("/billing")).body.usage.agent_tool_calls).toBeGreaterThanOrEqual(1),
    );
    const billing = await ok(client, "amba_billing_status", { project_id });
    expect(billing).toEqual((await rest("/billing")).body);
    const past = await ok(client, "amba_billing_status", { project_id, period: "2020-01" });
    expect(past).toEqual((await rest("/billing?period=2020-01")).body);
    expect(await fails(client, "amba_billing_status", { project_id, period: "2020-13" })).toEqual(
      (await rest("/billing?period=2020-13")).body.error,
    );
    // Per day: the default range (30 days to today) holds this month's calls; a bad range fails alike.
    const daily = await ok(client, "amba_billing_daily", { project_id });
    expect(daily).toEqual((await rest("/billing/daily")).body);
    expect(daily.days).toHaveLength(30);
    expect(daily.days.at(-1).usage.agent_tool_calls).toBeGreaterThanOrEqual(1);
    const range = { from: "2020-01-31", to: "2020-02-01" };
    expect(await ok(client, "amba_billing_daily", { project_id, ...range })).toEqual(
      (await rest(`/billing/daily?from=${range.from}&to=${range.to}`)).body,
    );
    const badRange = await rest("/billing/daily?from=2020-02-02&to=2020-02-01");
    expect(badRange.status).toBe(400);
    expect(
      await fails(client, "amba_billing_daily", { project_id, from: "2020-02-02", to: "2020-02-01" }),
    ).toEqual(badRange.body.error);
  });

  it("fails like the REST routes: bad input, conflicts, other developers' projects", async () => {
    const project_id = dev.projectId;
    const badCollection = { name: "things", columns: [{ name: "x", type: "money" }] };
    const restBad = await rest("/collections", { json: badCollection });
    expect(restBad.status).toBe(400);
    expect(await fails(client, "amba_collections_create", { project_id, ...badCollection })).toEqual(
      restBad.body.error,
    );

    const emptyAlter = await rest("/collections/recipes", { method: "PATCH", json: {} });
    expect(await fails(client, "amba_collections_alter", { project_id, name: "recipes" })).toEqual(
      emptyAlter.body.error,
    );
    const badDeploy = { name: "Bad-Name", url: "ftp://x" };
    expect(await fails(client, "amba_functions_deploy", { project_id, ...badDeploy })).toEqual(
      (await rest("/functions/deploy", { json: badDeploy })).body.error,
    );
    // A name that does not exist yet is kept (pending); one that could never be a collection is not.
    const badExposure = { collections: ["No-Such-Collection"] };
    expect(await fails(client, "amba_app_mcp_set_exposure", { project_id, ...badExposure })).toEqual(
      (await rest("/app-mcp/exposure", { method: "PUT", json: badExposure })).body.error,
    );
    expect(
      await fails(client, "amba_app_mcp_update_config", { project_id, auth_mode: "everyone" }),
    ).toMatchObject({
      code: "invalid_input",
      message: expect.stringContaining("auth_mode"),
    });
    const badOverlap = { previous_valid_for_seconds: 604_801 };
    expect(
      await fails(client, "amba_functions_rotate_signing_secret", { project_id, ...badOverlap }),
    ).toEqual((await rest("/functions/signing-secret/rotate", { json: badOverlap })).body.error);
    expect(await fails(client, "amba_functions_versions", { project_id, name: "nope" })).toEqual(
      (await rest("/functions/nope/versions")).body.error,
    );
    expect(await fails(client, "amba_collections_drop", { project_id, name: "nope" })).toMatchObject({
      code: "not_found",
    });

    // Arguments that address the resource are checked by the tool itself.
    // Left out, project_id means the developer's only project; this one has two.
    expect(await fails(client, "amba_collections_list")).toEqual({
      code: "invalid_input",
      message: expect.stringMatching(/^project_id: is required \(you have 2 projects/),
    });
    expect(await fails(client, "amba_collections_list", { project_id: 42 })).toEqual({
      code: "invalid_input",
      message: "project_id: must be a string",
    });
    expect(await fails(client, "amba_projects_list", { verbose: true })).toMatchObject({
      code: "invalid_input",
      message: expect.stringContaining("verbose: unknown argument"),
    });

    // A taken slug is a conflict, as over REST.
    const other = await signupDeveloper();
    const slug = `pm-taken-${crypto.randomUUID().slice(0, 8)}`;
    await ok(client, "amba_app_mcp_update_config", { project_id, slug });
    const otherClient = await connectClient(MCP_URL, bearer(other.token));
    expect(
      await fails(otherClient, "amba_app_mcp_update_config", { project_id: other.projectId, slug }),
    ).toMatchObject({
      code: "conflict",
    });

    // Another developer's project (and a malformed id) is "not found", never touched.
    const foreign = await apiJson(`${admin}/collections`, { token: other.token });
    expect(foreign.status).toBe(404);
    for (const [name, args] of [
      ["amba_collections_list", {}],
      ["amba_collections_create", RECIPES],
      ["amba_collections_drop", { name: "recipes" }],
      ["amba_app_mcp_set_exposure", { collections: [] }],
      ["amba_app_mcp_get_config", {}],
      ["amba_billing_status", {}],
      ["amba_billing_daily", {}],
      ["amba_events_list", {}],
      ["amba_events_delete", { before: "2999-01-01T00:00:00Z" }],
      ["amba_client_keys_create", {}],
    ] as const) {
      expect(await fails(otherClient, name, { project_id, ...args })).toEqual(foreign.body.error);
    }
    expect(await fails(otherClient, "amba_collections_list", { project_id: "not-a-uuid" })).toEqual(
      foreign.body.error,
    );
    expect((await rest("/collections")).body.collections.map((c: { name: string }) => c.name)).toContain(
      "recipes",
    );
    expect((await rest("/app-mcp/exposure")).body.collections).toEqual(["tips"]);
    await otherClient.close();

    await expect(client.callTool({ name: "amba_nope", arguments: {} })).rejects.toSatisfy(
      (err: unknown) => err instanceof McpError && err.code === -32602,
    );
  });
});

describe("platform MCP: every tool names its bad argument", () => {
  let dev: TestDeveloper;
  let client: Client;

  beforeAll(async () => {
    dev = await signupDeveloper();
    client = await connectClient(MCP_URL, bearer(dev.token));
  });
  afterAll(() => client.close());

  /** Valid values of a tool's resource arguments (the project exists; names need not). */
  const validParams = (name: PlatformToolName): Record<string, unknown> => {
    const values: Record<string, unknown> = {
      project_id: dev.projectId,
      name: "nothing_here",
      grant_id: "u_0:nothing_here",
      token_id: crypto.randomUUID(),
      // Before any event: deletes nothing.
      before: "2000-01-01T00:00:00Z",
    };
    return Object.fromEntries(
      Object.keys(PLATFORM_TOOLS[name].params)
        .filter((key) => key in values)
        .map((key) => [key, values[key]]),
    );
  };

  it.each(ALL_TOOLS)("%s answers invalid_input naming an unknown argument", async (name) => {
    const error = await fails(client, name, { ...validParams(name as PlatformToolName), bogus_argument: 1 });
    expect(error.code).toBe("invalid_input");
    expect(error.message).toContain("bogus_argument");
  });

  const withParams = ALL_TOOLS.filter(
    (name) => Object.keys(PLATFORM_TOOLS[name as PlatformToolName].params).length,
  );

  it.each(withParams)("%s answers invalid_input naming a mistyped resource argument", async (name) => {
    const params = validParams(name as PlatformToolName);
    for (const key of Object.keys(PLATFORM_TOOLS[name as PlatformToolName].params)) {
      // Every argument is a string but a page size.
      const [value, expected] = key === "limit" ? ["3", "must be a number"] : [42, "must be a string"];
      const error = await fails(client, name, { ...params, [key]: value });
      expect(error).toEqual({ code: "invalid_input", message: `${key}: ${expected}` });
    }
  });

  it("covers every tool of the catalogue", () => {
    expect(Object.keys(PLATFORM_TOOLS)).toEqual(ALL_TOOLS);
  });
});
