/**
 * The path guard reads the request URL without parsing it again (`splitUrl`): it must see exactly
 * what `new URL` sees, and still refuse NUL in query parameters and control characters in segments.
 */
import { describe, expect, it } from "vitest";
import { splitUrl } from "../../src/worker/path-guard.ts";
import { api } from "./helpers.ts";

describe("path guard", () => {
  it("splits a request URL into exactly URL#pathname and URL#search", () => {
    for (const raw of [
      "http://local",
      "http://local/",
      "http://local/?",
      "http://user:pw@local:8787/a/b?x=1&y=%2F",
      "https://demo.mcp.localhost:8787/mcp?q=a?b//c",
      "http://local/v1/projects/a%00b//rows/?cursor=%2500#frag",
      "http://local/a/../b/./c?%00",
      "http://local/a#x?y=%00",
      "http://[::1]:9/x%20y",
    ]) {
      const serialised = new Request(raw).url;
      const url = new URL(serialised);
      expect(splitUrl(serialised), raw).toEqual({ path: url.pathname, query: url.search.slice(1) });
    }
  });

  it("refuses a NUL in a query parameter (key or value), and only a real one", async () => {
    for (const query of ["cursor=a%00b", "a%00=1", "x=1&cursor=%00"]) {
      const res = await api(`/v1/projects/00000000-0000-4000-8000-000000000000/collections/x/rows?${query}`);
      expect(res.status, query).toBe(400);
      expect(((await res.json()) as { error: { message: string } }).error.message).toContain("NUL");
    }
    const escaped = await api(
      "/v1/projects/00000000-0000-4000-8000-000000000000/collections/x/rows?cursor=%2500",
    );
    expect(escaped.status).toBe(401);
  });

  it("refuses control characters in a path segment", async () => {
    const res = await api("/v1/projects/00000000-0000-4000-8000-000000000000/collections/a%01b/rows");
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain(
      "control characters",
    );
  });
});
