/**
 * A hosted assistant connecting to a project's app MCP the spec's way, done by hand against a Worker
 * started like `npm run dev` (test/support/dev-server.ts): register a client named `clientName`,
 * open the authorize page, sign in as the project's developer, exchange the code (PKCE). For the
 * Node tests that need an OAuth grant to list and revoke (the `amba` CLI, the console in Chromium).
 */
import { createHash, randomBytes } from "node:crypto";
import { request } from "./dev-server.ts";

const REDIRECT_URI = "http://127.0.0.1:33418/callback";

/** A connected assistant: its access token and the id its grant is listed and revoked under. */
export interface ConnectedAssistant {
  accessToken: string;
  grantId: string;
}

/** Connect an assistant named `clientName` to `dev`'s project as its developer (throws unless it works). */
export async function connectAssistant(
  base: string,
  dev: { token: string; projectId: string },
  clientName: string,
): Promise<ConnectedAssistant> {
  const registered = await request(`${base}/oauth/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      client_name: clientName,
      redirect_uris: [REDIRECT_URI],
      token_endpoint_auth_method: "none",
      grant_types: ["authorization_code", "refresh_token"],
    }),
  });
  if (registered.status !== 201) throw new Error(`registration ${registered.status}`);
  const { client_id } = (await registered.json()) as { client_id: string };
  const verifier = randomBytes(32).toString("base64url");
  const authorize = new URL("/authorize", base);
  for (const [k, v] of Object.entries({
    response_type: "code",
    client_id,
    redirect_uri: REDIRECT_URI,
    code_challenge: createHash("sha256").update(verifier).digest("base64url"),
    code_challenge_method: "S256",
    state: "st4te",
    resource: `${base}/app/${dev.projectId}/mcp`,
  }))
    authorize.searchParams.set(k, v);
  const page = await request(authorize.href);
  const cookie = /amba_oauth_tx=[^;]+/.exec(page.headers.get("set-cookie") ?? "")?.[0] ?? "";
  const tx = /name="tx" value="([^"]+)"/.exec(await page.text())?.[1] ?? "";
  const signedIn = await request(`${base}/authorize`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", cookie },
    body: new URLSearchParams({ tx, action: "allow", mode: "developer", developer_token: dev.token }),
    redirect: "manual",
  });
  const code = new URL(signedIn.headers.get("location") ?? "http://x/").searchParams.get("code");
  if (!code) throw new Error(`sign-in refused (${signedIn.status})`);
  const exchanged = await request(`${base}/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "authorization_code", code, code_verifier: verifier, client_id }),
  });
  if (exchanged.status !== 200) throw new Error(`code exchange ${exchanged.status}`);
  const { access_token } = (await exchanged.json()) as { access_token: string };
  return { accessToken: access_token, grantId: access_token.split(":").slice(0, 2).join(".") };
}
