/**
 * Hostile input over every write route and tool (issue 8): generated payloads — deep nesting,
 * oversize strings and arrays, wide objects, type confusion, control characters, non-finite
 * numbers written as raw JSON text (`1e999`), huge batches — must never answer ≥ 500, never show a
 * stack trace or SQL, never answer JSON-RPC -32603, and never write rows when refused.
 *
 * Payloads come from fast-check with a fixed seed (reproducible); each is sent as raw text so the
 * Worker parses exactly what an attacker would send.
 */
import { sql } from "drizzle-orm";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { projectSchemaName } from "../../src/data/sql.ts";
import {
  api,
  apiJson,
  endUserHeaders,
  signupDeveloper,
  signupUser,
  type TestDeveloper,
  testDb,
} from "./helpers.ts";
import { vectorColumns } from "./pgvector.ts";

/** Raw JSON text of one hostile value. */
const hostileValue: fc.Arbitrary<string> = fc.oneof(
  fc.integer({ min: 33, max: 6_000 }).map((d) => `${"[".repeat(d)}${"]".repeat(d)}`),
  fc.integer({ min: 33, max: 3_000 }).map((d) => `${'{"a":'.repeat(d)}1${"}".repeat(d)}`),
  fc.integer({ min: 9, max: 3_000 }).map((d) => `${'{"not":'.repeat(d)}{}${"}".repeat(d)}`),
  fc.integer({ min: 9, max: 500 }).map((d) => `${'{"and":['.repeat(d)}{}${"]}".repeat(d)}`),
  fc.constantFrom("1e999", "-1e999", "1e400", "[1e999,0,0]", '{"gt":1e999}', '{"eq":-1e999}', "[0,1e999]"),
  fc
    .tuple(fc.string({ maxLength: 8 }), fc.integer({ min: 0, max: 31 }), fc.string({ maxLength: 8 }))
    .map(([a, c, b]) => JSON.stringify(`${a}${String.fromCharCode(c)}${b}`)),
  fc.integer({ min: 262_145, max: 300_000 }).map((n) => JSON.stringify("x".repeat(n))),
  fc.integer({ min: 10_001, max: 12_000 }).map((n) => `[${new Array(n).fill(0).join(",")}]`),
  fc
    .integer({ min: 1_001, max: 1_500 })
    .map((n) => JSON.stringify(Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i])))),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
  fc.constantFrom(
    '"\\u0000"',
    '["a\\u0000b"]',
    '{"a\\u0000b":1}',
    '{"\\u0001":1}',
    "null",
    "true",
    '""',
    "[]",
    "{}",
  ),
);

/** A body: a template with one field (or a control-character key) replaced by a hostile value. */
function hostileBody(fields: readonly string[]): fc.Arbitrary<string> {
  return fc
    .tuple(fc.constantFrom(...fields, "na\u0000me", "\u0007"), hostileValue, fc.boolean())
    .map(([field, raw, whole]) => (whole && raw.startsWith("{") ? raw : `{${JSON.stringify(field)}:${raw}}`));
}

const SQL_OR_STACK =
  /\bat [\w.<>]+ \(|\.ts:\d+|\bstack\b|\b(SELECT|INSERT INTO|DELETE FROM|ALTER TABLE)\b|syntax error at|violates .* constraint|pg_catalog/;

interface Outcome {
  status: number;
  text: string;
}

async function send(
  path: string,
  method: string,
  headers: Record<string, string>,
  body: string,
): Promise<Outcome> {
  const res = await api(path, {
    method,
    body,
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...headers,
    },
  });
  return { status: res.status, text: await res.text() };
}

function expectHarmless(outcome: Outcome, what: string): void {
  expect(outcome.status, `${what}: ${outcome.text.slice(0, 300)}`).toBeLessThan(500);
  expect(outcome.text, what).not.toMatch(SQL_OR_STACK);
  expect(outcome.text, what).not.toContain("-32603");
}

const NOTES = {
  name: "notes",
  columns: vectorColumns([
    { name: "title", type: "text" },
    { name: "score", type: "number" },
    { name: "doc", type: "json" },
    { name: "tags", type: "text[]" },
    { name: "embedding", type: "vector", dimensions: 3 },
  ]),
  access: { read: "public", write: "owner" },
};

async function count(table: string): Promise<number> {
  const result = await testDb().execute(sql.raw(`select count(*)::int as n from ${table}`));
  return (result.rows[0] as { n: number }).n;
}

