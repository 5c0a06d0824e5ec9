/**
 * Platform tables. Collections themselves are real tables in each project's own Postgres schema
 * (`app_<project id hex>`), created by the collections service, not here.
 */
import { sql } from "drizzle-orm";
import {
  bigint,
  boolean,
  date,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  smallint,
  text,
  timestamp,
  unique,
  uuid,
} from "drizzle-orm/pg-core";

const createdAt = () => timestamp("created_at", { withTimezone: true }).notNull().defaultNow();

export const developers = pgTable("developers", {
  id: uuid("id").primaryKey().defaultRandom(),
  email: text("email").notNull().unique(),
  createdAt: createdAt(),
});

/** Developer bearer tokens: `amba_dev_<id hex>_<secret>`, shown once; only sha-256(secret) is stored. */
export const developerTokens = pgTable(
  "developer_tokens",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    developerId: uuid("developer_id")
      .notNull()
      .references(() => developers.id, { onDelete: "cascade" }),
    secretHash: text("secret_hash").notNull(),
    name: text("name").notNull().default("default"),
    createdAt: createdAt(),
    revokedAt: timestamp("revoked_at", { withTimezone: true }),
  },
  (t) => [index("developer_tokens_developer_idx").on(t.developerId)],
);

export const projects = pgTable(
  "projects",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    developerId: uuid("developer_id")
      .notNull()
      .references(() => developers.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    /** Bumped by every change to collections, functions, exposure or config (live tool generation). */
    metaRev: bigint("meta_rev", { mode: "number" }).notNull().default(1),
    /**
     * The key the platform signs its calls to this project's functions with (`x-amba-signature`,
     * src/functions/signing.ts): `amba_fsig_` + 64 hex digits of SHA-256 over two random uuids
     * (244 random bits, from Postgres's strong random source). The column default makes one for
     * every new project and, in the migration, every existing one; rotation sets it to DEFAULT again.
     */
    functionSigningSecret: text("function_signing_secret")
      .notNull()
      .default(
        sql`('amba_fsig_' || encode(sha256(uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid())), 'hex'))`,
      ),
    /**
     * The secret a rotation with an overlap replaced (`previous_valid_for_seconds` > 0): calls are
     * signed with it too, after the current one, until `previous_signing_secret_expires_at`, so
     * deployed functions keep verifying while their owner rolls the new one out. Both null when
     * there is none; an expired pair is ignored (and overwritten by the next rotation).
     */
    previousSigningSecret: text("previous_signing_secret"),
    previousSigningSecretExpiresAt: timestamp("previous_signing_secret_expires_at", { withTimezone: true }),
    createdAt: createdAt(),
  },
  (t) => [index("projects_developer_idx").on(t.developerId)],
);

/** Client keys (`X-Api-Key`): `amba_ck_<id hex>_<secret>`, only sha-256(secret) stored. */
export const clientKeys = pgTable(
  "client_keys",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    projectId: uuid("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    secretHash: text("secret_hash").notNull(),
    name: text("name").notNull().default("default"),
    createdAt: createdAt(),
    revokedAt: timestamp("revoked_at", { withTimezone: true }),
  },
  (t) => [index("client_keys_project_idx").on(t.projectId)],
);

/** End users of an app. Password: PBKDF2-SHA256 with a per-user salt. */
export const appUsers = pgTable(
  "app_users",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    projectId: uuid("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    email: text("email").notNull(),
    passwordHash: text("password_hash").notNull(),
    passwordSalt: text("password_salt").notNull(),
    passwordIterations: integer("password_iterations").notNull(),
    createdAt: createdAt(),
  },
  (t) => [unique("app_users_project_email_key").on(t.projectId, t.email)],
);

/** End-user sessions: `amba_sess_<id hex>_<secret>`, only sha-256(secret) stored; expiring, revocable. */
export const sessions = pgTable(
  "sessions",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    projectId: uuid("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    userId: uuid("user_id")
      .notNull()
      .references(() => appUsers.id, { onDelete: "cascade" }),
    secretHash: text("secret_hash").notNull(),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
    createdAt: createdAt(),
    revokedAt: timestamp("revoked_at", { withTimezone: true }),
  },
  (t) => [index("sessions_user_idx").on(t.userId)],
);

