/**
 * A module the Worker loads on its first use instead of at start-up (start-up CPU: BENCHMARKS.md
 * "Start-up and bundle"), imported once per isolate and then kept: later calls return the kept
 * namespace without another `import()`.
 *
 * Not only thrift. Under the Workers test pool (@cloudflare/vitest-pool-workers) every `import()` is
 * a round trip to the test runner, made in the I/O context of the request that runs it, and the
 * runner hands concurrent imports of one module the same pending promise: one request then waited
 * on another request's I/O, which workerd refuses — the waiting request was cancelled as hung and
 * the other one's answer failed with "Cannot perform I/O on behalf of a different request (I/O
 * type: RefcountedFulfiller)". In production an `import()` of a bundled module does no I/O; a
 * warm isolate's requests now run none either way (test/worker/module-loads.test.ts).
 */

/** `load` (an `import()`), called until it has answered once; its module is then kept. */
export function lazyModule<T>(load: () => Promise<T>): () => Promise<T> {
  let loaded: T | undefined;
  return async () => {
    loaded ??= await load();
    return loaded;
  };
}
