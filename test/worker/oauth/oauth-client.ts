/**
 * OAuth helpers for the Worker tests: the official MCP SDK client with an in-memory
 * `OAuthClientProvider` (its fetch goes to the Worker in-process), the sign-in form submitted the
 * way a browser would (GET the page, keep its cookie, POST the form), and the same protocol steps
 * by hand (registration, PKCE, authorize, token) for the negative cases.
 */
import { exports } from "cloudflare:workers";
import { type OAuthClientProvider, UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from "@modelcontextprotocol/sdk/shared/auth.js";

import { RECIPES_COLUMNS } from "../../fixtures.ts";
import {
  developerExposing,
  mcpPostHeaders,
  signupUser,
  type TestDeveloper,
  type TestUser,
} from "../helpers.ts";
import { vectorColumns } from "../pgvector.ts";

const RECIPES = {
  name: "recipes",
  columns: vectorColumns(RECIPES_COLUMNS),
  access: { read: "owner", write: "owner" },
};

/** A developer with an exposed owner-policy `recipes` collection and two end users. */
export async function setupApp(): Promise<{
  dev: TestDeveloper;
  alice: TestUser;
  bob: TestUser;
  url: string;
}> {
  const dev = await developerExposing(RECIPES);
  const alice = await signupUser(dev.projectId, dev.clientKey);
  const bob = await signupUser(dev.projectId, dev.clientKey);
  return { dev, alice, bob, url: `${BASE}/app/${dev.projectId}/mcp` };
}

const worker = (exports as unknown as { default: { fetch(req: Request): Promise<Response> } }).default;

/** The Worker, reached as `https://mcp.amba.dev` (PUBLIC_BASE_URL, the issuer). */
export const BASE = "https://mcp.amba.dev";
export const REDIRECT_URI = "http://127.0.0.1:33418/callback";

/** `fetch` into the Worker (relative paths resolve against BASE). */
export const call = (input: string | URL | Request, init?: RequestInit): Promise<Response> =>
  worker.fetch(new Request(typeof input === "string" ? new URL(input, BASE) : input, init));

/** How the test signs in on the page. */
export type SignIn =
  | { mode: "end_user"; email: string; password: string }
  | { mode: "developer"; developer_token: string };

/** The authorize page: its HTML, the transaction field and the cookie that binds it. */
export async function openAuthorizePage(
  url: string | URL,
): Promise<{ res: Response; html: string; cookie: string; tx: string }> {
  const res = await call(url.toString());
  const html = await res.text();
  const setCookie = res.headers.get("set-cookie") ?? "";
  const cookie = /(?:__Host-)?amba_oauth_tx=[^;]+/.exec(setCookie)?.[0] ?? "";
  const tx = /name="tx" value="([^"]+)"/.exec(html)?.[1] ?? "";
  return { res, html, cookie, tx };
}

/** Submit the page's form: returns the POST's response (a redirect back to the client on success). */
export async function submitSignIn(
  authorizationUrl: string | URL,
  signIn: SignIn,
  action: "allow" | "deny" = "allow",
): Promise<Response> {
  const { res, cookie, tx, html } = await openAuthorizePage(authorizationUrl);
  if (res.status !== 200) throw new Error(`authorize page ${res.status}: ${html.slice(0, 300)}`);
  return postForm(cookie, { tx, action, ...signIn });
}

/** POST the sign-in form with this cookie. */
export const postForm = (cookie: string, fields: Record<string, string>): Promise<Response> =>
  call("/authorize", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", cookie },
    body: new URLSearchParams(fields),
    redirect: "manual",
  });

/** The `code` of a redirect back to the client (throws with the page when there is none). */
export async function codeFrom(res: Response): Promise<string> {
  const location = res.headers.get("location");
  const code = location ? new URL(location).searchParams.get("code") : null;
  if (res.status !== 302 || !code) throw new Error(`no code: ${res.status} ${location} ${await res.text()}`);
  return code;
}

/** An in-memory OAuth client provider, as a desktop MCP host keeps one per server. */
export class MemoryOAuthProvider implements OAuthClientProvider {
  client?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier = "";
  authorizationUrl?: URL;

