/**
 * The budget of failed credential checks per client address (`CREDENTIAL_RATE_LIMITER`, 100 a
 * minute in the test config): made-up credentials are statements on the database every tenant
 * shares, never cached and counted against no caller. Past the budget an address's new credentials
 * are refused (429) before the database; credentials the isolate has already resolved, other
 * addresses, and requests without any credential are untouched.
 */

import { beforeEach, describe, expect, it } from "vitest";
import { api, freshIp, mcpPostHeaders, signupDeveloper, withinOneRateLimitWindow } from "../helpers.ts";

const BUDGET = 100;
const PING = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" });

/** `ping` on the app MCP of `projectId` with `token` (or none) from `ip`; the status. */
async function ping(projectId: string, token: string | undefined, ip: string): Promise<number> {
  const headers = token === undefined ? mcpPostHeaders("x") : mcpPostHeaders(token);
  if (token === undefined) delete headers.authorization;
  const res = await api(`/app/${projectId}/mcp`, {
    method: "POST",
    headers: { ...headers, "cf-connecting-ip": ip },
    body: PING,
  });
  await res.arrayBuffer();
  return res.status;
}

/** `token` with its last character changed: well formed, so its check reaches the database, and wrong. */
const forged = (token: string) => `${token.slice(0, -1)}${token.endsWith("a") ? "b" : "a"}`;

// The attempts of a test (≈ 2 s) stay inside one of the limiter's clock-aligned minutes.
beforeEach(() => withinOneRateLimitWindow(60, 10_000));

describe("failed credential checks per address", () => {
  it("refuses an address's new credentials once its failures pass the budget, and nothing else", async () => {
    const dev = await signupDeveloper();
    const other = await signupDeveloper();
    const attacker = freshIp();
    const bystander = freshIp();

    // A resolution this isolate already holds (warmed from another address) …
    expect(await ping(dev.projectId, dev.token, bystander)).toBe(200);

    let failures = 0;
    let status = 401;
    while (status === 401 && failures < BUDGET * 2) {
      status = await ping(dev.projectId, forged(dev.token), attacker);
      if (status === 401) failures++;
    }
    expect(status).toBe(429);
    expect(failures).toBeGreaterThanOrEqual(BUDGET);

    // … a new valid credential from that address waits (its check would reach the database) …
    const refused = await api(`/app/${other.projectId}/mcp`, {
      method: "POST",
      headers: { ...mcpPostHeaders(other.token), "cf-connecting-ip": attacker },
      body: PING,
    });
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("60");
    expect(await refused.json()).toEqual({
      error: {
        code: "rate_limited",
        message: expect.stringContaining("failed credential checks from this address"),
      },
    });
    const admin = await api("/v1/admin/projects", {
      token: other.token,
      headers: { "cf-connecting-ip": attacker },
    });
    expect(admin.status).toBe(429);
    await admin.arrayBuffer();

    // … while the cached one still answers from there, and the same new credential from elsewhere.
    expect(await ping(dev.projectId, dev.token, attacker)).toBe(200);
    expect(await ping(other.projectId, other.token, bystander)).toBe(200);
  });

  it("does not count requests without a credential (every MCP connection starts with one)", async () => {
    const dev = await signupDeveloper();
    const host = freshIp();
    for (let i = 0; i <= BUDGET + 5; i++) expect(await ping(dev.projectId, undefined, host)).toBe(401);
    expect(await ping(dev.projectId, dev.token, host)).toBe(200);
  });
});
