/**
 * Client ID Metadata Documents as an attacker uses them: a `client_id` that is an https URL makes
 * the Worker fetch that URL (the provider resolves the client from it), so without a bound anyone
 * could make the platform fetch URLs of their choosing at their request rate. Each address gets
 * AUTH_IP_RATE_LIMITER's budget of requests that would fetch a document (`oauth-client-metadata:<ip>`,
 * one key for /authorize and /oauth/token); a document the provider holds in its cache costs no
 * fetch and is not counted. wrangler.toml turns on `global_fetch_strictly_public`, and with it CIMD,
 * in these tests too (workerd does not enforce the flag here: loopback URLs are fetched, and
 * `https://127.0.0.1:1/…` fails at once, which keeps the budget's 60 real fetches fast; the other
 * tests spend the budget through the binding itself).
 */
import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { acceptedDocumentKey, CIMD_CACHE_NAME } from "../../../src/oauth/cimd.ts";
import { rateLimitAddress } from "../../../src/worker/rate-limit.ts";
import { freshIp, type TestDeveloper, type TestUser, withinOneRateLimitWindow } from "../helpers.ts";
import {
  authorizeUrl,
  call,
  pkce,
  REDIRECT_URI,
  registerClient,
  setupApp,
  signedInCode,
} from "./oauth-client.ts";

/** AUTH_IP_RATE_LIMITER's limit in vitest.config.ts (and wrangler.toml). */
const BUDGET = 60;

const limiter = (env as unknown as { AUTH_IP_RATE_LIMITER: RateLimit }).AUTH_IP_RATE_LIMITER;

const unreachable = (n: number | string) => `https://127.0.0.1:1/clients/${n}.json`;

/** POST /oauth/token from `ip` with a form; status and JSON body. */
async function tokenFrom(ip: string, fields: Record<string, string>, headers: Record<string, string> = {}) {
  const res = await call("/oauth/token", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", "cf-connecting-ip": ip, ...headers },
    body: new URLSearchParams(fields),
  });
  const text = await res.text(); // a revocation's 200 has no body
  // biome-ignore lint/suspicious/noExplicitAny: tests assert the shape
  const body = (text === "" ? null : JSON.parse(text)) as any;
  return { status: res.status, retryAfter: res.headers.get("retry-after"), body };
}

/** Spend `ip`'s whole budget through the binding, under the key the requests count against. */
async function spendBudget(ip: string): Promise<void> {
  const key = `oauth-client-metadata:${rateLimitAddress(ip)}`;
  for (let i = 0; i < BUDGET; i++) await limiter.limit({ key });
  expect((await limiter.limit({ key })).success).toBe(false);
}

/** Wait (up to 10 s) for `key` to appear in OAUTH_KV (a write made through `waitUntil`). */
async function waitForKv(key: string): Promise<void> {
  const kv = (env as unknown as { OAUTH_KV: KVNamespace }).OAUTH_KV;
  for (let i = 0; i < 100 && (await kv.get(key)) === null; i++) await new Promise((r) => setTimeout(r, 100));
  expect(await kv.get(key)).toBe("1");
}

const authorizeFrom = (ip: string, url: string) => call(url, { headers: { "cf-connecting-ip": ip } });

/** Spend `ip`'s whole budget with token requests naming unreachable metadata URLs (each one fetched). */
async function spendBudgetByRequests(ip: string): Promise<void> {
  for (let i = 0; i < BUDGET; i++) {
    const res = await tokenFrom(ip, {
      grant_type: "refresh_token",
      refresh_token: "x",
      client_id: unreachable(`${i}-${crypto.randomUUID()}`),
    });
    expect(res.status, JSON.stringify(res.body)).toBe(401); // the document could not be fetched
    expect(res.body.error).toBe("invalid_client");
  }
}

