/**
 * The Worker's bindings, as declared in wrangler.toml (vars, KV, rate limiter) plus secrets.
 */
export interface Env {
  /** Postgres connection string (Neon in production; a placeholder locally). Secret. */
  DATABASE_URL: string;
  /** Local Neon-protocol endpoint (`npm run dev`, tests). When set, the driver talks to it. */
  LOCAL_DB_URL?: string;
  /** Host suffix of per-app MCP hostnames: `<slug>.<suffix>`. */
  APP_MCP_HOST_SUFFIX: string;
  /** Public base URL of the platform, used to build connection URLs. */
  PUBLIC_BASE_URL: string;
  APP_VERSION: string;
  /** Metadata cache keyed by project, validated against `meta_rev`. */
  META_KV: KVNamespace;
  /** OAuth storage: the provider's clients, grants and tokens, sign-in transactions (src/oauth). */
  OAUTH_KV: KVNamespace;
  RATE_LIMITER?: RateLimit;
}
