-- A server-side deadline for every statement the platform's role runs: the Worker aborts a database
-- round trip after DB_TIMEOUT_MS (8 s), but an aborted HTTP request does not stop its statement, so
-- without this a slow query kept a Postgres backend busy after its caller gave up. A role default
-- (ordinary roles may set their own), so it holds for every session Neon's pooler opens for the role,
-- including the HTTP path's; it takes effect for sessions started after this migration. The
-- statement is cancelled with SQLSTATE 57014, which the Worker answers as 503 `database_timeout`.
-- PGlite ignores statement_timeout (single-threaded, no timers); the local `pg` backend sets the same
-- 8 s on its connections.
ALTER ROLE CURRENT_USER SET statement_timeout = '8s';
