/**
 * The isolate's caches whose entries a tenant sizes are bounded by weight, not only by count
 * (src/mcp/lru.ts; README "Decisions", "Isolate memory"): a project's metadata, the operation
 * schemas and tool definitions of its collections, its serialised `tools/list` pages and the
 * credentials it resolves.
 * Each case fills a cache past its budget and checks that the oldest entry was forgotten (built or
 * loaded again), which an entry-count bound alone (or a WeakMap) never did.
 */
import { describe, expect, it } from "vitest";
import { DEFINITION_CACHE_COLUMNS, toolDefinition } from "../../src/app-mcp/definitions.ts";
import { appSurface, METADATA_BUDGET_CHARS, type MetaStore } from "../../src/app-mcp/surface.ts";
import { buildAppTools } from "../../src/app-mcp/tools.ts";
import type { CollectionMeta } from "../../src/data/columns.ts";
import { operationSchemas, SCHEMA_CACHE_COLUMNS } from "../../src/data/schemas.ts";
import type { Db } from "../../src/db.ts";
import { createMcpHandlers, dispatch, RAW_PAGES_BUDGET_CHARS, type RawJson } from "../../src/mcp/index.ts";
import { SizeClassedLru, WeightedLru } from "../../src/mcp/lru.ts";
import { CREDENTIAL_BUDGET_CHARS, cachedCredential } from "../../src/worker/credential-cache.ts";
import { openApiDocument } from "../../src/worker/routes/openapi.ts";

describe("SizeClassedLru", () => {
  it("lets a heavy entry evict only heavy ones", () => {
    const lru = new SizeClassedLru<string, string>(
      { smallMax: 2, smallBudget: 4, largeBudget: 10 },
      (v) => v.length,
    );
    lru.set("small", "xx");
    lru.set("heavy1", "x".repeat(6));
    lru.set("heavy2", "x".repeat(6));
    expect([lru.get("small"), lru.get("heavy1"), lru.get("heavy2")]).toEqual(["xx", undefined, "xxxxxx"]);
    lru.set("small", "x".repeat(3));
    expect(lru.get("small")).toBe("xxx");
    expect(lru.weight).toBe(9);
  });
});

describe("WeightedLru", () => {
  it("keeps the total weight within the budget, least recently used out", () => {
    const lru = new WeightedLru<string, string>(10, (value) => value.length);
    lru.set("a", "xxxx");
    lru.set("b", "xxxx");
    expect(lru.get("a")).toBe("xxxx"); // a is now the most recently used
    lru.set("c", "xxxx");
    expect([lru.get("a"), lru.get("b"), lru.get("c")]).toEqual(["xxxx", undefined, "xxxx"]);
    expect(lru.weight).toBe(8);
    lru.set("a", "x");
    expect(lru.weight).toBe(5);
    lru.set("huge", "x".repeat(11));
    expect(lru.get("huge")).toBeUndefined();
    expect(lru.size).toBe(2);
  });

  it("keeps each share within its own budget: past it, the share's own oldest go, not others'", () => {
    const lru = new WeightedLru<string, string>(20, (value) => value.length, {
      of: (_value, key) => key.split(":")[0],
      budget: 8,
    });
    lru.set("quiet:1", "xxxx");
    lru.set("loud:1", "xxxx");
    lru.set("loud:2", "xxxx");
    lru.set("loud:3", "xxxx"); // loud is over its 8: its oldest (loud:1) goes, quiet:1 (older) stays
    expect([lru.get("quiet:1"), lru.get("loud:1"), lru.get("loud:2"), lru.get("loud:3")]).toEqual([
      "xxxx",
      undefined,
      "xxxx",
      "xxxx",
    ]);
    for (let i = 4; i < 50; i++) lru.set(`loud:${i}`, "xxxx");
    expect(lru.get("quiet:1")).toBe("xxxx");
    expect([lru.shareWeight("loud"), lru.shareWeight("quiet"), lru.weight]).toEqual([8, 4, 12]);
    lru.set("loud:big", "x".repeat(9)); // heavier than a share: not kept
    expect(lru.get("loud:big")).toBeUndefined();
    lru.deleteWhere((_v, key) => key.startsWith("loud:"));
    expect([lru.shareWeight("loud"), lru.weight]).toEqual([0, 4]);
  });
});

/** A collection of `columns` described text columns (≈ 600 characters of JSON each). */
const collection = (name: string, columns: number): CollectionMeta => ({
  projectId: "00000000-0000-0000-0000-0000000000a1",
  name,
  columns: Array.from({ length: columns }, (_, i) => ({
    name: `c${i}`,
    type: "text",
    description: "d".repeat(500),
  })),
  access: { read: "owner", write: "owner" },
});

