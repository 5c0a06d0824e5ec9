/**
 * The Worker app's two halves (src/worker/app.ts): `isHotRequest` must send every route to the half
 * that has it, or the route becomes a 404. Checked against the registered route tables, so a route
 * added to the wrong half (say, a cold route under /v1/projects/) fails here.
 */
import { describe, expect, it } from "vitest";
import { hotApp, isHotRequest } from "../../src/worker/app.ts";
import { coldApp } from "../../src/worker/cold-app.ts";

const SUFFIX = "mcp.amba.host";

/** A concrete path for a route pattern (`:param` and `*` filled in). */
const concrete = (pattern: string) => pattern.replace(/:\w+/g, "x").replace(/\*/g, "x");

/** The route patterns of an app (middleware left out). */
const patterns = (routes: { path: string }[]) =>
  [...new Set(routes.map((r) => r.path))].filter((p) => p !== "*" && p !== "/*");

describe("isHotRequest", () => {
  it("routes every hot route to the hot app (/mcp on an app's host)", () => {
    const hot = patterns(hotApp().routes);
    expect(hot).toContain("/app/:projectId/mcp");
    for (const p of hot) {
      const path = concrete(p);
      expect([p, isHotRequest(path, `https://demo.${SUFFIX}${path}`, SUFFIX)]).toEqual([p, true]);
    }
  });

  it("routes every cold route to the cold app (/mcp on the platform's host)", () => {
    const cold = patterns(coldApp().routes);
    expect(cold).toContain("/mcp");
    for (const p of cold) {
      const path = concrete(p);
      expect([p, isHotRequest(path, `https://mcp.amba.dev${path}`, SUFFIX)]).toEqual([p, false]);
    }
  });
});
