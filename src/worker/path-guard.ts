/**
 * `pathGuard()`: refuses, before any route runs, a URL whose path segments (percent-decoded) hold
 * control characters or malformed escapes, and query values holding NUL. Path segments become names
 * (`functions/a%00b/invoke`, collections, rows) that reach SQL as bound text, which Postgres refuses
 * with an error instead of a plain "not found"; a 400 naming the part is the honest answer.
 */
import type { MiddlewareHandler } from "hono";
import { invalidInput } from "../errors.ts";
import { nameProblem } from "../limits.ts";

/**
 * The path and query of a request URL without parsing it again: `Request.url` is already the URL
 * parser's serialisation, so these are exactly `URL#pathname` and `URL#search` without its `?` (one
 * `new URL` per request showed in the CPU profile, `npm run bench -- cpu`).
 */
export function splitUrl(url: string): { path: string; query: string } {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  const hash = url.indexOf("#", start);
  const end = hash === -1 ? url.length : hash;
  const mark = url.indexOf("?", start);
  return mark === -1 || mark > end
    ? { path: url.slice(start, end), query: "" }
    : { path: url.slice(start, mark), query: url.slice(mark + 1, end) };
}

/** The middleware (Hono's option-factory shape; no options yet). */
export function pathGuard(): MiddlewareHandler {
  return async function pathGuard(c, next) {
    const { path, query } = splitUrl(c.req.url);
    for (const segment of path.split("/")) {
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
    // A NUL can reach a decoded parameter only as `%00` (a request URL holds no raw one).
    if (query.includes("%00")) {
      for (const [key, value] of new URLSearchParams(query)) {
        if (key.includes("\u0000") || value.includes("\u0000"))
          throw invalidInput(`query: parameter ${JSON.stringify(key)} must not contain NUL (\\u0000)`);
      }
    }
    await next();
  };
}