describe("isolate caches a tenant sizes", () => {
  it("operation schemas: at most SCHEMA_CACHE_COLUMNS columns' worth (≈ 1.2 MiB per 100 columns)", () => {
    const first = collection("first", 100);
    const schemas = operationSchemas(first);
    expect(operationSchemas(first)).toBe(schemas);
    for (let i = 0; i * 100 < SCHEMA_CACHE_COLUMNS; i++) operationSchemas(collection(`c${i}`, 100));
    expect(operationSchemas(first)).not.toBe(schemas);
  });

  it("collection tool definitions: at most DEFINITION_CACHE_COLUMNS columns' worth, across revs", () => {
    const definition = (meta: CollectionMeta) => {
      const app = {
        projectId: meta.projectId,
        projectName: "p",
        metaRev: 1,
        collections: [meta],
        functions: [],
      };
      const tool = buildAppTools(app, "developer").find((t) => t.name.endsWith("_get"));
      if (!tool) throw new Error("no get tool");
      return toolDefinition(tool, app, "developer").inputSchema;
    };
    const first = collection("first", 100);
    const schema = definition(first);
    expect(definition(first)).toBe(schema);
    for (let i = 0; i * 104 < DEFINITION_CACHE_COLUMNS; i++) definition(collection(`d${i}`, 100));
    expect(definition(first)).not.toBe(schema);
  });

  it("surfaces: at most METADATA_BUDGET_CHARS of metadata JSON, so a large app is read again", async () => {
    const project = (id: string) => ({ id, name: id, metaRev: 1 });
    const text = (id: string) =>
      JSON.stringify({
        projectId: id,
        projectName: id,
        metaRev: 1,
        collections: Array.from({ length: 16 }, (_, i) => collection(`c${i}`, 100)),
        functions: [],
      });
    const reads: string[] = [];
    // The KV value holds its rev first (src/app-mcp/surface.ts).
    const store: MetaStore = {
      get: async (key) => {
        reads.push(key);
        return `1\n${text(key.split(":").at(-1) as string)}`;
      },
      put: async () => {},
    };
    const load = (id: string) => appSurface(store, {} as Db, project(id), () => {});
    const perApp = text("a0").length;
    expect(perApp).toBeGreaterThan(800_000);
    await load("a0");
    await load("a0");
    expect(reads).toHaveLength(1);
    for (let i = 1; (i - 1) * perApp <= METADATA_BUDGET_CHARS; i++) await load(`a${i}`);
    await load("a0");
    expect(reads.filter((k) => k.endsWith(":a0"))).toHaveLength(2);
  });

  it("surfaces: one per project and rev — an app bumping meta_rev pushes no other app out, nor grows KV", async () => {
    const metaOf = (id: string, rev: number, collections: number) =>
      JSON.stringify({
        projectId: id,
        projectName: id,
        metaRev: rev,
        collections: Array.from({ length: collections }, (_, i) => collection(`c${i}`, 100)),
        functions: [],
      });
    const churner = "00000000-0000-0000-0000-0000000000c1";
    const other = "00000000-0000-0000-0000-0000000000c2";
    const kv = new Map<string, string>();
    const reads: string[] = [];
    const store: MetaStore = {
      get: async (key) => {
        reads.push(key);
        return kv.get(key) ?? null;
      },
      put: async (key, value) => {
        kv.set(key, value);
      },
    };
    // Each rev's metadata as KV would hold it once the rev was loaded from Postgres.
    const load = (id: string, rev: number) => {
      kv.set(`app-meta:v2:${id}`, `${rev}\n${metaOf(id, rev, id === churner ? 8 : 1)}`);
      return appSurface(store, {} as Db, { id, name: id, metaRev: rev }, () => {});
    };
    await load(other, 1);
    const perRev = metaOf(churner, 1, 8).length;
    // Past the budget several times over, had every rev been kept.
    let rev = 1;
    for (; (rev - 3) * perRev <= METADATA_BUDGET_CHARS; rev++) await load(churner, rev);
    await load(other, 1);
    expect(reads.filter((k) => k.includes(other))).toHaveLength(1);
    // KV holds one value per project, whatever the number of revs.
    expect(kv.size).toBe(2);
    // A value of another rev is a miss (here: Postgres, where the test's fake database has no
    // app-MCP config row, so nothing is exposed).
    const noConfig = { select: () => ({ from: () => ({ where: async () => [] }) }) } as unknown as Db;
    const stale = await appSurface(store, noConfig, { id: churner, name: "x", metaRev: 1 }, () => {});
    expect(stale.meta.metaRev).toBe(1);
    expect(stale.meta.collections).toEqual([]);
    expect(kv.get(`app-meta:v2:${churner}`)).toMatch(new RegExp(`^${rev - 1}\n`));
    // ... and a request with older credentials does not replace the newer surface in memory.
    const current = await appSurface(
      store,
      {} as Db,
      { id: churner, name: churner, metaRev: rev - 1 },
      () => {},
    );
    expect(current.meta.collections).toHaveLength(8);
  });

  it("tools/list pages: at most RAW_PAGES_BUDGET_CHARS of serialised pages", async () => {
    const big = "d".repeat(200_000);
    const tools = Array.from({ length: 100 }, (_, i) => ({
      name: `t${i}`,
      description: big,
      inputSchema: { type: "object" as const },
    }));
    const handlers = createMcpHandlers<null>({
      serverInfo: { name: "pages", version: "1" },
      toolsPageSize: 2,
      rawToolPages: true,
      tools: { list: () => tools, call: async () => ({ value: null }) },
    });
    const page = async (cursor?: string) =>
      (
        (await dispatch(
          { jsonrpc: "2.0", id: 1, method: "tools/list", params: cursor ? { cursor } : {} },
          handlers,
          null,
          { transport: { protocolVersion: "2025-06-18" } },
        )) as { result: RawJson }
      ).result;
    const first = await page();
    expect(await page()).toBe(first);
    let cursor = (first.value as { nextCursor?: string }).nextCursor;
    let served = first.text.length;
    while (cursor && served <= RAW_PAGES_BUDGET_CHARS) {
      const next = await page(cursor);
      served += next.text.length;
      cursor = (next.value as { nextCursor?: string }).nextCursor;
    }
    expect(served).toBeGreaterThan(RAW_PAGES_BUDGET_CHARS);
    const again = await page();
    expect(again).not.toBe(first);
    expect(again.text).toBe(first.text);
  });

  it("credentials: at most CREDENTIAL_BUDGET_CHARS of resolutions (an app's config is up to ≈ 100 KB)", async () => {
    const exposedCollections = Array.from({ length: 1000 }, (_, i) => `collection_${i}`);
    // Each resolution of its own app (project), so each config is weighed on its own.
    const access = (i: number | string) => ({
      principal: { project: { id: `memory-bounds-app-${i}`, metaRev: 1 } },
      config: { exposedCollections },
    });
    let loads = 0;
    const resolve = (i: number | string) => async () => {
      loads++;
      return access(i);
    };
    await cachedCredential("memory-bounds-first", resolve("first"));
    await cachedCredential("memory-bounds-first", resolve("first"));
    expect(loads).toBe(1);
    const weight = JSON.stringify(access(0)).length;
    for (let i = 0; i * weight <= CREDENTIAL_BUDGET_CHARS; i++)
      await cachedCredential(`memory-bounds-${i}`, resolve(i));
    await cachedCredential("memory-bounds-first", resolve("first"));
    expect(loads).toBeGreaterThan(2 + Math.floor(CREDENTIAL_BUDGET_CHARS / weight));
  });

  it("credentials: one app's many callers weigh its config once, and do not evict other apps' credentials", async () => {
    const big = { exposedCollections: Array.from({ length: 1000 }, (_, i) => `collection_${i}`) };
    const small = { principal: { project: { id: "memory-bounds-small", metaRev: 3 } }, config: {} };
    let smallLoads = 0;
    const loadSmall = async () => {
      smallLoads++;
      return small;
    };
    await cachedCredential("memory-bounds-small", loadSmall);
    // Far more than the budget if every end user of the big app carried the config: 200 × 17 KB.
    for (let i = 0; i < 200; i++) {
      await cachedCredential(`memory-bounds-big-user-${i}`, async () => ({
        principal: { project: { id: "memory-bounds-big", metaRev: 1 }, user: { id: `u${i}` } },
        config: big,
      }));
    }
    await cachedCredential("memory-bounds-small", loadSmall);
    expect(smallLoads).toBe(1);
  });

  it("credentials: one app's distinct valid credentials past the whole budget do not evict another app's", async () => {
    const other = { principal: { project: { id: "memory-bounds-other", metaRev: 1 } }, config: {} };
    let otherLoads = 0;
    const loadOther = async () => {
      otherLoads++;
      return other;
    };
    await cachedCredential("memory-bounds-other", loadOther);
    const resolution = (i: number) => ({
      principal: { project: { id: "memory-bounds-churn", metaRev: 1 }, user: { id: `user-${i}` } },
      config: {},
    });
    const weight = "memory-bounds-churn-user-0".length + JSON.stringify(resolution(0).principal).length;
    // Twice the whole budget of the churning app's end users, each a valid credential of its own.
    for (let i = 0; i * weight <= 2 * CREDENTIAL_BUDGET_CHARS; i++)
      await cachedCredential(`memory-bounds-churn-user-${i}`, async () => resolution(i));
    await cachedCredential("memory-bounds-other", loadOther);
    expect(otherLoads).toBe(1);
  });

  it("OpenAPI documents: a few server URLs (without PUBLIC_BASE_URL the URL is the request's Host)", () => {
    const first = openApiDocument("https://first.example", "1");
    expect(openApiDocument("https://first.example", "1")).toBe(first);
    for (let i = 0; i < 8; i++) openApiDocument(`https://h${i}.example`, "1");
    expect(openApiDocument("https://first.example", "1")).not.toBe(first);
  });
});
