/**
 * Fourth conformance pass (black box, docs/contract-audit.md "fourth audit"): what a test written
 * from DESIGN.md and seed 004 alone would assert and the earlier suites only asserted with a wait.
 * A developer and project of its own, from a client address of its own.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { connectClient, resultJson } from "./app-mcp/mcp-client.ts";
import { apiJson, developerWithNotes, freshIp, mcpPostHeaders, uniqueEmail } from "./helpers.ts";

const IP = { "cf-connecting-ip": freshIp() };

let token: string;
let projectId: string;
let clientKey: string;
const admin = (path = "") => `/v1/admin/projects/${projectId}${path}`;

/** One stateless MCP `tools/call` POST on the app endpoint; its JSON-RPC result. */
async function appToolCall(headers: Record<string, string>, name: string, args: Record<string, unknown>) {
  const res = await apiJson(`/app/${projectId}/mcp`, {
    headers: { ...headers, ...IP },
    json: { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.result as { isError?: boolean };
}

beforeAll(async () => {
  ({ token, projectId, clientKey } = await developerWithNotes(IP, {
    email: uniqueEmail("blackbox-dev"),
    project_name: "Black Box",
  }));
});

describe("black-box contract", () => {
  it("shows successful tool calls and a new end user on the very next billing read (no wait)", async () => {
    const developer = mcpPostHeaders(token);
    expect((await appToolCall(developer, "notes_insert", { body: "one" })).isError).toBe(false);
    expect((await appToolCall(developer, "notes_insert", { body: "two" })).isError).toBe(false);
    // A failed call is not metered.
    expect((await appToolCall(developer, "notes_insert", {})).isError).toBe(true);
    const user = await apiJson("/v1/auth/signup", {
      apiKey: clientKey,
      headers: IP,
      json: { email: uniqueEmail("blackbox-user"), password: "correct horse battery" },
    });
    expect(user.status).toBe(201);

    // Right after the calls: REST, the platform MCP tool and the daily view agree, without waiting.
    const billing = await apiJson(admin("/billing"), { token, headers: IP });
    expect(billing.status).toBe(200);
    expect(billing.body.usage).toMatchObject({ agent_tool_calls: 2, mau: 1 });

    const status = await apiJson("/mcp", {
      headers: { ...mcpPostHeaders(token), ...IP },
      json: {
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "amba_billing_status", arguments: { project_id: projectId } },
      },
    });
    expect(JSON.parse(status.body.result.content[0].text).usage).toMatchObject({
      agent_tool_calls: 2,
      mau: 1,
    });

    const daily = await apiJson(admin("/billing/daily"), { token, headers: IP });
    expect(daily.body.days.at(-1).usage.agent_tool_calls).toBe(2);
  });

  it("runs the seed's platform round trip as written: no project_id while the developer has one project", async () => {
    const anonymous = await connectClient("http://local/mcp", IP);
    const signup = resultJson(
      await anonymous.callTool({
        name: "amba_developer_signup",
        arguments: { email: uniqueEmail("blackbox-agent") },
      }),
    );
    await anonymous.close();
    const platform = await connectClient("http://local/mcp", {
      ...IP,
      authorization: `Bearer ${signup.token}`,
    });
    const create = platform
      .listTools()
      .then(({ tools }) => tools.find((t) => t.name === "amba_collections_create"));
    expect((await create)?.inputSchema.required ?? []).not.toContain("project_id");

    // Seed 004: "amba_collections_create", then "amba_app_mcp_set_exposure with collections: ["recipes"]".
    const created = await platform.callTool({
      name: "amba_collections_create",
      arguments: { name: "recipes", columns: [{ name: "title", type: "text", required: true }] },
    });
    expect(created.isError, JSON.stringify(created.content)).toBe(false);
    const exposed = await platform.callTool({
      name: "amba_app_mcp_set_exposure",
      arguments: { collections: ["recipes"] },
    });
    expect(resultJson(exposed)).toEqual({ collections: ["recipes"], functions: [] });
    const config = resultJson(await platform.callTool({ name: "amba_app_mcp_get_config", arguments: {} }));
    expect(config.connection.url).toBe(`https://mcp.amba.dev/app/${signup.project.id}/mcp`);
    const app = await connectClient(`http://local/app/${signup.project.id}/mcp`, {
      ...IP,
      authorization: `Bearer ${signup.token}`,
    });
    const inserted = await app.callTool({ name: "recipes_insert", arguments: { title: "Birthday Cake" } });
    expect(inserted.isError).toBe(false);
    await app.close();

    // With a second project the target is ambiguous: project_id is then required, and named.
    const second = await platform.callTool({ name: "amba_projects_create", arguments: { name: "Second" } });
    expect(second.isError).toBe(false);
    const ambiguous = await platform.callTool({ name: "amba_app_mcp_get_config", arguments: {} });
    expect(ambiguous.isError).toBe(true);
    expect(resultJson(ambiguous).error).toMatchObject({ code: "invalid_input" });
    expect(resultJson(ambiguous).error.message).toContain("project_id");
    const named = await platform.callTool({
      name: "amba_app_mcp_get_config",
      arguments: { project_id: signup.project.id },
    });
    expect(named.isError).toBe(false);
    await platform.close();
  });
});
