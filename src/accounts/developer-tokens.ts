/**
 * A developer's own tokens: list, create, revoke — so a leaked token can be rotated (create a new
 * one, switch to it, revoke the old one). Shared by the REST routes (/v1/admin/tokens…) and the
 * platform MCP's `amba_tokens_*` tools. A token is shown once, at creation (or sign-up); listings
 * carry neither secret nor digest. Another developer's token id answers 404, like an unknown one.
 * Revoking the token that makes the request is allowed (a leaked token must be able to end itself),
 * but never the developer's last live token: developers have no password and no recovery by email,
 * so that would lock them out of their account for good (409; create another token first).
 */
import { and, asc, eq, isNotNull, isNull, or, sql } from "drizzle-orm";
import { type DeveloperToken, developers, developerTokens } from "../../schema/index.ts";
import { UUID } from "../data/columns.ts";
import type { Db } from "../db.ts";
import { conflict, notFound } from "../errors.ts";
import { refuseAtQuota } from "../quota.ts";
import { parseInput } from "../validate.ts";
import { issueCredential } from "./crypto.ts";
import { iso } from "./projects.ts";
import { CreateDeveloperTokenSchema } from "./schemas.ts";

/** A developer token as listings show it; `current` marks the token the request came with. */
export interface DeveloperTokenView {
  id: string;
  name: string;
  created_at: string | null;
  revoked: boolean;
  revoked_at: string | null;
  current: boolean;
}

/**
 * Most live (unrevoked) tokens one developer may hold: enough for a token per machine or agent,
 * few enough that a forgotten one is noticed in the listing.
 */
export const MAX_LIVE_DEVELOPER_TOKENS = 20;

/**
 * Most token rows one developer may hold, revoked ones included (they stay, to be listed): without
 * it create-and-revoke would add rows to a shared table without bound, as for client keys.
 */
export const MAX_DEVELOPER_TOKENS = 1000;

const tokenView =
  (currentId: string | null) =>
  (t: Pick<DeveloperToken, "id" | "name" | "createdAt" | "revokedAt">): DeveloperTokenView => ({
    id: t.id,
    name: t.name,
    created_at: iso(t.createdAt),
    revoked: t.revokedAt !== null,
    revoked_at: iso(t.revokedAt),
    current: t.id === currentId,
  });

/** The developer's tokens, oldest first, without secrets; `currentId` is the caller's token. */
export async function listDeveloperTokens(
  db: Db,
  developerId: string,
  currentId: string | null,
): Promise<DeveloperTokenView[]> {
  const rows = await db
    .select()
    .from(developerTokens)
    .where(eq(developerTokens.developerId, developerId))
    .orderBy(asc(developerTokens.createdAt), asc(developerTokens.id));
  return rows.map(tokenView(currentId));
}

/** New developer token; `token` is the only time the secret is shown. 403 past either quota. */
export async function createDeveloperToken(
  db: Db,
  developerId: string,
  body: unknown,
): Promise<DeveloperTokenView & { token: string }> {
  const input = parseInput(CreateDeveloperTokenSchema, body);
  const owned = sql`${developerTokens} WHERE ${developerTokens.developerId} = ${developerId}`;
  await refuseAtQuota(
    db,
    sql`${owned} AND ${isNull(developerTokens.revokedAt)}`,
    MAX_LIVE_DEVELOPER_TOKENS,
    `a developer holds at most ${MAX_LIVE_DEVELOPER_TOKENS} live tokens; revoke one before creating another`,
  );
  await refuseAtQuota(
    db,
    owned,
    MAX_DEVELOPER_TOKENS,
    `a developer holds at most ${MAX_DEVELOPER_TOKENS} tokens, revoked ones included`,
  );
  const token = await issueCredential("developer");
  const [row] = await db
    .insert(developerTokens)
    .values({ id: token.id, developerId, secretHash: token.secretHash, name: input.name ?? "default" })
    .returning();
  return { ...tokenView(null)(row as DeveloperToken), token: token.token };
}

/** The 409 message of a refused revocation of the last live token. */
export const LAST_TOKEN_MESSAGE =
  "this is your last live developer token: revoking it would lock you out of your account for good (there is no recovery by email). Create another token first (POST /v1/admin/tokens, amba_tokens_create, `amba tokens create`), then revoke this one";

/**
 * Revoke one of the developer's tokens (idempotent: the first revocation time is kept); 404 for an
 * unknown or malformed id and for another developer's token; 409 when it is the developer's last
 * live token. OAuth grants made with the token end at their next refresh; the token itself fails
 * at once in this isolate, within `CREDENTIAL_TTL_MS` in others.
 *
 * One round trip, one transaction: the developer's row is locked first, so two revocations of the
 * developer's last two tokens run one after the other and the second sees the first (each statement
 * of the batch reads after the lock is held) — without it both would see the other token live.
 */
export async function revokeDeveloperToken(
  db: Db,
  developerId: string,
  tokenId: string,
  currentId: string | null,
): Promise<DeveloperTokenView> {
  if (!UUID.test(tokenId)) throw notFound("developer token not found");
  const mine = and(eq(developerTokens.id, tokenId), eq(developerTokens.developerId, developerId));
  const anotherLive = sql`exists (select 1 from developer_tokens other where other.developer_id = ${developerId} and other.id <> ${tokenId} and other.revoked_at is null)`;
  const [, [row], [exists]] = await db.batch([
    db.select({ id: developers.id }).from(developers).where(eq(developers.id, developerId)).for("update"),
    db
      .update(developerTokens)
      .set({ revokedAt: sql`coalesce(${developerTokens.revokedAt}, now())` })
      .where(and(mine, or(isNotNull(developerTokens.revokedAt), anotherLive)))
      .returning(),
    db.select({ id: developerTokens.id }).from(developerTokens).where(mine),
  ]);
  if (row) return tokenView(currentId)(row);
  if (exists) throw conflict(LAST_TOKEN_MESSAGE);
  throw notFound("developer token not found");
}
