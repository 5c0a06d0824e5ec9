-- A rotation with an overlap (src/functions/service.ts rotateSigningSecret) keeps the replaced function
-- signing secret and when it stops being signed with; both null outside an overlap. Nullable, no
-- default: adding them rewrites nothing.
ALTER TABLE "projects" ADD COLUMN "previous_signing_secret" text;--> statement-breakpoint
ALTER TABLE "projects" ADD COLUMN "previous_signing_secret_expires_at" timestamp with time zone;