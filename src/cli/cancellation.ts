/**
 * `notifications/cancelled` on a stdio connection: every `tools/call` request in flight gets a
 * cancel signal (its dispatch context); a cancel notification naming its id cancels it. The tool
 * server then drops the call if it has not started, or ends it (and, if it does not settle, its
 * tool host) if it has.
 */

import type { CancelSignal } from "./sandbox/tool-process.ts";

/** A cancel signal and its trigger. */
export class CancelToken implements CancelSignal {
  aborted = false;
  #listeners: (() => void)[] = [];

  onCancel(listener: () => void): void {
    if (this.aborted) listener();
    else this.#listeners.push(listener);
  }

  cancel(): void {
    if (this.aborted) return;
    this.aborted = true;
    for (const listener of this.#listeners.splice(0)) listener();
  }
}

/** The dispatch context of one request: the signal of a `tools/call`, else null. */
export type Tracked = { signal: CancelToken; id: string | number } | null;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The `tools/call` requests in flight on one connection, by id. */
export class CallRegistry {
  #inFlight = new Map<string | number, CancelToken>();

  /**
   * Looks at one incoming message: a cancel notification aborts its request (and gets dispatched
   * as the no-op it is); a `tools/call` request is registered and gets its signal as context.
   */
  track(message: unknown): Tracked {
    if (!isObject(message)) return null;
    if (message.method === "notifications/cancelled" && isObject(message.params)) {
      const id = message.params.requestId;
      if (typeof id === "string" || typeof id === "number") this.#inFlight.get(id)?.cancel();
      return null;
    }
    const id = message.id;
    if (message.method !== "tools/call" || (typeof id !== "string" && typeof id !== "number")) return null;
    const signal = new CancelToken();
    this.#inFlight.set(id, signal);
    return { signal, id };
  }

  /** The request is answered: forget it. Returns whether it was cancelled. */
  settle(call: Tracked): boolean {
    if (!call) return false;
    if (this.#inFlight.get(call.id) === call.signal) this.#inFlight.delete(call.id);
    return call.signal.aborted;
  }
}
