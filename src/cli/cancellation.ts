/**
 * `notifications/cancelled` on a stdio connection: every `tools/call` request in flight gets an
 * AbortSignal (its dispatch context); a cancel notification naming its id aborts it. The tool
 * server then drops the call if it has not started, or ends it (and, if it does not settle, its
 * tool host) if it has.
 */

/** The dispatch context of one request: the signal of a `tools/call`, else null. */
export type Tracked = { signal: AbortSignal; id: string | number; controller: AbortController } | null;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The `tools/call` requests in flight on one connection, by id. */
export class CallRegistry {
  #inFlight = new Map<string | number, AbortController>();

  /**
   * Looks at one incoming message: a cancel notification aborts its request (and gets dispatched
   * as the no-op it is); a `tools/call` request is registered and gets its signal as context.
   */
  track(message: unknown): Tracked {
    if (!isObject(message)) return null;
    if (message.method === "notifications/cancelled" && isObject(message.params)) {
      const id = message.params.requestId;
      if (typeof id === "string" || typeof id === "number") this.#inFlight.get(id)?.abort();
      return null;
    }
    const id = message.id;
    if (message.method !== "tools/call" || (typeof id !== "string" && typeof id !== "number")) return null;
    const controller = new AbortController();
    this.#inFlight.set(id, controller);
    return { signal: controller.signal, id, controller };
  }

  /** The request is answered: forget it. Returns whether it was cancelled. */
  settle(call: Tracked): boolean {
    if (!call) return false;
    if (this.#inFlight.get(call.id) === call.controller) this.#inFlight.delete(call.id);
    return call.signal.aborted;
  }
}
