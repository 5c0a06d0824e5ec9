/**
 * Seed 004's function metadata deployed as written: `{"name", "mcp"}` with no `url`, on a fresh
 * project. The function and its typed `<app>_fn_<name>` tool exist at once; until a deploy gives it a
 * URL, invoking it (REST or the tool) is a 409 `function_not_deployed` that calls nothing upstream
 * and is metered as nothing. A later deploy with a `url` makes it runnable.
 */
import { describe, expect, inject, it, vi } from "vitest";
import type { Principal } from "../../../src/credentials/principal.ts";
import { AppError } from "../../../src/errors.ts";
import { invokeFunction, loadFunction } from "../../../src/functions/service.ts";
import { UsageMeter } from "../../../src/usage/metering.ts";
import { connectClient, resultJson } from "../app-mcp/mcp-client.ts";
import {
  apiJson,
  billingUsage,
  endUserHeaders,
  expectError,
  signupDeveloper,
  signupUser,
  type TestDeveloper,
  testDb,
} from "../helpers.ts";

const echoUrl = inject("echoUrl");

/** Seed 004's "metadata for `amba functions deploy` / POST .../functions/deploy", as JSON (no trailing commas). */
const SEED_METADATA = `{
  "name": "send_welcome_email",
  "mcp": {
    "description": "Send the branded welcome email to a user.",
    "input_schema": {
      "type": "object",
      "properties": {
        "user_id": { "type": "string", "description": "The recipient app user id" },
        "template": { "type": "string", "enum": ["short", "full"] }
      },
      "required": ["user_id"]
    }
  }
}`;

const PREFIX = "my_first_project";
const TOOL = `${PREFIX}_fn_send_welcome_email`;
const NOT_DEPLOYED = 'function "send_welcome_email" has no URL yet: deploy it with a url';

const admin = (dev: TestDeveloper, path = "") => `/v1/admin/projects/${dev.projectId}${path}`;
const deploy = (dev: TestDeveloper, json: unknown) =>
  apiJson(admin(dev, "/functions/deploy"), { token: dev.token, json });

