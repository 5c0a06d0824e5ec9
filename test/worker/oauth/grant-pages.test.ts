/**
 * A project's OAuth grants stay listable and revocable however many users authorized its app MCP
 * (src/oauth/grants.ts): the listing is paged over the project's subjects, and a revocation finds
 * the grant from its listed id alone, in a number of KV operations that does not grow with them.
 */
import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../../src/worker/app.ts";
import type { Env } from "../../../src/worker/env.ts";
import { connectClient } from "../app-mcp/mcp-client.ts";
import { apiJson, signupDeveloper, signupUser, type TestDeveloper } from "../helpers.ts";
import { authorized, BASE, listedGrantId, rawToolsList, registerClient, resultJson } from "./oauth-client.ts";

/** A fresh end user of `dev`'s project who authorized `clientId` at its app MCP: the access token. */
async function authorizedUser(dev: TestDeveloper, clientId: string): Promise<string> {
  const user = await signupUser(dev.projectId, dev.clientKey);
  const resource = `${BASE}/app/${dev.projectId}/mcp`;
  const signIn = { mode: "end_user", email: user.email, password: user.password } as const;
  return (await authorized(resource, signIn, clientId)).access_token;
}

/**
 * The Worker with `OAUTH_KV` counting its operations, and refusing list cursors as the production
 * store refuses one it did not issue (the local store reads any base64 as a key to start after).
 */
function countingWorker() {
  const counted = { ops: 0 };
  const kv = env.OAUTH_KV as KVNamespace;
  const wrapped = new Proxy(kv, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        counted.ops++;
        if (prop === "list" && (args[0] as KVNamespaceListOptions | undefined)?.cursor === "Zm9yZ2Vk")
          return Promise.reject(new Error("KV LIST failed: 400 invalid cursor"));
        return value.apply(target, args);
      };
    },
  });
  const countingEnv: Env = { ...(env as unknown as Env), OAUTH_KV: wrapped };
  const app = createApp();
  const fetch = (path: string, init: RequestInit = {}) =>
    app.fetch(new Request(new URL(path, BASE), init), countingEnv, createExecutionContext());
  return { counted, fetch };
}

