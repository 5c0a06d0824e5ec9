-- OAuth access tokens revoked alone through RFC 7009 (revoked_oauth_tokens in schema/index.ts): the
-- token's SHA-256 (the provider's id for it, never the token) and its expiry. The provider deletes
-- such a token from Workers KV only, whose reads at other locations may show it for up to 60 s; the
-- statement that resolves an OAuth caller (src/worker/auth.ts) reads this table too, so the token is
-- refused everywhere at once. A row is kept until the token would have expired (an hour at most):
-- each such revocation's insert also deletes rows past their expiry (by the index below).
CREATE TABLE "revoked_oauth_tokens" (
	"token_id" text PRIMARY KEY NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "revoked_oauth_tokens_expires_at_idx" ON "revoked_oauth_tokens" USING btree ("expires_at");
