/**
 * The Worker's bindings, as declared in wrangler.toml (vars, KV, rate limiter) plus secrets.
 */
export interface Env {
  /** Postgres connection string (Neon in production; a placeholder locally). Secret. */
  DATABASE_URL: string;
  /** Local Neon-protocol endpoint (`npm run dev`, tests). When set, the driver talks to it. */
  LOCAL_DB_URL?: string;
  /** Deadline of one database round trip in ms (default 8000; tests use less). */
  DB_TIMEOUT_MS?: string;
  /** Host suffix of per-app MCP hostnames: `<slug>.<suffix>`. */
  APP_MCP_HOST_SUFFIX: string;
  /** Public base URL of the platform, used to build connection URLs. */
  PUBLIC_BASE_URL: string;
  APP_VERSION: string;
  /** Metadata cache keyed by project, validated against `meta_rev`. */
  META_KV: KVNamespace;
  /** OAuth storage: the provider's clients, grants and tokens, sign-in transactions (src/oauth). */
  OAUTH_KV: KVNamespace;
  /** Function invocations, app MCP callers on the default tier, sign-ups per email (6,000/min). */
  RATE_LIMITER?: RateLimit;
  /** App MCP callers of apps on the 600/min tier. */
  RATE_LIMITER_LOW?: RateLimit;
  /** App MCP callers of apps on the 60,000/min tier. */
  RATE_LIMITER_HIGH?: RateLimit;
  /** Strict auth limit (10/min): sign-ins per project and email, developer sign-ups per IP. */
  AUTH_RATE_LIMITER?: RateLimit;
  /** End-user sign-in and sign-up attempts per client IP (60/min). */
  AUTH_IP_RATE_LIMITER?: RateLimit;
  /**
   * Outbound policy for function URLs: `dev` also allows http and loopback (`npm run dev`, tests);
   * anything else (the default) is `strict` — https to public destinations only.
   */
  FUNCTION_URL_POLICY?: string;
}
