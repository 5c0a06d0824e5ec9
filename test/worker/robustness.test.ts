/**
 * Bad input never becomes a 500: every write route answers malformed or mistyped bodies with a 4xx
 * `{error:{code,message}}`, and the app MCP endpoint answers junk with JSON-RPC errors.
 */
import { beforeAll, describe, expect, it } from "vitest";
import {
  api,
  endUserHeaders,
  signupDeveloper,
  signupUser,
  type TestDeveloper,
  type TestUser,
} from "./helpers.ts";

let dev: TestDeveloper;
let user: TestUser;

beforeAll(async () => {
  dev = await signupDeveloper();
  user = await signupUser(dev.projectId, dev.clientKey);
  const created = await api(`/v1/admin/projects/${dev.projectId}/collections`, {
    token: dev.token,
    json: {
      name: "things",
      columns: [
        { name: "label", type: "text" },
        { name: "n", type: "integer" },
      ],
    },
  });
  expect(created.status).toBe(201);
});

const BODIES: [string, string][] = [
  ["not JSON", "{not json"],
  ["an array", "[1,2]"],
  ["null", "null"],
  ["a string", '"x"'],
  ["unknown keys", '{"definitely_not_a_field": {"$gt": 1}}'],
  ["wrong types", '{"name": 42, "email": [], "columns": "x", "password": {}, "url": 7, "collections": "a"}'],
  ["deep nesting", `${"[".repeat(2000)}${"]".repeat(2000)}`],
];

type Auth = "developer" | "user" | "key" | "none";

const ROUTES = (): [string, string, Auth][] => {
  const p = `/v1/admin/projects/${dev.projectId}`;
  const data = `/v1/projects/${dev.projectId}/collections/things`;
  return [
    ["POST", "/v1/developers/signup", "none"],
    ["POST", "/v1/admin/projects", "developer"],
    ["POST", "/v1/admin/tokens", "developer"],
    ["PATCH", p, "developer"],
    ["POST", `${p}/client-keys`, "developer"],
    ["POST", `${p}/collections`, "developer"],
    ["PATCH", `${p}/collections/things`, "developer"],
    ["POST", `${p}/functions/deploy`, "developer"],
    ["POST", `${p}/functions/nope/promote`, "developer"],
    ["PUT", `${p}/app-mcp/exposure`, "developer"],
    ["PATCH", `${p}/app-mcp/config`, "developer"],
    ["POST", "/v1/auth/signup", "key"],
    ["POST", "/v1/auth/signin", "key"],
    ["POST", `${data}/rows`, "user"],
    ["PATCH", `${data}/rows/00000000-0000-7000-8000-000000000000`, "user"],
    ["POST", `${data}/find`, "user"],
    ["POST", `${data}/aggregate`, "developer"],
    ["POST", `${data}/nearest`, "user"],
    ["POST", `/v1/projects/${dev.projectId}/functions/nope/invoke`, "user"],
  ];
};

function headersFor(auth: Auth): Record<string, string> {
  if (auth === "developer") return { authorization: `Bearer ${dev.token}` };
  if (auth === "user") return endUserHeaders(dev.clientKey, user.sessionToken);
  if (auth === "key") return { "x-api-key": dev.clientKey };
  return {};
}

