/**
 * The `/authorize` form's one-time transactions: the page's view opens one in `OAUTH_KV` (keeping
 * the authorization request's query), the form posts it back beside the browser's cookie
 * (src/worker/routes/oauth.ts), and the sign-in that completes or denies it closes it. Unknown,
 * expired or used, it is no transaction: the form expired.
 */
import { randomSecret } from "../accounts/crypto.ts";
import type { OAuthEnv } from "./server.ts";

/** How long a sign-in page's form stays usable (the cookie lives as long). */
export const SIGNIN_TX_TTL_S = 600;

const txKey = (tx: string) => `amba-oauth:tx:${tx}`;

/** Open a transaction for the authorization request whose query is `query`; its id. */
export async function openSigninTransaction(env: OAuthEnv, query: string): Promise<string> {
  const tx = randomSecret();
  await env.OAUTH_KV.put(txKey(tx), JSON.stringify({ query }), { expirationTtl: SIGNIN_TX_TTL_S });
  return tx;
}

/** The authorization request's query a transaction keeps; null when it is unknown, expired or closed. */
export const signinTransaction = (env: OAuthEnv, tx: string): Promise<{ query: string } | null> =>
  env.OAUTH_KV.get<{ query: string }>(txKey(tx), { type: "json" });

/** Close a transaction: its form cannot be posted again. */
export const closeSigninTransaction = (env: OAuthEnv, tx: string): Promise<void> =>
  env.OAUTH_KV.delete(txKey(tx));
