import { describe, expect, it } from "vitest";
import { api, apiJson } from "./helpers.ts";

describe("GET /healthz", () => {
  it("reports the version and a real database round trip", async () => {
    const res = await apiJson("/healthz");
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ok: true, version: "0.1.0", database: { ok: true } });
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
