import { beforeAll, describe, expect, it } from "vitest";
import { apiJson, expectError, signupDeveloper } from "../helpers.ts";
import { HAS_VECTOR, vectorColumns, vectorValues } from "../pgvector.ts";
import {
  type Caller,
  createCollection,
  type DataProject,
  data,
  dataProject,
  find,
  insert,
} from "./fixtures.ts";

let p: DataProject;
const vec = (x: number) => [x, 1, 0];

beforeAll(async () => {
  p = await dataProject();
  const columns = vectorColumns([
    { name: "title", type: "text", required: true },
    { name: "n", type: "integer" },
    { name: "embedding", type: "vector", dimensions: 3 },
  ]);
  await createCollection(p, { name: "private_notes", columns }); // default: read owner, write owner
  await createCollection(p, { name: "public_posts", columns, access: { read: "public", write: "owner" } });
  await createCollection(p, { name: "catalog", columns, access: { read: "public", write: "developer" } });
});

const titlesOf = (rows: { title: string }[]) => rows.map((r) => r.title).sort();

describe("owner read + owner write", () => {
  it("user A can never read, update or delete user B's rows through any route", async () => {
    const a = await insert(
      p,
      p.userA,
      "private_notes",
      vectorValues({ title: "A's note", n: 1, embedding: vec(1) }),
    );
    const b = await insert(
      p,
      p.userB,
      "private_notes",
      vectorValues({ title: "B's note", n: 2, embedding: vec(2) }),
    );
    expect(a.owner_id).toBe(p.userA.user.userId);

    const list = await data(p, p.userA, "private_notes", "rows");
    expect(titlesOf(list.body.rows)).toEqual(["A's note"]);
    expectError(await data(p, p.userA, "private_notes", `rows/${b.id}`), 404);
    expect(titlesOf((await find(p, p.userA, "private_notes", {})).rows as never)).toEqual(["A's note"]);
    expect((await find(p, p.userA, "private_notes", { where: { id: b.id } })).rows).toEqual([]);
    expect(
      (await find(p, p.userA, "private_notes", { where: { or: [{ n: 2 }, { n: { neq: 2 } }] } })).rows,
    ).toHaveLength(1);
    const agg = await data(p, p.userA, "private_notes", "aggregate", {
      json: { metrics: [{ fn: "count" }, { fn: "sum", column: "n" }] },
    });
    expect(agg.body.rows).toEqual([{ count: 1, sum_n: 1 }]);
    if (HAS_VECTOR) {
      const near = await data(p, p.userA, "private_notes", "nearest", {
        json: { vector: vec(2), limit: 10 },
      });
      expect(titlesOf(near.body.rows)).toEqual(["A's note"]);
    }

    expectError(
      await data(p, p.userA, "private_notes", `rows/${b.id}`, { method: "PATCH", json: { title: "hacked" } }),
      404,
    );
    expectError(await data(p, p.userA, "private_notes", `rows/${b.id}`, { method: "DELETE" }), 404);
    expectError(await data(p, p.userA, "private_notes", `rows/${b.id}?hard=true`, { method: "DELETE" }), 403);

    // B's row is untouched; the developer sees both.
    const bRow = await data(p, p.userB, "private_notes", `rows/${b.id}`);
    expect(bRow.body).toMatchObject({ title: "B's note" });
    const all = await data(p, p.developer, "private_notes", "rows");
    expect(titlesOf(all.body.rows)).toEqual(["A's note", "B's note"]);

    // A changes and deletes their own row.
    const patched = await data(p, p.userA, "private_notes", `rows/${a.id}`, {
      method: "PATCH",
      json: { n: 5 },
    });
    expect(patched.body).toMatchObject({ n: 5, owner_id: p.userA.user.userId });
    expect((await data(p, p.userA, "private_notes", `rows/${a.id}`, { method: "DELETE" })).status).toBe(200);
  });
});

describe("public read + owner write", () => {
  it("everyone reads every row; only the owner writes (403 for others)", async () => {
    const a = await insert(p, p.userA, "public_posts", { title: "A post" });
    await insert(p, p.userB, "public_posts", { title: "B post" });
    const listB = await data(p, p.userB, "public_posts", "rows");
    expect(titlesOf(listB.body.rows)).toEqual(["A post", "B post"]);
    expect((await data(p, p.userB, "public_posts", `rows/${a.id}`)).status).toBe(200);
    expectError(
      await data(p, p.userB, "public_posts", `rows/${a.id}`, {
        method: "PATCH",
        json: { title: "mine now" },
      }),
      403,
    );
    expectError(await data(p, p.userB, "public_posts", `rows/${a.id}`, { method: "DELETE" }), 403);
    expect((await data(p, p.userA, "public_posts", `rows/${a.id}`)).body.title).toBe("A post");
    // The developer writes any row.
    const dev = await data(p, p.developer, "public_posts", `rows/${a.id}`, {
      method: "PATCH",
      json: { n: 9 },
    });
    expect(dev.body).toMatchObject({ n: 9, owner_id: p.userA.user.userId });
  });
});

describe("public read + developer write", () => {
  it("end users read but cannot insert, update or delete (403)", async () => {
    const row = await insert(p, p.developer, "catalog", { title: "Item" });
    expect(row.owner_id).toBeNull();
    expect((await data(p, p.userA, "catalog", `rows/${row.id}`)).status).toBe(200);
    expectError(await data(p, p.userA, "catalog", "rows", { json: { title: "x" } }), 403, "developer");
    expectError(
      await data(p, p.userA, "catalog", `rows/${row.id}`, { method: "PATCH", json: { n: 1 } }),
      403,
    );
    expectError(await data(p, p.userA, "catalog", `rows/${row.id}`, { method: "DELETE" }), 403);
  });
});

describe("credentials", () => {
  it("needs a developer token of the owner, or a client key + session of this project", async () => {
    const other = await signupDeveloper();
    const path = `/v1/projects/${p.dev.projectId}/collections/public_posts/rows`;
    expectError(await apiJson(path), 401);
    expectError(await apiJson(path, { token: other.token }), 404);
    expectError(
      await apiJson(path, { apiKey: other.clientKey, headers: { authorization: "Bearer nope" } }),
      401,
    );
    const stranger: Caller = {
      headers: { "x-api-key": p.dev.clientKey, authorization: "Bearer amba_sess_x_y" },
    };
    expectError(await data(p, stranger, "public_posts", "rows"), 401);
  });
});
