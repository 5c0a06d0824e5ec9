-- A function version may have no URL (src/functions/service.ts deployFunction): seed 004's metadata
-- `{name, mcp}` deploys a function, and its typed tool, before it has anywhere to run; invoking one
-- is a 409 `function_not_deployed` until a deploy gives it a URL. Dropping the constraint rewrites
-- nothing.
ALTER TABLE "function_versions" ALTER COLUMN "url" DROP NOT NULL;