describe("hostile input on every write route and tool", () => {
  /** The data owner: its rows are counted. */
  let data: TestDeveloper;
  /** The admin target: its project config and collections may be changed by valid-looking payloads. */
  let admin: TestDeveloper;
  let session: string;
  let rowId: string;
  let notesTable: string;
  let sent = 0;

  beforeAll(async () => {
    data = await signupDeveloper();
    admin = await signupDeveloper();
    for (const dev of [data, admin]) {
      const made = await apiJson(`/v1/admin/projects/${dev.projectId}/collections`, {
        token: dev.token,
        json: NOTES,
      });
      expect(made.status).toBe(201);
      await apiJson(`/v1/admin/projects/${dev.projectId}/app-mcp/exposure`, {
        method: "PUT",
        token: dev.token,
        json: { collections: ["notes"] },
      });
    }
    session = (await signupUser(data.projectId, data.clientKey)).sessionToken;
    const row = await apiJson(`/v1/projects/${data.projectId}/collections/notes/rows`, {
      token: data.token,
      json: { title: "seed", score: 1 },
    });
    rowId = row.body.id;
    notesTable = `"${projectSchemaName(data.projectId)}"."notes"`;
  }, 60_000);

  it("REST write routes: no 5xx, no stack or SQL, no rows written when refused", async () => {
    const dev = { authorization: `Bearer ${data.token}` };
    const adm = { authorization: `Bearer ${admin.token}` };
    const rows = `/v1/projects/${data.projectId}/collections/notes`;
    const a = `/v1/admin/projects/${admin.projectId}`;
    const routes: Array<[string, string, Record<string, string>, readonly string[], number]> = [
      ["POST", `${rows}/rows`, dev, ["title", "score", "doc", "tags", "embedding"], 40],
      ["POST", `${rows}/rows`, endUserHeaders(data.clientKey, session), ["title", "score", "doc"], 15],
      ["PATCH", `${rows}/rows/${rowId}`, dev, ["title", "score", "doc", "tags"], 25],
      ["POST", `${rows}/find`, dev, ["where", "order", "limit", "cursor"], 30],
      ["POST", `${rows}/aggregate`, dev, ["metrics", "group_by", "where"], 20],
      ["POST", `${rows}/nearest`, endUserHeaders(data.clientKey, session), ["vector", "limit", "where"], 20],
      ["POST", "/v1/developers/signup", {}, ["email"], 15],
      ["POST", "/v1/admin/projects", adm, ["name"], 10],
      ["PATCH", a, adm, ["name"], 10],
      ["POST", `${a}/client-keys`, adm, ["name"], 10],
      ["POST", `${a}/collections`, adm, ["name", "columns", "access"], 25],
      ["PATCH", `${a}/collections/notes`, adm, ["add_columns", "drop_columns", "access"], 20],
      ["POST", `${a}/functions/deploy`, adm, ["name", "url", "mcp"], 20],
      ["POST", `${a}/functions/f/promote`, adm, ["version"], 10],
      [
        "POST",
        `/v1/projects/${data.projectId}/functions/f/invoke`,
        endUserHeaders(data.clientKey, session),
        ["x"],
        10,
      ],
      ["PUT", `${a}/app-mcp/exposure`, adm, ["collections", "functions"], 15],
      [
        "PATCH",
        `${a}/app-mcp/config`,
        adm,
        ["enabled", "auth_mode", "slug", "allowed_origins", "rate_limit_per_minute"],
        20,
      ],
      ["POST", "/v1/auth/signup", { "x-api-key": data.clientKey }, ["email", "password"], 10],
      ["POST", "/v1/auth/signin", { "x-api-key": data.clientKey }, ["email", "password"], 10],
    ];
    const rowsBefore = await count(notesTable);
    const developersBefore = await count("developers");
    let inserted = 0;
    let developers = 0;
    let seed = 1;
    for (const [method, path, headers, fields, runs] of routes) {
      for (const body of fc.sample(hostileBody(fields), { numRuns: runs, seed: seed++ })) {
        const outcome = await send(path, method, headers, body);
        sent++;
        expectHarmless(outcome, `${method} ${path} ${body.slice(0, 120)}`);
        if (path === `${rows}/rows` && outcome.status === 201) inserted++;
        if (path === "/v1/developers/signup" && outcome.status === 201) developers++;
      }
    }
    expect(await count(notesTable)).toBe(rowsBefore + inserted);
    expect(await count("developers")).toBe(developersBefore + developers);
  }, 240_000);

  it("app MCP and platform MCP tools: isError or a protocol error, never -32603, no rows when refused", async () => {
    const prefix = "my_first_project";
    const tools: Array<[string, Record<string, string>, string, readonly string[], number]> = [
      [
        `/app/${data.projectId}/mcp`,
        { authorization: `Bearer ${data.token}` },
        "notes_insert",
        ["title", "score", "doc", "tags"],
        40,
      ],
      [
        `/app/${data.projectId}/mcp`,
        { authorization: `Bearer ${data.token}` },
        "notes_update",
        ["id", "patch"],
        20,
      ],
      [
        `/app/${data.projectId}/mcp`,
        { authorization: `Bearer ${data.token}` },
        "notes_find",
        ["where", "order", "limit", "cursor"],
        30,
      ],
      [
        `/app/${data.projectId}/mcp`,
        { authorization: `Bearer ${data.token}` },
        "notes_aggregate",
        ["metrics", "group_by", "where"],
        20,
      ],
      [
        `/app/${data.projectId}/mcp`,
        { authorization: `Bearer ${data.token}` },
        "notes_delete",
        ["id", "hard"],
        10,
      ],
      [
        `/app/${data.projectId}/mcp`,
        { authorization: `Bearer ${data.token}` },
        "notes_list",
        ["limit", "cursor"],
        10,
      ],
      [
        `/app/${data.projectId}/mcp`,
        endUserHeaders(data.clientKey, session),
        "notes_find_nearest",
        ["vector", "limit", "where"],
        20,
      ],
      [
        `/app/${data.projectId}/mcp`,
        endUserHeaders(data.clientKey, session),
        "notes_insert",
        ["title", "doc"],
        15,
      ],
      [`/app/${data.projectId}/mcp`, { authorization: `Bearer ${data.token}` }, `${prefix}_whoami`, ["x"], 5],
      [
        "/mcp",
        { authorization: `Bearer ${admin.token}` },
        "amba_collections_create",
        ["project_id", "name", "columns"],
        15,
      ],
      [
        "/mcp",
        { authorization: `Bearer ${admin.token}` },
        "amba_collections_alter",
        ["project_id", "name", "add_columns"],
        10,
      ],
      [
        "/mcp",
        { authorization: `Bearer ${admin.token}` },
        "amba_app_mcp_update_config",
        ["project_id", "allowed_origins", "slug"],
        15,
      ],
      [
        "/mcp",
        { authorization: `Bearer ${admin.token}` },
        "amba_app_mcp_set_exposure",
        ["project_id", "collections"],
        10,
      ],
      [
        "/mcp",
        { authorization: `Bearer ${admin.token}` },
        "amba_functions_deploy",
        ["project_id", "name", "url"],
        10,
      ],
      ["/mcp", {}, "amba_developer_signup", ["email"], 10],
    ];
    const rowsBefore = await count(notesTable);
    let inserted = 0;
    let seed = 100;
    for (const [url, headers, name, fields, runs] of tools) {
      for (const args of fc.sample(hostileBody(fields), { numRuns: runs, seed: seed++ })) {
        const body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":${JSON.stringify(name)},"arguments":${args}}}`;
        const outcome = await send(url, "POST", headers, body);
        sent++;
        expectHarmless(outcome, `${name} ${args.slice(0, 120)}`);
        if (url.startsWith("/app/") && name === "notes_insert" && outcome.status === 200) {
          const parsed = JSON.parse(outcome.text) as { result?: { isError: boolean } };
          if (parsed.result && !parsed.result.isError) inserted++;
        }
      }
    }
    expect(await count(notesTable)).toBe(rowsBefore + inserted);
  }, 240_000);

  it("huge batches are one -32600 and run nothing", async () => {
    const url = `/app/${data.projectId}/mcp`;
    const rowsBefore = await count(notesTable);
    const sizes = fc.sample(fc.integer({ min: 101, max: 2_000 }), { numRuns: 20, seed: 7 });
    for (const size of sizes) {
      const call =
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"notes_insert","arguments":{"title":"b"}}}';
      const outcome = await send(
        url,
        "POST",
        { authorization: `Bearer ${data.token}` },
        `[${new Array(size).fill(call).join(",")}]`,
      );
      sent++;
      expectHarmless(outcome, `batch of ${size}`);
      expect(JSON.parse(outcome.text)).toMatchObject({ error: { code: -32600 } });
    }
    expect(await count(notesTable)).toBe(rowsBefore);
    expect(sent).toBeGreaterThanOrEqual(500);
  }, 120_000);
});
