/**
 * A statement Postgres cancelled at the role's `statement_timeout` (SQLSTATE 57014, migration 0007)
 * is a 503 `database_timeout` like a missed Worker deadline — not an unexpected 500. The errors are
 * the driver's and drizzle's own classes, wrapped the way a failed query reaches the services.
 */
import { NeonDbError } from "@neondatabase/serverless";
import { DrizzleQueryError } from "drizzle-orm/errors";
import { describe, expect, it } from "vitest";
import { mapDatabaseError } from "../../src/data/service.ts";
import { DatabaseTimeoutError, toAppError, toolFailure } from "../../src/errors.ts";

function cancelled(): Error {
  const pg = new NeonDbError("canceling statement due to statement timeout");
  pg.code = "57014";
  return new DrizzleQueryError("select pg_sleep(10)", [], pg);
}

describe("a statement cancelled by Postgres", () => {
  it("is 503 database_timeout through the data service's mapping and the renderers", () => {
    const err = mapDatabaseError(cancelled());
    const appError = toAppError(err);
    expect(appError).toBeInstanceOf(DatabaseTimeoutError);
    expect(appError?.status).toBe(503);
    expect(toolFailure(err)?.value.error).toEqual({
      code: "database_timeout",
      message: "the database cancelled the statement at its time limit; try again, or narrow the query",
    });
  });

  it("leaves other database errors unexpected", () => {
    const pg = new NeonDbError("internal error");
    pg.code = "XX000";
    expect(toAppError(new DrizzleQueryError("select 1", [], pg))).toBeNull();
  });
});