  get redirectUrl() {
    return REDIRECT_URI;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: "Test Assistant",
      redirect_uris: [REDIRECT_URI],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.client = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}

const transportFor = (url: string, provider: OAuthClientProvider) =>
  new StreamableHTTPClientTransport(new URL(url), { authProvider: provider, fetch: call });

/**
 * The whole spec flow through the SDK: connect → 401 → discovery → registration → authorize (the
 * test signs in on the page) → code → token → connected client.
 */
export async function connectWithOAuth(
  url: string,
  signIn: SignIn,
  provider = new MemoryOAuthProvider(),
): Promise<{ client: Client; provider: MemoryOAuthProvider }> {
  const first = transportFor(url, provider);
  const probe = new Client({ name: "oauth-test", version: "1.0.0" });
  try {
    await probe.connect(first);
    return { client: probe, provider };
  } catch (err) {
    if (!(err instanceof UnauthorizedError) || !provider.authorizationUrl) throw err;
  }
  const code = await codeFrom(await submitSignIn(provider.authorizationUrl, signIn));
  await first.finishAuth(code);
  const client = new Client({ name: "oauth-test", version: "1.0.0" });
  await client.connect(transportFor(url, provider));
  return { client, provider };
}

/** The parsed JSON of a tool result's text content. */
// biome-ignore lint/suspicious/noExplicitAny: tests assert the shape
export function resultJson(result: unknown): any {
  const content = (result as { content: { type: string; text: string }[] }).content;
  return JSON.parse(content[0]!.text);
}

/** A JSON-RPC `tools/list` POSTed by hand with a Bearer: the raw response. */
export const rawToolsList = (url: string, token: string): Promise<Response> =>
  call(url, {
    method: "POST",
    headers: mcpPostHeaders(token),
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
  });

// ── The protocol by hand ───────────────────────────────────────────────────────────────────────

const b64url = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes))
    .replaceAll("+", "-")
    .replaceAll("/", "_")
    .replace(/=+$/, "");

/** A PKCE verifier and its S256 challenge. */
export async function pkce(): Promise<{ verifier: string; challenge: string }> {
  const verifier = b64url(crypto.getRandomValues(new Uint8Array(32)));
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  return { verifier, challenge: b64url(digest) };
}

/** RFC 7591 registration of a public client (named `clientName`); its client_id. */
export async function registerClient(
  redirectUris = [REDIRECT_URI],
  clientName = "Hand Client",
): Promise<string> {
  const res = await call("/oauth/register", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      client_name: clientName,
      redirect_uris: redirectUris,
      token_endpoint_auth_method: "none",
      grant_types: ["authorization_code", "refresh_token"],
    }),
  });
  if (res.status !== 201) throw new Error(`registration ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { client_id: string }).client_id;
}

/** The authorization URL for these parameters (overrides replace or, with null, drop one). */
export function authorizeUrl(params: Record<string, string | null>): string {
  const url = new URL("/authorize", BASE);
  const all: Record<string, string | null> = {
    response_type: "code",
    redirect_uri: REDIRECT_URI,
    code_challenge_method: "S256",
    state: "st4te",
    ...params,
  };
  for (const [k, v] of Object.entries(all)) if (v !== null) url.searchParams.set(k, v);
  return url.toString();
}

/** Sign in on the authorize page for these parameters ({@link authorizeUrl}'s): the code it redirects back with. */
export async function signedInCode(params: Record<string, string | null>, signIn: SignIn): Promise<string> {
  return codeFrom(await submitSignIn(authorizeUrl(params), signIn));
}

/** The id a grant is listed and revoked under (`<subject>.<grant id>`), from one of its tokens. */
export const listedGrantId = (token: string): string => token.split(":").slice(0, 2).join(".");

/** POST /oauth/token with a form; status and JSON body. */
// biome-ignore lint/suspicious/noExplicitAny: tests assert the shape
export async function tokenRequest(fields: Record<string, string>): Promise<{ status: number; body: any }> {
  const res = await call("/oauth/token", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(fields),
  });
  return { status: res.status, body: await res.json() };
}

/** What {@link authorized} returns: the client and the tokens its code was exchanged for. */
export interface Authorized {
  clientId: string;
  access_token: string;
  refresh_token: string;
}

/**
 * Sign in on the page for `resource` (with `clientId`, else a client registered for this) and
 * exchange the code, with `exchange`'s fields added to the token request: the client and its
 * tokens (throws unless the exchange answers 200).
 */
export async function authorized(
  resource: string,
  signIn: SignIn,
  clientId?: string,
  exchange: Record<string, string> = {},
): Promise<Authorized> {
  const client = clientId ?? (await registerClient());
  const { verifier, challenge } = await pkce();
  const code = await signedInCode({ client_id: client, code_challenge: challenge, resource }, signIn);
  const res = await tokenRequest({
    grant_type: "authorization_code",
    code,
    code_verifier: verifier,
    client_id: client,
    ...exchange,
  });
  if (res.status !== 200) throw new Error(`code exchange ${res.status}: ${JSON.stringify(res.body)}`);
  return { clientId: client, ...(res.body as { access_token: string; refresh_token: string }) };
}
