/**
 * Auth endpoints under the auth rate-limit bindings (finding 8), against miniflare's simulated
 * Workers Rate Limiting: 10 sign-in attempts per project and email per minute, then 429 with
 * `Retry-After`; end-user auth attempts per client IP (`cf-connecting-ip`); developer sign-ups per IP,
 * over REST and the platform MCP (official SDK client) against one shared budget.
 */

import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../../src/worker/app.ts";
import type { Env } from "../../../src/worker/env.ts";
import { connectClient, resultJson } from "../app-mcp/mcp-client.ts";
import {
  api,
  apiJson,
  freshIp,
  signupDeveloper,
  signupUser,
  uniqueEmail,
  withinOneRateLimitWindow,
} from "../helpers.ts";

const RATE_LIMITED = { code: "rate_limited", message: expect.stringContaining("retry in 60 s") };

// Each test's attempts stay inside one of the limiter's clock-aligned minutes.
beforeEach(() => withinOneRateLimitWindow());

describe("sign-in rate limit per email", () => {
  it("answers 429 with Retry-After on the 11th attempt for one email; other emails are not affected", async () => {
    const dev = await signupDeveloper();
    const user = await signupUser(dev.projectId, dev.clientKey);
    const signin = (email: string, password: string) =>
      api("/v1/auth/signin", { apiKey: dev.clientKey, json: { email, password } });

    for (let attempt = 1; attempt <= 10; attempt++) {
      const res = await signin(user.email, `wrong password ${attempt}`);
      expect(res.status, `attempt ${attempt}`).toBe(401);
      await res.text();
    }
    const limited = await signin(user.email, "wrong password 11");
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toBe("60");
    expect(await limited.json()).toEqual({ error: RATE_LIMITED });
    // Even the right password waits: the limit counts attempts, not failures.
    expect((await signin(user.email, user.password)).status).toBe(429);
    // Case and spacing do not make a new key.
    expect((await signin(` ${user.email.toUpperCase()} `, "x")).status).toBe(429);

    const other = await signupUser(dev.projectId, dev.clientKey);
    expect((await signin(other.email, other.password)).status).toBe(200);
  });
});

describe("per client IP", () => {
  it("limits end-user sign-in and sign-up attempts from one address, before any other check", async () => {
    const dev = await signupDeveloper();
    const ip = freshIp();
    const headers = { "cf-connecting-ip": ip };
    for (let attempt = 1; attempt <= 60; attempt++) {
      const path = attempt % 2 ? "/v1/auth/signin" : "/v1/auth/signup";
      const res = await api(path, { apiKey: dev.clientKey, headers, json: { email: "not an email" } });
      expect(res.status, `attempt ${attempt}`).toBe(400);
      await res.text();
    }
    const limited = await apiJson("/v1/auth/signup", {
      apiKey: dev.clientKey,
      headers,
      json: { email: uniqueEmail(), password: "correct horse battery" },
    });
    expect(limited).toEqual({ status: 429, body: { error: RATE_LIMITED } });
    // No key at all: still 429 — the address is counted first.
    expect((await api("/v1/auth/signin", { headers, json: {} })).status).toBe(429);

    const elsewhere = await apiJson("/v1/auth/signup", {
      apiKey: dev.clientKey,
      headers: { "cf-connecting-ip": freshIp() },
      json: { email: uniqueEmail(), password: "correct horse battery" },
    });
    expect(elsewhere.status).toBe(201);
  });

  it("limits developer sign-ups to 10 a minute per address", async () => {
    const headers = { "cf-connecting-ip": freshIp() };
    for (let attempt = 1; attempt <= 10; attempt++) {
      const res = await api("/v1/developers/signup", { headers, json: { email: `bad-${attempt}` } });
      expect(res.status, `attempt ${attempt}`).toBe(400);
      await res.text();
    }
    const limited = await api("/v1/developers/signup", { headers, json: { email: uniqueEmail("dev") } });
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toBe("60");
    expect(await limited.json()).toEqual({ error: RATE_LIMITED });

    const elsewhere = await api("/v1/developers/signup", {
      headers: { "cf-connecting-ip": freshIp() },
      json: { email: uniqueEmail("dev") },
    });
    expect(elsewhere.status).toBe(201);
  });
});

