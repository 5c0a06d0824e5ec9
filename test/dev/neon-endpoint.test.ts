/**
 * The local endpoint, exercised through the real Neon driver (the Worker's path): types come back
 * parsed as they would from Neon, transactions roll back on error, Postgres errors keep their fields.
 */
import { neon, neonConfig } from "@neondatabase/serverless";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SqlBackend } from "../../src/dev/backends.ts";
import { openFromSnapshot } from "../../src/dev/embedded.ts";
import { type NeonEndpoint, startNeonEndpoint } from "../../src/dev/neon-endpoint.ts";

let backend: SqlBackend;
let endpoint: NeonEndpoint;
let sql: ReturnType<typeof neon>;

beforeAll(async () => {
  backend = await openFromSnapshot();
  endpoint = await startNeonEndpoint(backend);
  neonConfig.fetchEndpoint = () => endpoint.url;
  sql = neon(endpoint.connectionString);
  await sql`create table endpoint_t (id int primary key, label text unique, tags text[], doc jsonb,
    at timestamptz, day date, big bigint, ratio double precision, ok boolean, emb vector(3))`;
});

afterAll(async () => {
  await endpoint?.close();
  await backend?.close();
});

describe("local Neon endpoint", () => {
  it("returns scalars, NULLs, arrays, jsonb, timestamps and vectors like Neon does", async () => {
    await sql.query(
      "insert into endpoint_t values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10), (2, null, null, null, null, null, null, null, null, null)",
      [
        1,
        "it's",
        ["a", "b,c", 'q"uote'],
        { k: [1, 2], s: "x" },
        "2026-11-29T10:00:00Z",
        "2026-11-29",
        "9007199254740993",
        1.5,
        true,
        "[1,2,3]",
      ],
    );
    const rows = (await sql`select * from endpoint_t order by id`) as Record<string, unknown>[];
    expect(rows[0]).toEqual({
      id: 1,
      label: "it's",
      tags: ["a", "b,c", 'q"uote'],
      doc: { k: [1, 2], s: "x" },
      at: new Date("2026-11-29T10:00:00Z"),
      day: expect.any(Date),
      big: "9007199254740993",
      ratio: 1.5,
      ok: true,
      emb: "[1,2,3]",
    });
    expect(Object.values(rows[1]!).filter((v) => v !== null)).toEqual([2]);
  });

  it("reports command and row count in full results", async () => {
    const result = await sql.query("update endpoint_t set ok = false where id > $1", [0], {
      fullResults: true,
    });
    expect(result.command).toBe("UPDATE");
    expect(result.rowCount).toBe(2);
  });

  it("runs a transaction atomically and rolls it back when one query fails", async () => {
    await expect(
      sql.transaction([
        sql`insert into endpoint_t (id, label) values (10, 'ten')`,
        sql`insert into endpoint_t (id, label) values (11, 'it''s')`,
      ]),
    ).rejects.toMatchObject({ code: "23505", constraint: "endpoint_t_label_key" });
    expect(await sql`select id from endpoint_t where id = 10`).toEqual([]);

    const [a, b] = await sql.transaction([sql`select 1 as one`, sql`select 'two'::text as two`]);
    expect([a, b]).toEqual([[{ one: 1 }], [{ two: "two" }]]);
  });

  it("keeps Postgres error fields: syntax, undefined table, bad input", async () => {
    await expect(sql`selec 1`).rejects.toMatchObject({ code: "42601" });
    await expect(sql`select * from no_such_table`).rejects.toMatchObject({ code: "42P01" });
    await expect(sql.query("select $1::int", ["many"])).rejects.toMatchObject({ code: "22P02" });
  });

  it("binds values, never splices them into SQL", async () => {
    const evil = "x'); drop table endpoint_t; --";
    await sql.query("insert into endpoint_t (id, label) values ($1, $2)", [20, evil]);
    expect(await sql.query("select label from endpoint_t where id = $1", [20])).toEqual([{ label: evil }]);
  });

  it("answers a malformed request with a 400 instead of crashing", async () => {
    const res = await fetch(endpoint.url, {
      method: "POST",
      headers: { "neon-connection-string": endpoint.connectionString },
      body: "{not json",
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ message: "request body is not valid JSON" });
    const ok = await sql`select 1 as alive`;
    expect(ok).toEqual([{ alive: 1 }]);
  });

  it("wants its secret: no or a wrong credential → 401 and nothing runs; the right one works", async () => {
    const query = JSON.stringify({ query: "insert into endpoint_t (id) values (30)", params: [] });
    const post = (headers: Record<string, string>) =>
      fetch(endpoint.url, { method: "POST", headers, body: query });
    const wrong = new URL(endpoint.connectionString);
    wrong.password = "amba";
    for (const headers of [
      {} as Record<string, string>,
      { "neon-connection-string": "postgresql://amba:amba@localhost/amba" },
      { "neon-connection-string": wrong.href },
      { "neon-connection-string": "postgresql://amba@localhost/amba" },
      { "neon-connection-string": "not a url" },
    ]) {
      const res = await post(headers);
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({ message: "missing or invalid database credential" });
    }
    await expect(neon("postgresql://amba:guess@localhost/amba")`select 1`).rejects.toThrow(/401/);
    expect(await sql`select count(*)::int as n from endpoint_t where id = 30`).toEqual([{ n: 0 }]);

    expect((await post({ "neon-connection-string": endpoint.connectionString })).status).toBe(200);
    expect(await sql`select count(*)::int as n from endpoint_t where id = 30`).toEqual([{ n: 1 }]);
  });

  it("makes a fresh secret per start unless one is given", async () => {
    const other = await startNeonEndpoint(backend);
    const fixed = await startNeonEndpoint(backend, { secret: "s3cret/+=" });
    try {
      expect(other.connectionString).not.toBe(endpoint.connectionString);
      expect(new URL(other.connectionString).password.length).toBeGreaterThanOrEqual(32);
      const res = await fetch(fixed.url, {
        method: "POST",
        headers: { "neon-connection-string": fixed.connectionString },
        body: JSON.stringify({ query: "select 1", params: [] }),
      });
      expect(res.status).toBe(200);
    } finally {
      await other.close();
      await fixed.close();
    }
  });
});
