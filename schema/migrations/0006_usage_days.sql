-- Usage counters gain the UTC day (monthly = sum of days). drizzle-kit's output reordered by hand:
-- the column is added, existing rows get their period's first day (their day is unknown; their
-- month stays exact), then it becomes NOT NULL and joins the primary key.
ALTER TABLE "usage_counters" ADD COLUMN "day" date;--> statement-breakpoint
UPDATE "usage_counters" SET "day" = ("period" || '-01')::date;--> statement-breakpoint
ALTER TABLE "usage_counters" ALTER COLUMN "day" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "usage_counters" DROP CONSTRAINT "usage_counters_project_id_period_metric_shard_pk";--> statement-breakpoint
ALTER TABLE "usage_counters" ADD CONSTRAINT "usage_counters_project_id_period_metric_day_shard_pk" PRIMARY KEY("project_id","period","metric","day","shard");