describe("a project's OAuth grants, bounded", () => {
  let dev: TestDeveloper;
  let small: TestDeveloper;
  let tokens: string[];
  let smallToken: string;

  beforeAll(async () => {
    [dev, small] = await Promise.all([signupDeveloper(), signupDeveloper()]);
    const [clientId, smallClient] = await Promise.all([registerClient(), registerClient()]);
    tokens = await Promise.all(Array.from({ length: 7 }, () => authorizedUser(dev, clientId)));
    smallToken = await authorizedUser(small, smallClient);
  });

  it("pages over the project's users: every grant exactly once, then next_cursor null", async () => {
    const admin = `/v1/admin/projects/${dev.projectId}/oauth/grants`;
    const seen: string[] = [];
    const cursors: (string | null)[] = [];
    let cursor: string | null = null;
    do {
      const query: string = cursor ? `?limit=3&cursor=${encodeURIComponent(cursor)}` : "?limit=3";
      const page = await apiJson(`${admin}${query}`, { token: dev.token });
      expect(page.status, JSON.stringify(page.body)).toBe(200);
      expect(page.body.grants.length).toBeLessThanOrEqual(3);
      seen.push(...page.body.grants.map((g: { id: string }) => g.id));
      cursor = page.body.next_cursor;
      cursors.push(cursor);
    } while (cursor && cursors.length < 10);
    expect(cursors).toHaveLength(3);
    expect(cursors[2]).toBeNull();
    expect(seen.toSorted()).toEqual(tokens.map(listedGrantId).toSorted());

    const whole = await apiJson(admin, { token: dev.token });
    expect(whole.body.next_cursor).toBeNull();
    expect(whole.body.grants).toHaveLength(7);

    const platform = await connectClient(`${BASE}/mcp`, { authorization: `Bearer ${dev.token}` });
    const first = resultJson(
      await platform.callTool({
        name: "amba_oauth_grants_list",
        arguments: { project_id: dev.projectId, limit: 3 },
      }),
    );
    expect(first.grants).toHaveLength(3);
    const second = resultJson(
      await platform.callTool({
        name: "amba_oauth_grants_list",
        arguments: { project_id: dev.projectId, limit: 3, cursor: first.next_cursor },
      }),
    );
    expect(second.grants).toHaveLength(3);
    expect(second.grants.map((g: { id: string }) => g.id)).not.toContain(first.grants[0].id);
    const bad = await platform.callTool({
      name: "amba_oauth_grants_list",
      arguments: { project_id: dev.projectId, limit: 101 },
    });
    expect(bad.isError).toBe(true);
    await platform.close();
  });

  it("refuses a malformed cursor or limit with 400", async () => {
    const admin = `/v1/admin/projects/${dev.projectId}/oauth/grants`;
    for (const query of [
      "?cursor=%00",
      "?cursor=not%20a%20cursor",
      `?cursor=${"a".repeat(1025)}`,
      "?limit=0",
      "?limit=101",
      "?limit=x",
    ]) {
      const res = await apiJson(`${admin}${query}`, { token: dev.token });
      expect(res.status, query).toBe(400);
      expect(res.body.error.code).toBe("invalid_input");
    }
    const refused = await countingWorker().fetch(`${admin}?cursor=Zm9yZ2Vk`, {
      headers: { authorization: `Bearer ${dev.token}` },
    });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({
      error: { code: "invalid_input", message: "cursor: not a next_cursor returned by this listing" },
    });
  });

  it("revokes by listed id, and answers a forged or other project's id with the same 404", async () => {
    const admin = `/v1/admin/projects/${dev.projectId}/oauth/grants`;
    const [victim] = tokens as [string];
    const id = listedGrantId(victim);
    const [subject, grantId] = id.split(".") as [string, string];
    const otherSubject = listedGrantId(tokens[1] as string).split(".")[0];
    const notFound = { error: { code: "not_found", message: "grant not found" } };
    for (const forged of [
      listedGrantId(smallToken), // another project's grant
      `${otherSubject}.${grantId}`, // another user of this project with this grant's id
      `${subject}.${"A".repeat(16)}`, // this user, no such grant
      grantId, // the provider's bare id
      `${subject}.${grantId}.x`,
    ]) {
      const res = await apiJson(`${admin}/${encodeURIComponent(forged)}`, {
        method: "DELETE",
        token: dev.token,
      });
      expect(res.status, forged).toBe(404);
      expect(res.body).toEqual(notFound);
    }
    const small404 = await apiJson(`/v1/admin/projects/${small.projectId}/oauth/grants/${id}`, {
      method: "DELETE",
      token: small.token,
    });
    expect(small404.body).toEqual(notFound);
    expect((await rawToolsList(`${BASE}/app/${dev.projectId}/mcp`, victim)).status).toBe(200);

    const revoked = await apiJson(`${admin}/${id}`, { method: "DELETE", token: dev.token });
    expect(revoked.body).toEqual({ id, revoked: true });
    expect((await rawToolsList(`${BASE}/app/${dev.projectId}/mcp`, victim)).status).toBe(401);
    expect(
      (await apiJson(admin, { token: dev.token })).body.grants.map((g: { id: string }) => g.id),
    ).not.toContain(id);
  });

  it("revokes in as many KV operations with seven users as with one", async () => {
    const { counted, fetch } = countingWorker();
    const revoke = async (owner: TestDeveloper, token: string) => {
      const before = counted.ops;
      const res = await fetch(`/v1/admin/projects/${owner.projectId}/oauth/grants/${listedGrantId(token)}`, {
        method: "DELETE",
        headers: { authorization: `Bearer ${owner.token}` },
      });
      expect(res.status).toBe(200);
      return counted.ops - before;
    };
    const many = await revoke(dev, tokens[6] as string);
    const one = await revoke(small, smallToken);
    expect(many).toBe(one);
    // One read of the grant, one list of its tokens, their deletes, the grant's delete.
    expect(many).toBeGreaterThan(0);
    expect(many).toBeLessThanOrEqual(5);
  });
});
