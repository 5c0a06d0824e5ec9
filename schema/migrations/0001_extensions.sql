-- pgvector backs `vector(N)` collection columns. Neon and the embedded database have it; a plain
-- Postgres without the extension still runs everything else (vector columns are then refused).
DO $$
BEGIN
  CREATE EXTENSION IF NOT EXISTS vector;
EXCEPTION WHEN OTHERS THEN
  RAISE NOTICE 'pgvector is not available: vector columns are disabled';
END
$$;
