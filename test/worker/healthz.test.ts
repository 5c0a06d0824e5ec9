import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";

describe("GET /healthz", () => {
  it("reports the version and a real database round trip", async () => {
    const res = await exports.default.fetch("http://local/healthz");
    expect(res.status).toBe(200);
    const body = (await res.json()) as { ok: boolean; version: string; database: { ok: boolean } };
    expect(body).toMatchObject({ ok: true, version: "0.1.0", database: { ok: true } });
  });

  it("renders unknown routes as a JSON 404", async () => {
    const res = await exports.default.fetch("http://local/nope");
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: { code: "not_found", message: "no route for GET /nope" } });
  });
});
