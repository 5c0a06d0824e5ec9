CREATE TABLE "released_slugs" (
	"slug" text PRIMARY KEY NOT NULL,
	"project_id" uuid NOT NULL,
	"released_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX "released_slugs_released_at_idx" ON "released_slugs" USING btree ("released_at");--> statement-breakpoint
-- The hostname slug cooldown (released_slugs in schema/index.ts): on every change of a project's
-- slug, and on the delete of its config row (the project's delete cascades to it), in the statement
-- that makes the change — no service can forget it and nothing runs in between.
--   Releasing a slug records it with the project and the time (and purges records past 30 days).
--   Claiming one removes its record; when another project released it less than 30 days ago the
--   statement fails with SQLSTATE ZSLUG instead, its DETAIL the UTC time the slug becomes free.
-- Both take a transaction lock per slug first (in slug order, so two changes never wait on each other
-- in a circle): a claim racing the release of the same slug waits for it and then sees its record,
-- under READ COMMITTED each statement of the function reads the latest committed rows.
-- Fires on INSERT too: an upsert runs the INSERT trigger with the proposed row before its update.
CREATE OR REPLACE FUNCTION amba_slug_cooldown() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  old_slug text := CASE WHEN TG_OP <> 'INSERT' THEN OLD.slug END;
  new_slug text := CASE WHEN TG_OP <> 'DELETE' THEN NEW.slug END;
  locked text;
  held record;
BEGIN
  IF old_slug IS DISTINCT FROM new_slug THEN
    FOR locked IN SELECT s FROM unnest(ARRAY[old_slug, new_slug]) AS s WHERE s IS NOT NULL ORDER BY s LOOP
      -- class 0x736c7567: ASCII "slug"
      PERFORM pg_advisory_xact_lock(1936487783, hashtext(locked));
    END LOOP;
    IF new_slug IS NOT NULL THEN
      DELETE FROM released_slugs WHERE slug = new_slug RETURNING project_id, released_at INTO held;
      IF held.project_id <> NEW.project_id AND held.released_at > now() - interval '30 days' THEN
        RAISE EXCEPTION USING ERRCODE = 'ZSLUG',
          MESSAGE = format('slug %L was released by another project less than 30 days ago', new_slug),
          DETAIL = to_char((held.released_at + interval '30 days') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"');
      END IF;
    END IF;
    IF old_slug IS NOT NULL THEN
      DELETE FROM released_slugs WHERE released_at < now() - interval '30 days';
      INSERT INTO released_slugs (slug, project_id, released_at) VALUES (old_slug, OLD.project_id, now())
        ON CONFLICT (slug) DO UPDATE SET project_id = EXCLUDED.project_id, released_at = EXCLUDED.released_at;
    END IF;
  END IF;
  IF TG_OP = 'DELETE' THEN
    RETURN OLD;
  END IF;
  RETURN NEW;
END
$$;
--> statement-breakpoint
CREATE TRIGGER app_mcp_configs_slug_cooldown BEFORE INSERT OR UPDATE OF slug OR DELETE ON app_mcp_configs
FOR EACH ROW EXECUTE FUNCTION amba_slug_cooldown();
