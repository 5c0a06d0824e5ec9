CREATE TABLE "usage_batches" (
	"id" uuid PRIMARY KEY NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "app_mcp_configs" ADD COLUMN "rate_limit_per_minute" integer DEFAULT 6000 NOT NULL;--> statement-breakpoint
CREATE INDEX "usage_batches_created_at_idx" ON "usage_batches" USING btree ("created_at");