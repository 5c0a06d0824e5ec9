/**
 * What an `allowed_origins` entry must be, and what a request's `Origin` must be to match one. No
 * imports: the hot path's CORS (src/worker/sdk-cors.ts) checks it at start-up cost nothing.
 */

/** True when `value` is exactly an origin: http(s) scheme, host, optional port, nothing else. */
export function isExactOrigin(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === "https:" || url.protocol === "http:") && url.origin === value;
  } catch {
    return false;
  }
}
