/**
 * Fourth conformance pass (black box, docs/contract-audit.md "fourth audit"): what a test written
 * from DESIGN.md and seed 004 alone would assert and the earlier suites only asserted with a wait.
 * A developer and project of its own, from a client address of its own.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { apiJson, freshIp, mcpPostHeaders, uniqueEmail } from "./helpers.ts";

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
  const signup = await apiJson("/v1/developers/signup", {
    headers: IP,
    json: { email: uniqueEmail("blackbox-dev"), project_name: "Black Box" },
  });
  expect(signup.status, JSON.stringify(signup.body)).toBe(201);
  ({ token, client_key: clientKey } = signup.body);
  projectId = signup.body.project.id;
  const notes = { name: "notes", columns: [{ name: "body", type: "text", required: true }] };
  expect((await apiJson(admin("/collections"), { token, headers: IP, json: notes })).status).toBe(201);
  const exposed = await apiJson(admin("/app-mcp/exposure"), {
    method: "PUT",
    token,
    headers: IP,
    json: { collections: ["notes"] },
  });
  expect(exposed.status).toBe(200);
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
});
