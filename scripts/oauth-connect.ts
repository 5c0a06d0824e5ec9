/**
 * `node scripts/oauth-connect.ts <mcp url> <email> <password>` (or `… <mcp url> --developer <token>`):
 * a spec-following MCP client (the official SDK's `StreamableHTTPClientTransport` + an
 * `OAuthClientProvider`) connects to an MCP endpoint with no headers, follows the 401 to the
 * authorization server, registers itself, and completes the browser step by posting the sign-in
 * form the way a browser would. Prints the tools it sees. Works against `npm run dev` offline.
 */

import { type OAuthClientProvider, UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { OAuthClientInformationMixed, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";

const REDIRECT_URI = "http://127.0.0.1:33418/callback";

class MemoryProvider implements OAuthClientProvider {
  client?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier = "";
  authorizationUrl?: URL;
  readonly redirectUrl = REDIRECT_URI;
  readonly clientMetadata = {
    client_name: "amba oauth-connect",
    redirect_uris: [REDIRECT_URI],
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: "none",
  };
  clientInformation = () => this.client;
  saveClientInformation = (info: OAuthClientInformationMixed) => {
    this.client = info;
  };
  tokens = () => this.saved;
  saveTokens = (tokens: OAuthTokens) => {
    this.saved = tokens;
  };
  redirectToAuthorization = (url: URL) => {
    this.authorizationUrl = url;
  };
  saveCodeVerifier = (verifier: string) => {
    this.verifier = verifier;
  };
  codeVerifier = () => this.verifier;
}

/** The browser step: open the page, keep its cookie, post the form; the code from the redirect. */
async function signIn(authorizationUrl: URL, fields: Record<string, string>): Promise<string> {
  const page = await fetch(authorizationUrl);
  const html = await page.text();
  if (page.status !== 200) throw new Error(`authorize page answered ${page.status}`);
  const cookie = /amba_oauth_tx=[^;]+/.exec(page.headers.get("set-cookie") ?? "")?.[0] ?? "";
  const tx = /name="tx" value="([^"]+)"/.exec(html)?.[1] ?? "";
  const res = await fetch(new URL("/authorize", authorizationUrl), {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", cookie },
    body: new URLSearchParams({ tx, action: "allow", ...fields }),
    redirect: "manual",
  });
  const code = new URL(res.headers.get("location") ?? "http://x/").searchParams.get("code");
  if (!code) throw new Error(`sign-in refused (${res.status})`);
  return code;
}

async function main() {
  const [url, a, b] = process.argv.slice(2);
  if (!url || !a || !b)
    throw new Error("usage: oauth-connect <mcp url> <email> <password> | <mcp url> --developer <token>");
  const fields: Record<string, string> =
    a === "--developer"
      ? { mode: "developer", developer_token: b }
      : { mode: "end_user", email: a, password: b };
  const provider = new MemoryProvider();
  const first = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
  // An endpoint may answer without credentials (the platform MCP does, for its sign-up tool): then
  // no 401 comes, nothing is signed in, and the tools seen are the anonymous ones.
  let signedIn = false;
  try {
    await new Client({ name: "oauth-connect", version: "1.0.0" }).connect(first);
  } catch (err) {
    if (!(err instanceof UnauthorizedError) || !provider.authorizationUrl) throw err;
    process.stdout.write(`401 → signing in at ${provider.authorizationUrl.origin}/authorize\n`);
    await first.finishAuth(await signIn(provider.authorizationUrl, fields));
    signedIn = true;
  }
  const client = new Client({ name: "oauth-connect", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { authProvider: provider }));
  const { tools } = await client.listTools();
  const how = signedIn
    ? "connected with an OAuth access token"
    : "connected without signing in (the endpoint answered without credentials: no 401)";
  process.stdout.write(`${how}; tools: ${tools.map((t) => t.name).join(", ")}\n`);
  await client.close();
}

main().catch((err) => {
  process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
