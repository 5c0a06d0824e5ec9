import { describe, expect, it } from "vitest";
import { cachedRead, type MetaStore } from "../../../src/app-mcp/surface.ts";

const store = (get: () => Promise<string | null>): MetaStore => ({ get, put: async () => {} });

describe("the metadata cache read", () => {
  it("returns what the cache holds", async () => {
    expect(
      await cachedRead(
        store(async () => '{"rev":3}'),
        "k",
      ),
    ).toBe('{"rev":3}');
  });

  it("is a miss when the cache fails", async () => {
    expect(
      await cachedRead(
        store(() => Promise.reject(new Error("kv down"))),
        "k",
      ),
    ).toBeNull();
  });

  it("is a miss when the cache never answers, so the request goes on to the database", async () => {
    expect(
      await cachedRead(
        store(() => new Promise(() => {})),
        "k",
        20,
      ),
    ).toBeNull();
  });
});
