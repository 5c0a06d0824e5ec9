CREATE INDEX "released_slugs_developer_id_released_at_idx" ON "released_slugs" USING btree ("developer_id","released_at");--> statement-breakpoint
-- The cooldown of migrations 0009 and 0010, bounded per developer: a developer keeps reserved only
-- their 100 newest releases (as many slugs as they may have projects, MAX_PROJECTS_PER_DEVELOPER in
-- src/accounts/projects.ts); a release past that frees their oldest reservation. Every release
-- reserved its slug, and one project may change its slug as often as the control-plane rate limit
-- allows: one project reserved any number of names for 30 days, that no other developer could take
-- (test/worker/tenant-red3.test.ts). A developer who deletes all their projects still keeps every
-- one of their slugs reserved. The index serves that count (and bounds its scan to one developer's rows).
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
      -- A developer keeps at most 100 reservations (MAX_PROJECTS_PER_DEVELOPER): the newest.
      DELETE FROM released_slugs WHERE slug IN (
        SELECT slug FROM released_slugs
        WHERE developer_id = (SELECT developer_id FROM projects WHERE id = OLD.project_id)
        ORDER BY released_at DESC, slug
        OFFSET 100);
    END IF;
  END IF;
  IF TG_OP = 'DELETE' THEN
    RETURN OLD;
  END IF;
  RETURN NEW;
END
$$;
