/**
 * Signed function calls (src/functions/signing.ts): the echo server stands in for a developer's
 * endpoint and checks `x-amba-signature` with its own node:crypto implementation of the README's
 * recipe (test/worker/echo-server.ts). One project and its fixture serve every case.
 */
import { beforeAll, describe, expect, inject, it } from "vitest";
import { WELCOME_EMAIL_MCP } from "../../fixtures.ts";
import { connectClient, resultJson } from "../app-mcp/mcp-client.ts";
import {
  apiJson,
  endUserHeaders,
  expectError,
  signupDeveloper,
  signupUser,
  type TestDeveloper,
  type TestUser,
} from "../helpers.ts";

const echoUrl = inject("echoUrl");

let dev: TestDeveloper;
let user: TestUser;
const secretPath = () => `/v1/admin/projects/${dev.projectId}/functions/signing-secret`;

/** Tell the stand-in endpoint which secret it verifies this project's calls with. */
async function registerSecret(secret: string) {
  const res = await fetch(`${echoUrl}/__signing-secrets/${dev.projectId}`, { method: "PUT", body: secret });
  expect(res.status).toBe(204);
}

async function readSecret(): Promise<string> {
  const res = await apiJson(secretPath(), { token: dev.token });
  expect(res.status).toBe(200);
  expect(res.body).toEqual({
    signing_secret: expect.stringMatching(/^amba_fsig_[0-9a-f]{64}$/),
    header: "x-amba-signature",
    algorithm: "HMAC-SHA256",
  });
  return res.body.signing_secret;
}

/** What the endpoint received from one REST invoke (the echo: headers, raw body, verdict). */
async function invokeRest(userId = "u-1") {
  const res = await apiJson(`/v1/projects/${dev.projectId}/functions/welcome/invoke`, {
    headers: endUserHeaders(dev.clientKey, user.sessionToken),
    json: { user_id: userId },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

beforeAll(async () => {
  dev = await signupDeveloper();
  user = await signupUser(dev.projectId, dev.clientKey);
  const admin = `/v1/admin/projects/${dev.projectId}`;
  const deployed = await apiJson(`${admin}/functions/deploy`, {
    token: dev.token,
    json: { name: "welcome", url: `${echoUrl}/hooks/welcome?src=amba`, mcp: WELCOME_EMAIL_MCP },
  });
  expect(deployed.status).toBe(201);
  const exposed = await apiJson(`${admin}/app-mcp/exposure`, {
    method: "PUT",
    token: dev.token,
    json: { functions: ["welcome"] },
  });
  expect(exposed.status).toBe(200);
  await registerSecret(await readSecret());
});

describe("signed function calls", () => {
  it("signs a REST invoke and an app-MCP tool call so the endpoint verifies them", async () => {
    const echoed = await invokeRest();
    expect(echoed.headers["x-amba-signature"]).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(echoed.signature).toBe("valid");

    const client = await connectClient(
      `http://local/app/${dev.projectId}/mcp`,
      endUserHeaders(dev.clientKey, user.sessionToken),
    );
    const called = await client.callTool({
      name: "my_first_project_fn_welcome",
      arguments: { user_id: "u-2" },
    });
    await client.close();
    expect(called.isError).toBe(false);
    const { body } = resultJson(called);
    expect(body.headers["x-amba-user-id"]).toBe(user.userId);
    expect(body.signature).toBe("valid");
  });

  it("fails verification when an identity header or the body is changed on the way", async () => {
    const echoed = await invokeRest();
    // biome-ignore lint/suspicious/noExplicitAny: the echo's shape is asserted
    const replay = async (headers: Record<string, string>, body: string): Promise<any> =>
      (await fetch(`${echoUrl}/hooks/welcome?src=amba`, { method: "POST", headers, body })).json();
    const sent: Record<string, string> = {};
    for (const name of ["content-type", "x-amba-signature"]) sent[name] = echoed.headers[name];
    for (const name of Object.keys(echoed.headers).filter((h) => h.startsWith("x-amba-")))
      sent[name] = echoed.headers[name];
    // The faithful replay verifies (within the window: request-id dedupe is the endpoint's job) …
    expect((await replay(sent, echoed.raw)).signature).toBe("valid");
    // … a swapped user, a dropped header or another body does not.
    const victim = await replay({ ...sent, "x-amba-user-id": crypto.randomUUID() }, echoed.raw);
    expect(victim.signature).toBe("invalid");
    const { "x-amba-user-email": _dropped, ...withoutEmail } = sent;
    expect((await replay(withoutEmail, echoed.raw)).signature).toBe("invalid");
    const body = await replay(sent, echoed.raw.replace('"u-1"', '"u-0"'));
    expect(body.body).toEqual({ user_id: "u-0" });
    expect(body.signature).toBe("invalid");
  });

  it("rotation gives a new secret; the old one stops verifying on the next invoke", async () => {
    const old = await readSecret();
    const rotated = await apiJson(`${secretPath()}/rotate`, { method: "POST", token: dev.token });
    expect(rotated.status).toBe(200);
    const fresh = rotated.body.signing_secret as string;
    expect(fresh).toMatch(/^amba_fsig_[0-9a-f]{64}$/);
    expect(fresh).not.toBe(old);
    expect(await readSecret()).toBe(fresh);
    // The endpoint still holds the old secret: the call no longer verifies under it.
    expect((await invokeRest()).signature).toBe("invalid");
    await registerSecret(fresh);
    expect((await invokeRest()).signature).toBe("valid");
  });

  it("shows the secret to the project's developer only, and in no other listing", async () => {
    const secret = await readSecret();
    const other = await signupDeveloper();
    expectError(await apiJson(secretPath(), { token: other.token }), 404);
    expectError(await apiJson(`${secretPath()}/rotate`, { method: "POST", token: other.token }), 404);
    expectError(
      await apiJson(secretPath(), { headers: endUserHeaders(dev.clientKey, user.sessionToken) }),
      401,
    );
    expect(await readSecret()).toBe(secret);
    const theirs = await apiJson(`/v1/admin/projects/${other.projectId}/functions/signing-secret`, {
      token: other.token,
    });
    expect(theirs.body.signing_secret).toMatch(/^amba_fsig_[0-9a-f]{64}$/);
    expect(theirs.body.signing_secret).not.toBe(secret);
    const admin = `/v1/admin/projects/${dev.projectId}`;
    for (const path of ["", "/functions", "/app-mcp/config", "/app-mcp/exposure"]) {
      const res = await apiJson(`${admin}${path}`, { token: dev.token });
      expect(res.status).toBe(200);
      expect(JSON.stringify(res.body)).not.toContain(secret);
    }
    expect(JSON.stringify((await apiJson("/v1/admin/projects", { token: dev.token })).body)).not.toContain(
      secret,
    );
  });
});