/** Collection metadata; the rows live in the project's schema, table named after the collection. */
export const collections = pgTable(
  "collections",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    projectId: uuid("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    /** Column specs (see src/data/columns.ts). */
    columns: jsonb("columns").notNull().default(sql`'[]'::jsonb`),
    /** `{read: "public"|"owner", write: "owner"|"developer"}` */
    access: jsonb("access").notNull(),
    createdAt: createdAt(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [unique("collections_project_name_key").on(t.projectId, t.name)],
);

export const functions = pgTable(
  "functions",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    projectId: uuid("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    activeVersion: integer("active_version").notNull(),
    createdAt: createdAt(),
  },
  (t) => [unique("functions_project_name_key").on(t.projectId, t.name)],
);

export const functionVersions = pgTable(
  "function_versions",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    functionId: uuid("function_id")
      .notNull()
      .references(() => functions.id, { onDelete: "cascade" }),
    version: integer("version").notNull(),
    /** Where calls are forwarded; null until a deploy gives one (the function exists, cannot run yet). */
    url: text("url"),
    /** `{description, input_schema}` as declared at deploy time, or null. */
    mcp: jsonb("mcp"),
    createdAt: createdAt(),
  },
  (t) => [unique("function_versions_function_version_key").on(t.functionId, t.version)],
);

/**
 * App-MCP surface config: kill switch, auth mode, hostname slug, the exposure allowlist, the
 * browser origins allowed to call the endpoint (CORS) and the caller rate-limit tier.
 */
export const appMcpConfigs = pgTable("app_mcp_configs", {
  projectId: uuid("project_id")
    .primaryKey()
    .references(() => projects.id, { onDelete: "cascade" }),
  enabled: boolean("enabled").notNull().default(true),
  /** `all` | `client_only` | `developer_only` */
  authMode: text("auth_mode").notNull().default("all"),
  slug: text("slug").unique(),
  exposedCollections: text("exposed_collections").array().notNull().default(sql`'{}'::text[]`),
  exposedFunctions: text("exposed_functions").array().notNull().default(sql`'{}'::text[]`),
  /** Exact origins (`https://app.example.com`) whose pages may call the app MCP. */
  allowedOrigins: text("allowed_origins").array().notNull().default(sql`'{}'::text[]`),
  /** Calls per minute and caller on the app MCP: one of the tiers in src/app-mcp/admin.ts. */
  rateLimitPerMinute: integer("rate_limit_per_minute").notNull().default(6000),
  updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
});

/**
 * App-MCP hostname slugs given up in the last 30 days (set to null or to another slug, or the project
 * deleted), with the project and developer that held them: another developer's project cannot claim
 * one until 30 days after its release, so MCP hosts and OAuth clients still configured with
 * `<slug>.<suffix>` never reach a new tenant's app or sign-in page; the developer who released it
 * may take it back at once, for that project or another of theirs (a project deleted and made again,
 * a hostname moved between one's own apps). Written and checked by the `app_mcp_configs_slug_cooldown`
 * trigger (migrations 0009, 0010), never by the services. No foreign key: a row outlives its project.
 * Older rows mean nothing and are purged on later releases.
 */
export const releasedSlugs = pgTable(
  "released_slugs",
  {
    slug: text("slug").primaryKey(),
    projectId: uuid("project_id").notNull(),
    /** The developer who owned that project (null for releases recorded before migration 0010). */
    developerId: uuid("developer_id"),
    releasedAt: timestamp("released_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index("released_slugs_released_at_idx").on(t.releasedAt),
    // A developer's reservations, newest first: at most 100 are kept (migration 0018).
    index("released_slugs_developer_id_released_at_idx").on(t.developerId, t.releasedAt),
  ],
);

/**
 * OAuth grants revoked in the last 31 days (src/oauth/grants.ts,
 * src/worker/routes/oauth.ts). The authorization server keeps grants in Workers KV, whose reads may
 * be up to 60 s stale at other locations; a row here, read in the one statement that resolves an
 * OAuth caller (src/worker/auth.ts), refuses a revoked grant's tokens and refreshes everywhere at
 * once. Kept as long as anything that grant issued could live (its refresh token: 30 days), pruned
 * by each revocation's own insert.
 */
export const revokedOauthGrants = pgTable(
  "revoked_oauth_grants",
  {
    grantId: text("grant_id").primaryKey(),
    revokedAt: timestamp("revoked_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index("revoked_oauth_grants_revoked_at_idx").on(t.revokedAt)],
);

/**
 * OAuth access tokens revoked alone (RFC 7009 at `/oauth/token`, src/worker/routes/oauth.ts) while
 * their grant lives on: the token's id (its SHA-256, hex — the provider's own id for it, never the
 * token) and when it would have expired. The provider deletes the token from Workers KV only, whose
 * reads elsewhere may show it for up to 60 s; a row here, read in the one statement that resolves an
 * OAuth caller (src/worker/auth.ts), refuses it everywhere at once. Kept until the token's own
 * expiry (an hour at most), pruned by each such revocation's own insert.
 */
export const revokedOauthTokens = pgTable(
  "revoked_oauth_tokens",
  {
    tokenId: text("token_id").primaryKey(),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
  },
  (t) => [index("revoked_oauth_tokens_expires_at_idx").on(t.expiresAt)],
);

/**
 * Events an app's client code sent (`POST /v1/events`, src/events/service.ts): a name, optional JSON
 * properties, the end user of the session they came with (null without one; not a foreign key, so
 * an event outlives its user) and when it happened (the client's `timestamp`, else when it was
 * received). Ids are UUIDv7 minted at ingest, so listing newest first is a walk of the
 * (project, id) index backwards; the (project, name, id) index serves the `?name=` filter.
 */
export const appEvents = pgTable(
  "app_events",
  {
    id: uuid("id").primaryKey(),
    projectId: uuid("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    properties: jsonb("properties").notNull().default(sql`'{}'::jsonb`),
    userId: uuid("user_id"),
    occurredAt: timestamp("occurred_at", { withTimezone: true }).notNull(),
    receivedAt: timestamp("received_at", { withTimezone: true }).notNull().defaultNow(),
    /**
     * What the event counts in its project's storage quota, fixed when it is stored: its name's and
     * properties' bytes plus a per-row overhead (`EVENT_ROW_OVERHEAD_BYTES`). The ingest adds it to
     * `app_event_bytes`, a delete subtracts the same number (migration 0016).
     */
    sizeBytes: integer("size_bytes").notNull(),
  },
  (t) => [
    index("app_events_project_id_idx").on(t.projectId, t.id),
    index("app_events_project_name_id_idx").on(t.projectId, t.name, t.id),
  ],
);

/**
 * The bytes a project's stored events count in its storage quota (src/events/service.ts): the sum
 * of its rows is the sum of its events' `size_bytes`, kept so by the statements that store and
 * delete events (each adds or subtracts what it stored or deleted in the same statement). Sharded
 * like `usage_counters`, so concurrent ingests of one project rarely wait on one row lock; a read
 * sums at most `EVENT_BYTE_SHARDS` rows.
 */
export const appEventBytes = pgTable(
  "app_event_bytes",
  {
    projectId: uuid("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    shard: smallint("shard").notNull(),
    bytes: bigint("bytes", { mode: "number" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.shard] })],
);

/**
 * Ids of the metering batches already added to `usage_counters` (src/usage/metering.ts): a batch
 * retried after a lost answer is recognised and not counted twice. Pruned after a week.
 */
export const usageBatches = pgTable(
  "usage_batches",
  {
    id: uuid("id").primaryKey(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index("usage_batches_created_at_idx").on(t.createdAt)],
);

/**
 * Usage per project, billing period (`YYYY-MM`), metric (e.g. `agent_tool_calls`), UTC day and
 * shard. A month is the sum of its days: the billing read keeps its key prefix (project, period),
 * the daily chart reads the same rows by day, and one flush still writes one table.
 */
export const usageCounters = pgTable(
  "usage_counters",
  {
    projectId: uuid("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    period: text("period").notNull(),
    metric: text("metric").notNull(),
    /**
     * The UTC day of the counted calls, inside `period`. Rows from before days were metered
     * (migration 0006) carry their period's first day.
     */
    day: date("day", { mode: "string" }).notNull(),
    /** Concurrent flushes spread over shards (src/usage/metering.ts); reads sum over them. */
    shard: smallint("shard").notNull().default(0),
    value: bigint("value", { mode: "number" }).notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.period, t.metric, t.day, t.shard] })],
);

/**
 * Monthly active end users: one row per project, billing period (`YYYY-MM`) and end user who signed
 * up, signed in or called the app (REST data routes, function invoke, app MCP) in that period. The
 * billing view counts them as `mau`; written with the usage flush (src/usage/metering.ts).
 */
export const usageActiveUsers = pgTable(
  "usage_active_users",
  {
    projectId: uuid("project_id")
      .notNull()
      .references(() => projects.id, { onDelete: "cascade" }),
    period: text("period").notNull(),
    userId: uuid("user_id")
      .notNull()
      .references(() => appUsers.id, { onDelete: "cascade" }),
  },
  // user_id indexed: deleting a project cascades through its users, each delete looks up its rows.
  (t) => [
    primaryKey({ columns: [t.projectId, t.period, t.userId] }),
    index("usage_active_users_user_idx").on(t.userId),
  ],
);

export type Developer = typeof developers.$inferSelect;
export type DeveloperToken = typeof developerTokens.$inferSelect;
export type Project = typeof projects.$inferSelect;
export type ClientKey = typeof clientKeys.$inferSelect;
export type AppUser = typeof appUsers.$inferSelect;
export type Session = typeof sessions.$inferSelect;
export type CollectionRow = typeof collections.$inferSelect;
export type FunctionRow = typeof functions.$inferSelect;
export type FunctionVersion = typeof functionVersions.$inferSelect;
export type AppMcpConfig = typeof appMcpConfigs.$inferSelect;
export type UsageCounter = typeof usageCounters.$inferSelect;
export type AppEvent = typeof appEvents.$inferSelect;