describe("client metadata document fetches are bounded per address", () => {
  let url: string;
  let dev: TestDeveloper;
  let alice: TestUser;

  beforeEach(async () => {
    ({ url, dev, alice } = await setupApp());
    await withinOneRateLimitWindow(60, 25_000);
  });

  it("refuses the token endpoint's next metadata URL with 429 once the address spent its budget", async () => {
    const ip = freshIp();
    await spendBudgetByRequests(ip);
    const over = await tokenFrom(ip, {
      grant_type: "refresh_token",
      refresh_token: "x",
      client_id: unreachable("one-more"),
    });
    expect(over.status).toBe(429);
    expect(over.retryAfter).toBe("60");
    expect(over.body).toMatchObject({ error: "temporarily_unavailable" });
    expect(over.body.error_description).toContain("client metadata");
    // HTTP Basic credentials and a client assertion's issuer name the client too.
    const basic = await tokenFrom(
      ip,
      { grant_type: "refresh_token", refresh_token: "x" },
      { authorization: `Basic ${btoa(`${encodeURIComponent(unreachable("basic"))}:secret`)}` },
    );
    expect(basic.status).toBe(429);
    const claims = btoa(JSON.stringify({ iss: unreachable("assertion") })).replace(/=+$/, "");
    const assertion = await tokenFrom(ip, {
      grant_type: "refresh_token",
      refresh_token: "x",
      client_assertion_type: "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
      client_assertion: `e30.${claims}.sig`,
    });
    expect(assertion.status).toBe(429);
    // A registered client (no fetch) from the same address is not refused; another address is not either.
    const registered = await tokenFrom(ip, {
      grant_type: "refresh_token",
      refresh_token: "x",
      client_id: await registerClient(),
    });
    expect(registered.status).toBe(400);
    expect(registered.body.error).toBe("invalid_grant");
    const elsewhere = await tokenFrom(freshIp(), {
      grant_type: "refresh_token",
      refresh_token: "x",
      client_id: unreachable("elsewhere"),
    });
    expect(elsewhere.status).toBe(401);
  });

  it("counts /authorize with a metadata URL against the same budget; a registered client's page still opens", async () => {
    const ip = freshIp();
    await spendBudget(ip);
    const { challenge } = await pkce();
    const page = await authorizeFrom(
      ip,
      authorizeUrl({ client_id: unreachable("page"), code_challenge: challenge, resource: url }),
    );
    expect(page.status).toBe(429);
    expect(page.headers.get("retry-after")).toBe("60");
    expect(await page.text()).toContain("client metadata");
    const registered = await authorizeFrom(
      ip,
      authorizeUrl({ client_id: await registerClient(), code_challenge: challenge, resource: url }),
    );
    expect(registered.status).toBe(200);
  });

  /** Put a public client's document for `clientId` in the provider's cache. */
  async function cacheDocument(clientId: string, name: string): Promise<Cache> {
    const document = {
      client_id: clientId,
      client_name: name,
      redirect_uris: [REDIRECT_URI],
      token_endpoint_auth_method: "none",
      grant_types: ["authorization_code", "refresh_token"],
    };
    const cache = await caches.open(CIMD_CACHE_NAME);
    await cache.put(
      clientId,
      new Response(JSON.stringify(document), {
        headers: { "content-type": "application/json", "cache-control": "public, max-age=600" },
      }),
    );
    return cache;
  }

  it("does not count the document of a client that was issued tokens (a hosted assistant's shared egress)", async () => {
    const ip = freshIp();
    const clientId = `https://assistant.example/${dev.projectId}/client.json`;
    const cache = await cacheDocument(clientId, "Hosted Assistant");
    const { verifier, challenge } = await pkce();
    const code = await signedInCode(
      { client_id: clientId, code_challenge: challenge, resource: url },
      {
        mode: "end_user",
        email: alice.email,
        password: alice.password,
      },
    );
    const issued = await tokenFrom(ip, {
      grant_type: "authorization_code",
      code,
      code_verifier: verifier,
      client_id: clientId,
      redirect_uri: REDIRECT_URI,
      resource: url,
    });
    expect(issued.status, JSON.stringify(issued.body)).toBe(200);
    // The document leaves the cache (no Cache-Control on a later fetch, say): each request fetches it.
    await cache.delete(clientId);
    await spendBudget(ip);
    const refreshed = await tokenFrom(ip, {
      grant_type: "refresh_token",
      refresh_token: issued.body.refresh_token,
      client_id: clientId,
    });
    // Not refused by the budget: the provider tried to fetch the document (unreachable here).
    expect(refreshed.status, JSON.stringify(refreshed.body)).not.toBe(429);
    expect(refreshed.body.error).toBe("invalid_client");
    // Another document from the same address still is.
    const other = await tokenFrom(ip, {
      grant_type: "refresh_token",
      refresh_token: "x",
      client_id: unreachable("not-issued"),
    });
    expect(other.status).toBe(429);
    // Other isolates learn it from OAUTH_KV (written after the response).
    await waitForKv(await acceptedDocumentKey(clientId));
  });

  it("does not exempt a document whose client only revoked a token (a 200 that issued nothing)", async () => {
    const ip = freshIp();
    const clientId = `https://assistant.example/${dev.projectId}/revoker-${crypto.randomUUID()}.json`;
    const cache = await cacheDocument(clientId, "Revoker");
    // RFC 7009: a revocation of an unknown token answers 200; a public client names itself alone.
    for (const grantType of [undefined, ""]) {
      const revoked = await tokenFrom(ip, {
        ...(grantType === undefined ? {} : { grant_type: grantType }),
        token: "made-up",
        client_id: clientId,
      });
      expect(revoked.status, JSON.stringify(revoked.body)).toBe(200);
    }
    await cache.delete(clientId);
    await spendBudget(ip);
    const next = await tokenFrom(ip, {
      grant_type: "refresh_token",
      refresh_token: "x",
      client_id: clientId,
    });
    expect(next.status, JSON.stringify(next.body)).toBe(429);
  });

  it("lets a document another isolate saw issued tokens past a spent budget (OAUTH_KV marker)", async () => {
    const ip = freshIp();
    const elsewhere = unreachable(`elsewhere-${crypto.randomUUID()}`);
    const kv = (env as unknown as { OAUTH_KV: KVNamespace }).OAUTH_KV;
    await spendBudget(ip);
    const before = await tokenFrom(ip, {
      grant_type: "refresh_token",
      refresh_token: "x",
      client_id: elsewhere,
    });
    expect(before.status).toBe(429);
    await kv.put(await acceptedDocumentKey(elsewhere), "1", { expirationTtl: 600 });
    const after = await tokenFrom(ip, {
      grant_type: "refresh_token",
      refresh_token: "x",
      client_id: elsewhere,
    });
    expect(after.status, JSON.stringify(after.body)).toBe(401); // fetched (and unreachable), not refused
    expect(after.body.error).toBe("invalid_client");
  });

  it("does not count a document the provider serves from its cache (no fetch happens)", async () => {
    const ip = freshIp();
    await spendBudget(ip);
    const clientId = `https://client.example/${dev.projectId}/cimd.json`;
    await cacheDocument(clientId, "Cached Client");
    const { challenge } = await pkce();
    const page = await authorizeFrom(
      ip,
      authorizeUrl({ client_id: clientId, code_challenge: challenge, resource: url }),
    );
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("Cached Client");
    const token = await tokenFrom(ip, {
      grant_type: "refresh_token",
      refresh_token: "x",
      client_id: clientId,
    });
    expect(token.status).toBe(400);
    expect(token.body.error).toBe("invalid_grant");
  });
});
