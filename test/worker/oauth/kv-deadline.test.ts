/**
 * The OAuth store (`OAUTH_KV`) under a deadline (src/worker/kv-deadline.ts): when the store stops
 * answering, the OAuth endpoints and an OAuth token presented at the app MCP fail within the
 * deadline with 503 and `Retry-After`, instead of hanging: `storage_timeout` on the app MCP,
 * `temporarily_unavailable` (an OAuth error body) at the token and registration endpoints.
 */
import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../../../src/worker/app.ts";
import type { Env } from "../../../src/worker/env.ts";
import { signupDeveloper } from "../helpers.ts";
import { authorizeUrl, pkce, REDIRECT_URI, registerClient } from "./oauth-client.ts";

/** A namespace whose reads and writes never settle (what a stalled store looks like to the Worker). */
const stalled = {
  get: () => new Promise(() => {}),
  getWithMetadata: () => new Promise(() => {}),
  put: () => new Promise(() => {}),
  delete: () => new Promise(() => {}),
  list: () => new Promise(() => {}),
} as unknown as KVNamespace;

const stalledEnv: Env = { ...(env as unknown as Env), OAUTH_KV: stalled };
const app = createApp();
const call = (path: string, init: RequestInit = {}) =>
  app.fetch(new Request(new URL(path, "https://mcp.amba.dev"), init), stalledEnv, createExecutionContext());

const TIMEOUT = /did not answer KV \w+ within 3000 ms/;

async function expectStorageTimeout(res: Response): Promise<void> {
  expect(res.status).toBe(503);
  expect(res.headers.get("retry-after")).toBe("5");
  if (res.headers.get("content-type")?.includes("text/html")) {
    expect(await res.text()).toMatch(TIMEOUT);
    return;
  }
  expect(await res.json()).toEqual({
    error: { code: "storage_timeout", message: expect.stringMatching(TIMEOUT) },
  });
}

/** The token and registration endpoints answer as OAuth does (RFC 6749 §5.2): `error` is a string. */
async function expectOAuthStorageTimeout(res: Response): Promise<void> {
  expect(res.status).toBe(503);
  expect(res.headers.get("retry-after")).toBe("5");
  expect(res.headers.get("cache-control")).toBe("no-store");
  expect(await res.json()).toEqual({
    error: "temporarily_unavailable",
    error_description: expect.stringMatching(TIMEOUT),
  });
}

describe("a stalled OAuth store", () => {
  it("fails OAuth requests with 503 storage_timeout instead of hanging", async () => {
    const dev = await signupDeveloper();
    const clientId = await registerClient(); // through the healthy store
    const { challenge } = await pkce();
    const resource = `https://mcp.amba.dev/app/${dev.projectId}/mcp`;
    const ip = { "cf-connecting-ip": `2001:db8:7:${(Date.now() % 65536).toString(16)}::1` };
    const [register, token, page, mcp] = await Promise.all([
      call("/oauth/register", {
        method: "POST",
        headers: { "content-type": "application/json", ...ip },
        body: JSON.stringify({
          client_name: "Stalled",
          redirect_uris: [REDIRECT_URI],
          token_endpoint_auth_method: "none",
        }),
      }),
      call("/oauth/token", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", ...ip },
        body: new URLSearchParams({
          grant_type: "authorization_code",
          client_id: clientId,
          code: `u_${"cd".repeat(16)}:grant1234:code5678`,
          code_verifier: "v".repeat(43),
          redirect_uri: REDIRECT_URI,
        }),
      }),
      call(authorizeUrl({ client_id: clientId, code_challenge: challenge, resource }), { headers: ip }),
      call(`/app/${dev.projectId}/mcp`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          authorization: `Bearer u_${"ab".repeat(16)}:grant1234:secret5678`,
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
      }),
    ]);
    await expectOAuthStorageTimeout(register);
    await expectOAuthStorageTimeout(token);
    await expectStorageTimeout(page);
    // A person reads this one: a page, not the API's JSON.
    expect(page.headers.get("content-type")).toContain("text/html");
    await expectStorageTimeout(mcp);
  });
});
