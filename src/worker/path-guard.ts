/**
 * `pathGuard()`: refuses, before any route runs, a URL whose path segments (percent-decoded) hold
 * control characters or malformed escapes, and query values holding NUL. Path segments become names
 * (`functions/a%00b/invoke`, collections, rows) that reach SQL as bound text, which Postgres refuses
 * with an error instead of a plain "not found"; a 400 naming the part is the honest answer.
 */
import type { MiddlewareHandler } from "hono";
import { invalidInput } from "../errors.ts";
import { nameProblem } from "../limits.ts";

/** The middleware (Hono's option-factory shape; no options yet). */
export function pathGuard(): MiddlewareHandler {
  return async function pathGuard(c, next) {
    const url = new URL(c.req.url);
    for (const segment of url.pathname.split("/")) {
      if (!segment.includes("%") && !nameProblem(segment)) continue;
      let name: string;
      try {
        name = decodeURIComponent(segment);
      } catch {
        throw invalidInput(`path: segment "${segment}" is not valid percent-encoding`);
      }
      const problem = nameProblem(name);
      if (problem) throw invalidInput(`path: segment ${JSON.stringify(name)} ${problem}`);
    }
    for (const [key, value] of url.searchParams) {
      if (key.includes("\u0000") || value.includes("\u0000"))
        throw invalidInput(`query: parameter ${JSON.stringify(key)} must not contain NUL (\\u0000)`);
    }
    await next();
  };
}