describe("developer sign-ups over the platform MCP", () => {
  /** `amba_developer_signup` over an anonymous platform-MCP connection: `{isError, body}`. */
  const mcpSignup = async (client: Client, email: string) => {
    const result = await client.callTool({ name: "amba_developer_signup", arguments: { email } });
    return { isError: result.isError, body: resultJson(result) };
  };
  const restSignup = (ip: string, email: string) =>
    apiJson("/v1/developers/signup", { headers: { "cf-connecting-ip": ip }, json: { email } });

  it("answers the 11th sign-up from one address within a minute with an isError result saying when to retry", async () => {
    const ip = freshIp();
    const client = await connectClient("http://local/mcp", { "cf-connecting-ip": ip });
    for (let attempt = 1; attempt <= 10; attempt++) {
      const { isError, body } = await mcpSignup(client, uniqueEmail("mcp-dev"));
      expect(isError, `attempt ${attempt}: ${JSON.stringify(body)}`).toBe(false);
      expect(body.token).toMatch(/^amba_dev_/);
    }
    const email = uniqueEmail("mcp-dev");
    expect(await mcpSignup(client, email)).toEqual({ isError: true, body: { error: RATE_LIMITED } });
    await client.close();
    // Nothing was created for the refused attempt: the email is still free elsewhere.
    expect((await restSignup(freshIp(), email)).status).toBe(201);

    const elsewhere = await connectClient("http://local/mcp", { "cf-connecting-ip": freshIp() });
    expect((await mcpSignup(elsewhere, uniqueEmail("mcp-dev"))).isError).toBe(false);
    await elsewhere.close();
  });

  it("shares one budget per address with POST /v1/developers/signup", async () => {
    const ip = freshIp();
    const client = await connectClient("http://local/mcp", { "cf-connecting-ip": ip });
    for (let attempt = 1; attempt <= 10; attempt++) {
      if (attempt % 2) {
        expect((await mcpSignup(client, uniqueEmail("mixed"))).isError, `attempt ${attempt}`).toBe(false);
      } else {
        expect((await restSignup(ip, uniqueEmail("mixed"))).status, `attempt ${attempt}`).toBe(201);
      }
    }
    expect(await restSignup(ip, uniqueEmail("mixed"))).toEqual({
      status: 429,
      body: { error: RATE_LIMITED },
    });
    expect(await mcpSignup(client, uniqueEmail("mixed"))).toEqual({
      isError: true,
      body: { error: RATE_LIMITED },
    });
    await client.close();
  });
});

describe("auth limiters that cannot answer", () => {
  it("refuse the attempt (503, Retry-After) instead of letting guesses through; caller limits still fail open", async () => {
    const dev = await signupDeveloper();
    const user = await signupUser(dev.projectId, dev.clientKey);
    const broken = { limit: async () => Promise.reject(new Error("limiter down")) };
    const brokenEnv: Env = {
      ...(env as unknown as Env),
      AUTH_RATE_LIMITER: broken,
      AUTH_IP_RATE_LIMITER: broken,
      RATE_LIMITER: broken,
    };
    const app = createApp();
    const call = async (path: string, init: RequestInit) => {
      const ctx = createExecutionContext();
      const res = await app.fetch(new Request(new URL(path, "https://mcp.amba.dev"), init), brokenEnv, ctx);
      await waitOnExecutionContext(ctx);
      return res;
    };
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const signin = await call("/v1/auth/signin", {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-api-key": dev.clientKey,
          "cf-connecting-ip": freshIp(),
        },
        body: JSON.stringify({ email: user.email, password: user.password }),
      });
      expect(signin.status).toBe(503);
      expect(signin.headers.get("retry-after")).toBe("5");
      expect(await signin.json()).toMatchObject({ error: { code: "rate_limiter_unavailable" } });

      const page = await call("/authorize?response_type=code", {
        headers: { "cf-connecting-ip": freshIp() },
      });
      expect(page.status).toBe(503);
      expect(page.headers.get("content-type")).toContain("text/html");
      expect(page.headers.get("retry-after")).toBe("5");
      expect(await page.text()).toContain("Sign-in is briefly unavailable");

      // The data plane's caller limit fails open: the developer's read goes through.
      const rows = await call(`/v1/projects/${dev.projectId}/collections/nothing_here/rows`, {
        headers: { authorization: `Bearer ${dev.token}` },
      });
      expect(rows.status).toBe(404);
    } finally {
      logged.mockRestore();
    }
  });
});
