-- The per-project key function calls are signed with (src/functions/signing.ts). The default is
-- volatile, so adding the column rewrites the table and gives every existing project its own secret;
-- new projects get one the same way, and a rotation sets the column to DEFAULT again.
ALTER TABLE "projects" ADD COLUMN "function_signing_secret" text DEFAULT ('amba_fsig_' || encode(sha256(uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid())), 'hex')) NOT NULL;