describe("deploying seed 004's function metadata without a url", () => {
  it("creates the function and its typed tool at once; calls answer function_not_deployed until a url is deployed", async () => {
    const dev = await signupDeveloper();
    const alice = await signupUser(dev.projectId, dev.clientKey);
    const asAlice = endUserHeaders(dev.clientKey, alice.sessionToken);
    const url = `http://local/app/${dev.projectId}/mcp`;

    const deployed = await deploy(dev, JSON.parse(SEED_METADATA));
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(201);
    expect(deployed.body).toMatchObject({ name: "send_welcome_email", version: 1, url: null, active: true });
    const exposed = await apiJson(admin(dev, "/app-mcp/exposure"), {
      method: "PUT",
      token: dev.token,
      json: { functions: ["send_welcome_email"] },
    });
    expect(exposed.status, JSON.stringify(exposed.body)).toBe(200);
    expect(exposed.body.pending).toBeUndefined();

    const client = await connectClient(url, asAlice);
    const tool = (await client.listTools()).tools.find((t) => t.name === TOOL);
    expect(tool?.description).toContain("Send the branded welcome email to a user.");
    expect(tool?.inputSchema).toMatchObject({
      type: "object",
      properties: {
        user_id: { type: "string", description: "The recipient app user id" },
        template: { type: "string", enum: ["short", "full"] },
      },
      required: ["user_id"],
    });

    const refused = await client.callTool({ name: TOOL, arguments: { user_id: alice.userId } });
    expect(refused.isError).toBe(true);
    expect(resultJson(refused).error).toMatchObject({ code: "function_not_deployed" });
    expect(resultJson(refused).error.message).toContain(NOT_DEPLOYED);

    const rest = await apiJson(`/v1/projects/${dev.projectId}/functions/send_welcome_email/invoke`, {
      headers: asAlice,
      json: { user_id: alice.userId },
    });
    expectError(rest, 409, NOT_DEPLOYED);
    expect(rest.body.error.code).toBe("function_not_deployed");

    // A deploy with a url makes it runnable (version 2), the seed's annotation redeployed with it.
    const runnable = await deploy(dev, { ...JSON.parse(SEED_METADATA), url: `${echoUrl}/welcome` });
    expect(runnable.body).toMatchObject({ version: 2, url: `${echoUrl}/welcome`, active: true });
    const called = await client.callTool({
      name: TOOL,
      arguments: { user_id: alice.userId, template: "full" },
    });
    expect(called.isError).toBe(false);
    expect(resultJson(called)).toMatchObject({
      status: 200,
      body: { path: "/welcome", body: { user_id: alice.userId, template: "full" } },
    });
    await client.close();

    // Only the call that ran is metered: the refused tool call and REST invoke count nothing.
    await vi.waitFor(async () => expect((await billingUsage(dev)).function_invocations).toBe(1));
    await vi.waitFor(async () => expect((await billingUsage(dev)).agent_tool_calls).toBe(1));
  });

  it("keeps a null url on a url-less redeploy, lists it, and promotes url-less versions", async () => {
    const dev = await signupDeveloper();
    const fns = (path = "") => admin(dev, `/functions${path}`);
    expect((await deploy(dev, { name: "later" })).body).toMatchObject({ version: 1, url: null, mcp: null });
    expect((await deploy(dev, { name: "later", mcp: { description: "v2" } })).body).toMatchObject({
      version: 2,
      url: null,
      mcp: { description: "v2" },
    });
    expect((await deploy(dev, { name: "later", url: `${echoUrl}/three` })).body).toMatchObject({
      version: 3,
      url: `${echoUrl}/three`,
    });
    // Without a url, the active version's is kept: now version 3's.
    expect((await deploy(dev, { name: "later" })).body).toMatchObject({
      version: 4,
      url: `${echoUrl}/three`,
    });

    const versions = await apiJson(fns("/later/versions"), { token: dev.token });
    expect(
      versions.body.versions.map((v: { version: number; url: string | null }) => [v.version, v.url]),
    ).toEqual([
      [1, null],
      [2, null],
      [3, `${echoUrl}/three`],
      [4, `${echoUrl}/three`],
    ]);

    const promoted = await apiJson(fns("/later/promote"), { token: dev.token, json: { version: 2 } });
    expect(promoted.status).toBe(200);
    expect(promoted.body).toMatchObject({ version: 2, url: null, active: true, mcp: { description: "v2" } });
    const listed = await apiJson(fns(), { token: dev.token });
    expect(listed.body.functions).toEqual([
      expect.objectContaining({ name: "later", active_version: 2, url: null, versions: 4 }),
    ]);
    expect(await loadFunction(testDb(), dev.projectId, "later")).toEqual({
      name: "later",
      version: 2,
      url: null,
      mcp: { description: "v2" },
    });
  });

  it("refuses to invoke a url-less function before any limit, upstream call or metering", async () => {
    const dev = await signupDeveloper();
    const user = await signupUser(dev.projectId, dev.clientKey);
    await deploy(dev, JSON.parse(SEED_METADATA));
    const principal: Principal = {
      scope: "end_user",
      project: { id: dev.projectId, name: "p", developerId: dev.developerId, metaRev: 1 },
      user: { id: user.userId, email: user.email },
      clientKeyId: "key-1",
    };
    const limited: string[] = [];
    const fetched: unknown[] = [];
    const meter = new UsageMeter();
    const error = await invokeFunction(
      {
        policy: "strict",
        limit: async (key) => {
          limited.push(key);
        },
        meter: meter.add.bind(meter),
        signing: { secret: "amba_fsig_test", previous: null },
      },
      principal,
      await loadFunction(testDb(), dev.projectId, "send_welcome_email"),
      { user_id: user.userId },
      {
        fetch: async (...args) => {
          fetched.push(args);
          return new Response("{}");
        },
      },
    ).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(AppError);
    expect(error).toMatchObject({ status: 409, code: "function_not_deployed" });
    expect((error as AppError).message).toContain(NOT_DEPLOYED);
    expect(limited).toEqual([]);
    expect(fetched).toEqual([]);
    expect(meter.pending()).toEqual([]);
  });
});
