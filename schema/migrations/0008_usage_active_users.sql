CREATE TABLE "usage_active_users" (
	"project_id" uuid NOT NULL,
	"period" text NOT NULL,
	"user_id" uuid NOT NULL,
	CONSTRAINT "usage_active_users_project_id_period_user_id_pk" PRIMARY KEY("project_id","period","user_id")
);
--> statement-breakpoint
ALTER TABLE "usage_active_users" ADD CONSTRAINT "usage_active_users_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "usage_active_users" ADD CONSTRAINT "usage_active_users_user_id_app_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."app_users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "usage_active_users_user_idx" ON "usage_active_users" USING btree ("user_id");