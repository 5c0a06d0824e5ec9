-- Events in the storage quota (src/events/service.ts, README "Decisions" → "Events"). Each event
-- keeps the size it counts (size_bytes: octet_length(name) + octet_length(properties::text) + 200,
-- the per-row overhead EVENT_ROW_OVERHEAD_BYTES), and app_event_bytes holds per project the sum of
-- its events' sizes in up to 16 shard rows: the ingest statement adds what it stored, the delete
-- statement subtracts what it deleted. Events stored before this migration are sized and summed here
-- (into shard 0).
CREATE TABLE "app_event_bytes" (
	"project_id" uuid NOT NULL,
	"shard" smallint NOT NULL,
	"bytes" bigint NOT NULL,
	CONSTRAINT "app_event_bytes_project_id_shard_pk" PRIMARY KEY("project_id","shard")
);
--> statement-breakpoint
ALTER TABLE "app_events" ADD COLUMN "size_bytes" integer;--> statement-breakpoint
UPDATE "app_events" SET "size_bytes" = octet_length("name") + octet_length("properties"::text) + 200;--> statement-breakpoint
ALTER TABLE "app_events" ALTER COLUMN "size_bytes" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "app_event_bytes" ADD CONSTRAINT "app_event_bytes_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
INSERT INTO "app_event_bytes" ("project_id", "shard", "bytes")
	SELECT "project_id", 0, sum("size_bytes") FROM "app_events" GROUP BY "project_id";
