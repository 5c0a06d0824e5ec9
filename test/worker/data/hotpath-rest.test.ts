/**
 * REST data routes on the hot path: credentials from the isolate cache and collection metadata from
 * the rev-keyed cache, so a warm `find` is one database round trip; a collection created afterwards
 * is served at once (its meta_rev bump reaches this isolate's caches).
 */
import { describe, expect, it, vi } from "vitest";
import { apiJson, requestRoundTrips, signupDeveloper } from "../helpers.ts";

describe("REST data hot path", () => {
  it("answers a warm find with one database round trip and sees a new collection at once", async () => {
    const dev = await signupDeveloper();
    const admin = `/v1/admin/projects/${dev.projectId}/collections`;
    const create = (name: string) =>
      apiJson(admin, { token: dev.token, json: { name, columns: [{ name: "title", type: "text" }] } });
    expect((await create("notes")).status).toBe(201);
    const base = `/v1/projects/${dev.projectId}/collections`;
    const find = (name: string) =>
      apiJson(`${base}/${name}/find`, { token: dev.token, json: { where: { title: { eq: "x" } } } });
    expect((await find("notes")).status).toBe(200);

    const fetchSpy = vi.spyOn(globalThis, "fetch");
    try {
      const warm = await find("notes");
      expect(warm.status, JSON.stringify(warm.body)).toBe(200);
      expect(requestRoundTrips(fetchSpy)).toBe(1);
      fetchSpy.mockClear();
      expect((await find("missing")).status).toBe(404);
      expect(requestRoundTrips(fetchSpy)).toBe(0);
    } finally {
      fetchSpy.mockRestore();
    }

    expect((await create("todos")).status).toBe(201);
    const fresh = await find("todos");
    expect(fresh.status, JSON.stringify(fresh.body)).toBe(200);
  });
});
