-- Events an app's client code sends (POST /v1/events; app_events in schema/index.ts). Ids are
-- UUIDv7 minted at ingest: (project_id, id) lists a project's events newest first, and
-- (project_id, name, id) the same filtered by name. user_id is the session's end user, or null;
-- not a foreign key, so an event outlives its user. A project's events go with the project.
CREATE TABLE "app_events" (
	"id" uuid PRIMARY KEY NOT NULL,
	"project_id" uuid NOT NULL,
	"name" text NOT NULL,
	"properties" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"user_id" uuid,
	"occurred_at" timestamp with time zone NOT NULL,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "app_events" ADD CONSTRAINT "app_events_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "app_events_project_id_idx" ON "app_events" USING btree ("project_id","id");--> statement-breakpoint
CREATE INDEX "app_events_project_name_id_idx" ON "app_events" USING btree ("project_id","name","id");