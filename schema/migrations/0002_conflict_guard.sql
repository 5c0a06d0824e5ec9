-- A guard a statement inside a batch can call: when `ok` is not true it raises SQLSTATE 40001
-- (serialization_failure, "retry the transaction"), which rolls back the whole batch — DDL included.
-- Used by schema changes that read metadata first and must not apply it when it changed meanwhile.
CREATE OR REPLACE FUNCTION amba_guard(ok boolean, message text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF ok IS NOT TRUE THEN
    RAISE EXCEPTION USING ERRCODE = '40001', MESSAGE = message;
  END IF;
END
$$;
