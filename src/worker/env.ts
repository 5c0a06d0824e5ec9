/**
 * The Worker's bindings. wrangler.toml's vars, KV namespaces, rate limiters and declared secrets come
 * from `Cloudflare.Env`, which `npm run types` (`wrangler types`) generates into
 * worker-configuration.d.ts; `npm run typecheck` fails when that file is out of date. Only what
 * wrangler.toml cannot declare is added here. What each binding is for: the comments in wrangler.toml.
 */
export interface Env extends WranglerEnv {
  /** Local Neon-protocol endpoint (`npm run dev`, tests). When set, the driver talks to it. */
  LOCAL_DB_URL?: string;
  /**
   * A second suffix whose hosts are served as the app hostnames under `APP_MCP_HOST_SUFFIX`
   * (`aliasedHost` in app.ts). `npm run dev` sets it to production's `mcp.amba.host`, its own suffix
   * being `mcp.localhost`; production leaves it unset.
   */
  APP_MCP_HOST_ALIAS?: string;
}
