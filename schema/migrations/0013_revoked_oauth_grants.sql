-- OAuth grants revoked in the last 31 days (revoked_oauth_grants in schema/index.ts). Workers KV,
-- where the authorization server keeps grants, may read a revoked grant as present for up to 60 s at
-- other locations; the statement that resolves an OAuth caller (src/worker/auth.ts) and the check at
-- every refresh read this table too, so a revocation ends the grant's tokens and refreshes at once.
-- Each revocation's insert also deletes rows past 31 days (by the index below): the longest anything
-- a grant issued can live is its refresh token's 30 days.
CREATE TABLE "revoked_oauth_grants" (
	"grant_id" text PRIMARY KEY NOT NULL,
	"revoked_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX "revoked_oauth_grants_revoked_at_idx" ON "revoked_oauth_grants" USING btree ("revoked_at");
