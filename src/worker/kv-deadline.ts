/**
 * Deadlines on the OAuth store's KV operations. Every grant, token, client and authorization
 * transaction lives in `OAUTH_KV`, read and written on the request's path (by our routes and inside
 * `@cloudflare/workers-oauth-provider`); a store that stops answering would hold those requests
 * open with nothing bounding them. The namespace handed to both is wrapped once per isolate, so an
 * operation past {@link KV_DEADLINE_MS} fails the request with 503 `storage_timeout` instead.
 * (`META_KV`, the metadata cache, has its own shorter read deadline and falls back to Postgres:
 * src/app-mcp/surface.ts `cachedRead`.)
 */
import { AppError } from "../errors.ts";
import type { Env } from "./env.ts";

/** Deadline of one KV operation, in ms. KV answers in single-digit ms at the edge. */
export const KV_DEADLINE_MS = 3_000;

/** Seconds a client should wait after a KV operation that did not answer. */
const RETRY_AFTER_SECONDS = 5;

/** 503 `storage_timeout`: a KV operation missed its deadline. */
export class StorageTimeoutError extends AppError {
  override readonly headers = { "retry-after": String(RETRY_AFTER_SECONDS) };

  constructor(operation: string, deadlineMs: number) {
    super(
      503,
      "storage_timeout",
      `the key-value store did not answer ${operation} within ${deadlineMs} ms; retry in ${RETRY_AFTER_SECONDS} s`,
    );
    this.name = "StorageTimeoutError";
  }
}

const OPERATIONS: ReadonlySet<PropertyKey> = new Set(["get", "getWithMetadata", "put", "delete", "list"]);

/** `pending`, or {@link StorageTimeoutError} once `deadlineMs` has passed. */
async function within<T>(pending: Promise<T>, operation: string, deadlineMs: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StorageTimeoutError(operation, deadlineMs)), deadlineMs);
  });
  try {
    return await Promise.race([pending, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** `kv` with every operation bounded by `deadlineMs`; anything else passes through. */
export function withKvDeadline(kv: KVNamespace, deadlineMs = KV_DEADLINE_MS): KVNamespace {
  return new Proxy(kv, {
    get(target, property) {
      const member: unknown = Reflect.get(target, property, target);
      if (!OPERATIONS.has(property) || typeof member !== "function") return member;
      return (...args: unknown[]) =>
        within(Promise.resolve(member.apply(target, args)), `KV ${String(property)}`, deadlineMs);
    },
  });
}

const guarded = new WeakMap<Env, Env>();

/**
 * `env` with `OAUTH_KV` under {@link withKvDeadline}: made once per `env` object (workerd hands an
 * isolate the same one on every request), so a request pays a WeakMap lookup.
 */
export function withStoreDeadlines(env: Env): Env {
  if (!env.OAUTH_KV) return env;
  let out = guarded.get(env);
  if (!out) {
    out = { ...env, OAUTH_KV: withKvDeadline(env.OAUTH_KV) };
    guarded.set(env, out);
  }
  return out;
}
