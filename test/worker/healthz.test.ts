import { describe, expect, it, vi } from "vitest";
import { api, apiJson, requestRoundTrips } from "./helpers.ts";

describe("GET /healthz", () => {
  it("reports the version and a real database round trip", async () => {
    const res = await apiJson("/healthz");
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ok: true, version: "0.1.0", database: { ok: true } });
  });

  it("sends at most one statement a second per isolate, however many ask (anonymous callers cannot load the database through it)", async () => {
    // A first check, so the next ones fall inside its second (the clock is left running).
    expect((await apiJson("/healthz")).status).toBe(200);
    const spy = vi.spyOn(globalThis, "fetch");
    try {
      const answers = await Promise.all(Array.from({ length: 20 }, () => apiJson("/healthz")));
      for (const res of answers) {
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ ok: true, database: { ok: true } });
      }
      expect(requestRoundTrips(spy)).toBeLessThanOrEqual(1);
    } finally {
      spy.mockRestore();
    }
  });

  it("renders unknown routes as a JSON 404", async () => {
    const res = await api("/nope");
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: { code: "not_found", message: "no route for GET /nope" } });
  });

  it("refuses an oversized body with 413 JSON", async () => {
    const res = await apiJson("/v1/developers/signup", { json: { email: "x".repeat(1024 * 1024 + 10) } });
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe("payload_too_large");
  });
});