describe("bad input on every write route", () => {
  it("answers 4xx JSON errors, never a 500 or a stack trace", async () => {
    const failures: string[] = [];
    for (const [method, path, auth] of ROUTES()) {
      for (const [label, body] of BODIES) {
        const res = await api(path, {
          method,
          body,
          headers: { ...headersFor(auth), "content-type": "application/json" },
        });
        const text = await res.text();
        let parsed: { error?: { code?: unknown; message?: unknown } } = {};
        try {
          parsed = JSON.parse(text);
        } catch {}
        const ok =
          res.status >= 400 &&
          res.status < 500 &&
          typeof parsed.error?.code === "string" &&
          typeof parsed.error?.message === "string" &&
          !/\bat .+\.(ts|js):\d+/.test(text);
        if (!ok) failures.push(`${method} ${path} with ${label}: ${res.status} ${text.slice(0, 160)}`);
      }
    }
    expect(failures).toEqual([]);
  });

  it("answers a row id that cannot exist with 404, like an absent row", async () => {
    const rows = `/v1/projects/${dev.projectId}/collections/things/rows`;
    for (const method of ["GET", "PATCH", "DELETE"]) {
      const res = await api(`${rows}/not-a-uuid`, {
        method,
        token: dev.token,
        ...(method === "PATCH" ? { json: {} } : {}),
      });
      expect(res.status, method).toBe(404);
    }
  });

  it("loses nothing: a refused insert writes no row", async () => {
    const rows = `/v1/projects/${dev.projectId}/collections/things/rows`;
    const before = await api(rows, { token: dev.token });
    const count = ((await before.json()) as { rows: unknown[] }).rows.length;
    await api(rows, { token: dev.token, json: { label: "ok", n: "not a number" } });
    await api(rows, { token: dev.token, json: { label: "ok", n: 2 ** 40 } });
    const after = await api(rows, { token: dev.token });
    expect(((await after.json()) as { rows: unknown[] }).rows.length).toBe(count);
  });
});

describe("SQL in values", () => {
  it("is stored literally, never executed", async () => {
    const evil = "x'); drop table projects; select pg_sleep(5); --";
    const created = await api("/v1/admin/projects", { token: dev.token, json: { name: evil } });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    const read = await api(`/v1/admin/projects/${id}`, { token: dev.token });
    expect(((await read.json()) as { name: string }).name).toBe(evil);
    const stillThere = await api("/v1/admin/projects", { token: dev.token });
    expect(stillThere.status).toBe(200);
  });

  it("names unknown fields in the error", async () => {
    const res = await api("/v1/admin/projects", { token: dev.token, json: { name: "ok", nmae: "typo" } });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toBe("nmae: unknown field");
  });
});

describe("junk on the app MCP endpoint", () => {
  it("answers JSON-RPC errors, never a 500", async () => {
    const url = `/app/${dev.projectId}/mcp`;
    const cases: [string, number, number][] = [
      ["{not json", 400, -32700],
      ['{"jsonrpc":"2.0","id":1}', 200, -32600],
      ['{"jsonrpc":"2.0","id":1,"method":"nope"}', 200, -32601],
      [
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"missing_tool","arguments":{}}}',
        200,
        -32602,
      ],
      ['{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"x"}', 200, -32600],
    ];
    for (const [body, status, code] of cases) {
      const res = await api(url, {
        method: "POST",
        body,
        headers: {
          authorization: `Bearer ${dev.token}`,
          "content-type": "application/json",
          accept: "application/json",
        },
      });
      expect(res.status, body).toBe(status);
      const json = (await res.json()) as { error: { code: number } };
      expect(json.error.code, body).toBe(code);
    }
  });
});

describe("rate limiting", () => {
  it("answers 429 rate_limited when the binding says no, and counts per key", async () => {
    const { enforceRateLimit } = await import("../../src/worker/rate-limit.ts");
    const seen: string[] = [];
    const limiter = {
      limit: async ({ key }: { key: string }) => {
        seen.push(key);
        return { success: seen.length < 2 };
      },
    } as unknown as RateLimit;
    await enforceRateLimit({ RATE_LIMITER: limiter }, "k1", "x");
    await expect(enforceRateLimit({ RATE_LIMITER: limiter }, "k1", "this caller")).rejects.toMatchObject({
      status: 429,
      code: "rate_limited",
      message: expect.stringContaining("this caller"),
    });
    expect(seen).toEqual(["k1", "k1"]);
    await expect(enforceRateLimit({}, "k2", "x")).resolves.toBeUndefined();
  });
});
