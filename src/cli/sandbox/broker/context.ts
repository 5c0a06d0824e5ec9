/**
 * What every hook of the broker shares: how a check is asked and enforced (`check`,
 * `refuseIfDenied`), which descriptors tool code may not touch (the host's own pipes, and the
 * numbers held by a FileHandle or by the broker between its confirmation and its close), and how a
 * built-in is replaced in place (`replace`, `wrap`: its name and own keys kept). One context is made
 * per install, before the first hook; nothing in it is reachable from tool code.
 */
import { type PermissionAction, PermissionDeniedError, type PermissionKind } from "../../permissions.ts";
import type { Answer, CheckMessage } from "../protocol.ts";

/** Forwards one check to the CLI and returns its answer (synchronously). */
export type Ask = (
  kind: PermissionKind,
  action: PermissionAction,
  resource: string,
  extra?: Pick<CheckMessage, "exec" | "denied" | "peek" | "fd" | "name" | "op">,
) => Answer;

export type AnyFunction = (...args: unknown[]) => unknown;

/**
 * Whether an answer allows: only the CLI's `Allow` does. Anything else refuses — tool code that
 * rewires the host's pipes (its own descriptors closed and a file opened in their place) has the
 * host read back its own check line, which echoes the nonce but decides nothing.
 */
export const allows = (answer: Answer): boolean => answer.d === "Allow";
export type Target = Record<string | symbol, unknown>;

/** What the CLI told the host about this tool process. */
export interface BrokerOptions {
  /** The host's own pipes. */
  reserved: number[];
  fsRestricted: boolean;
  noWorkers: boolean;
}

/** The checks and guards every hook uses (see {@link createBroker}). */
export interface Broker {
  ask: Ask;
  options: BrokerOptions;
  /** Asks, and throws the broker's denial unless allowed (`forceDeny`: refused whatever the grants). */
  check: (kind: PermissionKind, action: PermissionAction, resource: string, forceDeny?: boolean) => void;
  /** Refuses without auditing an allowed outcome (a later, lower check audits what really happens). */
  refuseIfDenied: (kind: PermissionKind, action: PermissionAction, resource: string) => void;
  /** Refuses any use of one of the host's own pipes. */
  guardFd: (fd: unknown) => void;
  /** Refuses closing a reserved number or a held one (or wrapping it in a handle that would). */
  guardClose: (fd: unknown) => void;
  /**
   * Makes `fd` a number the tool may not close (a FileHandle's, or one the broker uses across
   * ticks, between its confirmation and its close) until the returned function is called.
   */
  hold: (fd: number) => () => void;
  /** The real `process.env`, as it was at install (env.ts puts a checking proxy in its place). */
  realEnv: NodeJS.ProcessEnv;
}

/** The shared checks and guards of one install. */
export function createBroker(ask: Ask, options: BrokerOptions): Broker {
  const check = (kind: PermissionKind, action: PermissionAction, resource: string, forceDeny = false) => {
    const answer = ask(kind, action, resource, forceDeny ? { denied: true } : undefined);
    if (!allows(answer)) throw new PermissionDeniedError(kind, action, answer.r ?? resource);
  };
  // The host's own pipes: tool code may neither write to them, read them nor close them.
  const reserved = new Set(options.reserved);
  const guardFd = (fd: unknown) => {
    if (typeof fd === "number" && reserved.has(fd)) check("FileSystem", "Write", `fd:${fd}`, true);
  };
  // The numbers of the live FileHandles (counted: for a moment, a number closed and taken again is
  // two handles'). A handle closes its number on libuv's pool, later: closed under it by number
  // first, the number could be the broker's by then, confirmed and in use (see `fs.close` below).
  const owned = new Map<number, number>();
  /**
   * Makes `fd` a number the tool may not close (a FileHandle's, or one the broker uses across
   * ticks, between its confirmation and its close) until the returned function is called.
   */
  const hold = (fd: number): (() => void) => {
    owned.set(fd, (owned.get(fd) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const count = (owned.get(fd) ?? 1) - 1;
      if (count > 0) owned.set(fd, count);
      else owned.delete(fd);
    };
  };
  /** Refuses closing a reserved number or a held one (or wrapping it in a handle that would). */
  const guardClose = (fd: unknown) => {
    guardFd(fd);
    if (typeof fd === "number" && (owned.get(fd) ?? 0) > 0) check("FileSystem", "Write", `fd:${fd}`, true);
  };
  /** Refuses without auditing an allowed outcome (a later, lower check audits what really happens). */
  const refuseIfDenied = (kind: PermissionKind, action: PermissionAction, resource: string) => {
    const answer = ask(kind, action, resource, { peek: true });
    if (!allows(answer)) throw new PermissionDeniedError(kind, action, answer.r ?? resource);
  };
  const realEnv = process.env;
  return { ask, options, check, refuseIfDenied, guardFd, guardClose, hold, realEnv };
}

/** Replaces `target[name]` with what `make` builds around the original (its name and own keys kept). */
export function replace(target: Target, name: string, make: (original: AnyFunction) => AnyFunction): void {
  const original = target[name];
  if (typeof original !== "function") return;
  const checked = make(original as AnyFunction);
  for (const key of Reflect.ownKeys(original)) {
    if (key === "length" || key === "name" || key === "prototype") continue;
    const descriptor = Reflect.getOwnPropertyDescriptor(original, key);
    if (descriptor) Reflect.defineProperty(checked, key, descriptor);
  }
  Object.defineProperty(checked, "name", { value: original.name });
  Reflect.defineProperty(target, name, {
    value: checked,
    writable: true,
    configurable: true,
    enumerable: Object.getOwnPropertyDescriptor(target, name)?.enumerable ?? true,
  });
}

/** Replaces `target[name]` with a version that runs `guard` first; `denied` answers a denial instead of throwing. */
export function wrap(
  target: Target,
  name: string,
  guard: (args: unknown[]) => void,
  denied?: (args: unknown[]) => unknown,
): void {
  replace(
    target,
    name,
    (original) =>
      function (this: unknown, ...args: unknown[]) {
        try {
          guard(args);
        } catch (error) {
          if (denied && error instanceof PermissionDeniedError) return denied(args);
          throw error;
        }
        return Reflect.apply(original, this, args);
      },
  );
}
