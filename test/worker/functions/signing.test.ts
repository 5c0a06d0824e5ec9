/**
 * Signed function calls (src/functions/signing.ts): the echo server stands in for a developer's
 * endpoint and checks `x-amba-signature` with its own node:crypto implementation of the README's
 * recipe (test/worker/echo-server.ts). One project and its fixture serve every case.
 */

import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, inject, it, vi } from "vitest";
import { WELCOME_EMAIL_MCP } from "../../fixtures.ts";
import { connectClient, resultJson } from "../app-mcp/mcp-client.ts";
import {
  apiJson,
  endUserHeaders,
  expectError,
  isBackgroundStatement,
  signupDeveloper,
  signupUser,
  type TestDeveloper,
  type TestUser,
  testDb,
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

/** The read endpoint's answer (shape checked). */
async function readView(): Promise<{ signing_secret: string; previous_expires_at: string | null }> {
  const res = await apiJson(secretPath(), { token: dev.token });
  expect(res.status).toBe(200);
  expect(res.body).toEqual({
    signing_secret: expect.stringMatching(/^amba_fsig_[0-9a-f]{64}$/),
    header: "x-amba-signature",
    algorithm: "HMAC-SHA256",
    previous_expires_at: res.body.previous_expires_at === null ? null : expect.any(String),
  });
  return res.body;
}

const readSecret = async (): Promise<string> => (await readView()).signing_secret;

/** Rotate with this body (none when undefined); the new secret. */
async function rotate(json?: unknown): Promise<string> {
  const res = await apiJson(`${secretPath()}/rotate`, { method: "POST", token: dev.token, json });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
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

  it("rotation with an overlap: both secrets verify until the previous one expires, then the new one only", async () => {
    const old = await readSecret();
    await registerSecret(old);
    const before = Date.now();
    const res = await apiJson(`${secretPath()}/rotate`, {
      method: "POST",
      token: dev.token,
      json: { previous_valid_for_seconds: 3600 },
    });
    expect(res.status).toBe(200);
    const fresh = res.body.signing_secret as string;
    expect(fresh).not.toBe(old);
    // When the old one stops (the database's clock: allow a little skew) — shown, the old secret is not.
    const expires = Date.parse(res.body.previous_expires_at);
    expect(expires).toBeGreaterThan(before + 3590_000);
    expect(expires).toBeLessThan(Date.now() + 3610_000);
    const view = await readView();
    expect(view).toMatchObject({ signing_secret: fresh, previous_expires_at: res.body.previous_expires_at });
    expect(JSON.stringify(view)).not.toContain(old);

    // Both signatures in one header, the new one first: a function holding either verifies.
    const echoed = await invokeRest();
    expect(echoed.headers["x-amba-signature"]).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    expect(echoed.signature).toBe("valid");
    await registerSecret(fresh);
    expect((await invokeRest()).signature).toBe("valid");
    await registerSecret(old);

    // Past the expiry (set in the past directly) the old secret is no longer signed with.
    await testDb().execute(
      sql`update projects set previous_signing_secret_expires_at = now() - interval '1 second' where id = ${dev.projectId}::uuid`,
    );
    const after = await invokeRest();
    expect(after.headers["x-amba-signature"]).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(after.signature).toBe("invalid");
    expect((await readView()).previous_expires_at).toBeNull();
    await registerSecret(fresh);
    expect((await invokeRest()).signature).toBe("valid");
  });

  it("keeps one previous secret: rotating again replaces it; a rotation without overlap drops it", async () => {
    const a = await readSecret();
    const b = await rotate({ previous_valid_for_seconds: 600 });
    const c = await rotate({ previous_valid_for_seconds: 600 });
    const verdicts = async () => {
      const out: string[] = [];
      for (const secret of [a, b, c]) {
        await registerSecret(secret);
        out.push((await invokeRest()).signature);
      }
      return out;
    };
    // a was the previous of b's overlap: replaced by b when c came.
    expect(await verdicts()).toEqual(["invalid", "valid", "valid"]);
    const d = await rotate();
    expect((await readView()).previous_expires_at).toBeNull();
    expect(await verdicts()).toEqual(["invalid", "invalid", "invalid"]);
    await registerSecret(d);
    expect((await invokeRest()).signature).toBe("valid");
  });

  it("signs a warm app-MCP function call during an overlap with both, and no database round trip", async () => {
    const old = await readSecret();
    await rotate({ previous_valid_for_seconds: 600 });
    await registerSecret(old);
    const client = await connectClient(
      `http://local/app/${dev.projectId}/mcp`,
      endUserHeaders(dev.clientKey, user.sessionToken),
    );
    const call = async () => {
      const called = await client.callTool({
        name: "my_first_project_fn_welcome",
        arguments: { user_id: "u-3" },
      });
      expect(called.isError).toBe(false);
      return resultJson(called).body;
    };
    await call(); // loads the surface and caches the resolution
    const fetchSpy = vi.spyOn(globalThis, "fetch");
    try {
      const body = await call();
      expect(body.headers["x-amba-signature"]).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
      expect(body.signature).toBe("valid");
      const urls = fetchSpy.mock.calls
        .filter(([, init]) => !isBackgroundStatement(init?.body))
        .map(([input]) => (input instanceof Request ? input.url : String(input)));
      // The upstream call only: the keys came with the cached resolution.
      expect(urls).toEqual([`${echoUrl}/hooks/welcome?src=amba`]);
    } finally {
      fetchSpy.mockRestore();
      await client.close();
    }
    await registerSecret(await readSecret());
  });

  it("refuses a bad previous_valid_for_seconds with 400 and rotates nothing; an empty body rotates", async () => {
    const secret = await readSecret();
    const message = "previous_valid_for_seconds: must be a whole number of seconds from 0 to 604800 (7 days)";
    for (const value of [-1, 604_801, 1.5, "60", null, true]) {
      const res = await apiJson(`${secretPath()}/rotate`, {
        method: "POST",
        token: dev.token,
        json: { previous_valid_for_seconds: value },
      });
      expectError(res, 400);
      expect(res.body.error).toEqual({ code: "invalid_input", message });
    }
    const unknown = await apiJson(`${secretPath()}/rotate`, {
      method: "POST",
      token: dev.token,
      json: { previous_valid_for: 60 },
    });
    expectError(unknown, 400);
    expect(unknown.body.error).toEqual({
      code: "invalid_input",
      message: "previous_valid_for: unknown field",
    });
    expect(await readSecret()).toBe(secret);
    const empty = await apiJson(`${secretPath()}/rotate`, {
      method: "POST",
      token: dev.token,
      headers: { "content-type": "application/json" },
      body: "",
    });
    expect(empty.status).toBe(200);
    expect(empty.body.previous_expires_at).toBeNull();
    expect(await rotate({ previous_valid_for_seconds: 604_800 })).not.toBe(empty.body.signing_secret);
    await registerSecret(await readSecret());
  });
});
