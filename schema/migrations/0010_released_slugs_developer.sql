ALTER TABLE "released_slugs" ADD COLUMN "developer_id" uuid;--> statement-breakpoint
-- The cooldown of migration 0009, by developer rather than by project: a release records the
-- developer who owned the project, and that developer may claim the slug back at once for any of
-- their projects (a project deleted and made again, a hostname moved between one's own apps). Any
-- other developer's project still waits 30 days. A project's delete releases its slug explicitly
-- before the row goes (src/accounts/projects.ts), while the project — and so its developer — can
-- still be read; the cascade's release below then finds no slug left, and a release that cannot
-- tell its developer (none recorded) stays bound to the project alone, as before.
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
      DELETE FROM released_slugs WHERE slug = new_slug RETURNING project_id, developer_id, released_at INTO held;
      IF held.project_id <> NEW.project_id
        AND held.released_at > now() - interval '30 days'
        AND (held.developer_id IS NULL
          OR held.developer_id IS DISTINCT FROM (SELECT developer_id FROM projects WHERE id = NEW.project_id)) THEN
        RAISE EXCEPTION USING ERRCODE = 'ZSLUG',
          MESSAGE = format('slug %L was released by another developer less than 30 days ago', new_slug),
          DETAIL = to_char((held.released_at + interval '30 days') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"');
      END IF;
    END IF;
    IF old_slug IS NOT NULL THEN
      DELETE FROM released_slugs WHERE released_at < now() - interval '30 days';
      INSERT INTO released_slugs (slug, project_id, developer_id, released_at)
        VALUES (old_slug, OLD.project_id, (SELECT developer_id FROM projects WHERE id = OLD.project_id), now())
        ON CONFLICT (slug) DO UPDATE
          SET project_id = EXCLUDED.project_id, developer_id = EXCLUDED.developer_id, released_at = EXCLUDED.released_at;
    END IF;
  END IF;
  IF TG_OP = 'DELETE' THEN
    RETURN OLD;
  END IF;
  RETURN NEW;
END
$$;
