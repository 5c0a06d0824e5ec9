/**
 * The native handles under every socket: what a TCP, pipe or UDP handle really dials or binds, after
 * any name lookup and whatever form the arguments had, and what a c-ares resolver channel really
 * asks and of which servers. Hooked on the handle classes' prototypes (taken from throw-away objects
 * made before any tool code) and frozen there, so no JavaScript route around `net`, `dgram` or
 * `dns` — nor a handle tool code drives itself — reaches the network unchecked.
 */
import dgram from "node:dgram";
import dns from "node:dns";
import net from "node:net";
import { canonicalPathWith, type PermissionAction, PermissionDeniedError } from "../../permissions.ts";
import { type AnyFunction, type Ask, allows, type Target } from "./context.ts";
import { cwdOriginal, realpathOriginal } from "./originals.ts";

const UV_EACCES = -13;

/** The write methods of Node's stream handles (Pipe, TCP, TTY share them). */
const STREAM_WRITES = [
  "writeBuffer",
  "writev",
  "writeAsciiString",
  "writeUtf8String",
  "writeUcs2String",
  "writeLatin1String",
  "shutdown",
];

/**
 * Makes a handle call's address (and port) arguments the one string (number) the check sees: native
 * code would convert an object again, and a lying `toString` could name another address the second
 * time. Returns nothing, so a resource function reads `settle(…) ?? resource`.
 */
function settle(args: unknown[], address: number, port?: number): undefined {
  const objectLike = (v: unknown) => (typeof v === "object" && v !== null) || typeof v === "function";
  if (objectLike(args[address])) args[address] = String(args[address]);
  if (port !== undefined && objectLike(args[port])) args[port] = Number(args[port]);
  return undefined;
}

/** The symbol under which Node keeps a handle's socket. */
function ownerOf(handle: object): { destroy?: (error: Error) => void } | undefined {
  const symbol = Object.getOwnPropertySymbols(handle).find((k) => k.description === "owner_symbol");
  return symbol === undefined
    ? undefined
    : (handle as Record<symbol, { destroy?: (e: Error) => void }>)[symbol];
}

/**
 * Hooks `connect` and `bind` of the TCP and pipe handle classes (taken from two throw-away sockets made before
 * any tool code), so the address Node is about to dial — after lookups, whatever form the arguments
 * had — is what the CLI decides on. A refusal destroys the socket with the broker's error and the
 * native connect never runs; the prototypes are frozen afterwards.
 */
export function hookDial(
  ask: Ask,
  guardFd: (fd: unknown) => void,
  guardClose: (fd: unknown) => void,
  fsRestricted = false,
): (handle: unknown) => unknown {
  /**
   * A Unix socket in the file system is a file (Deno asks read and write for one too): under a
   * file restriction, connecting to one or binding one (which creates it) is also a read and a
   * write of its canonical path, so no network grant reaches a socket out of the jail (a container
   * daemon's, the session bus, an SSH agent) nor makes one there. An abstract socket (`\0…`) has
   * no path: the network decides alone. The first refusal, or undefined.
   */
  const socketFileRefusal = (path: string): [PermissionAction, string] | undefined => {
    if (!fsRestricted || path === "" || path.startsWith("\0")) return undefined;
    let file: string;
    let escaped = false;
    try {
      file = canonicalPathWith(path, cwdOriginal(), realpathOriginal);
    } catch {
      // Resolving went through a place Node's permission model hides: out of the jail.
      file = canonicalPathWith(path, cwdOriginal(), (p) => p);
      escaped = true;
    }
    for (const action of ["Read", "Write"] as const) {
      const answer = ask("FileSystem", action, file, escaped ? { denied: true } : undefined);
      if (!allows(answer)) return [action, answer.r ?? file];
    }
    return undefined;
  };
  const probe = (options: object) => {
    const socket = new net.Socket();
    socket.on("error", () => {});
    socket.connect(options as net.SocketConnectOpts);
    const handle = (socket as unknown as { _handle?: object })._handle;
    socket.destroy();
    return handle ? (Object.getPrototypeOf(handle) as Target) : undefined;
  };
  const tcp = probe({ port: 9, host: "127.0.0.1" });
  const pipe = probe({ path: "/nonexistent/amber-dial-probe" });
  /**
   * The address a TCP or UDP handle is bound to, if any: `undefined` for one the kernel has not
   * bound yet (no socket, or port 0), which libuv binds itself — to `0.0.0.0:0`, or `[::]:0` for an
   * IPv6 socket — when it listens, receives, sends, connects (UDP) or joins a group.
   */
  const unboundAddress = (proto: Target | undefined) => {
    const getsockname = proto?.getsockname;
    return (handle: object): string | undefined => {
      if (typeof getsockname !== "function") return "addr:0.0.0.0:0";
      const out: { port?: unknown; family?: unknown } = {};
      const error = Reflect.apply(getsockname as AnyFunction, handle, [out]);
      if (error === 0 && typeof out.port === "number" && out.port !== 0) return undefined;
      return error === 0 && (out.family === "IPv6" || out.family === 6) ? "addr:[::]:0" : "addr:0.0.0.0:0";
    };
  };
  /**
   * Hooks the calls of `proto` that libuv lets bind a socket implicitly (a listen, a receive, a
   * send, a UDP connect, a group join on a socket never bound): on an unbound handle the address
   * the kernel will give it is a listen like any `bind`, checked first. Node's own JavaScript binds
   * explicitly (checked by the `bind` hooks) before any of these, so only a handle driven by tool
   * code ever gets here unbound.
   */
  const hookImplicitBind = (proto: Target | undefined, names: string[]) => {
    if (!proto) return;
    const unbound = unboundAddress(proto);
    for (const name of names) {
      const original = proto[name];
      if (typeof original !== "function") continue;
      Reflect.defineProperty(proto, name, {
        value: function (this: object, ...args: unknown[]) {
          const address = unbound(this);
          if (address !== undefined) {
            const answer = ask("Network", "Listen", address);
            if (!allows(answer)) throw new PermissionDeniedError("Network", "Listen", answer.r);
          }
          return Reflect.apply(original as AnyFunction, this, args);
        },
        writable: false,
        // Wrapped again by the address hooks (the prototypes are frozen once all are in place).
        configurable: true,
      });
    }
  };
  hookImplicitBind(tcp, ["listen"]);
  const hook = (
    proto: Target | undefined,
    name: string,
    resourceOf: (args: unknown[]) => string,
    fileOf?: (args: unknown[]) => string,
  ) => {
    const original = proto?.[name];
    if (!proto || typeof original !== "function") return;
    Reflect.defineProperty(proto, name, {
      value: function (this: object, ...args: unknown[]) {
        const answer = ask("Network", "Connect", resourceOf(args));
        const refusal: [PermissionAction, string] | undefined = !allows(answer)
          ? ["Connect", answer.r]
          : fileOf && socketFileRefusal(fileOf(args));
        if (refusal) {
          const [action, resource] = refusal;
          const error = new PermissionDeniedError(
            action === "Connect" ? "Network" : "FileSystem",
            action,
            resource,
          );
          try {
            ownerOf(this)?.destroy?.(error);
          } catch {}
          return UV_EACCES;
        }
        return Reflect.apply(original as AnyFunction, this, args);
      },
      writable: false,
      configurable: false,
    });
  };
  hook(tcp, "connect", (a) => settle(a, 1, 2) ?? `addr:${String(a[1])}:${String(a[2])}`);
  hook(tcp, "connect6", (a) => settle(a, 1, 2) ?? `addr:[${String(a[1])}]:${String(a[2])}`);
  hook(
    pipe,
    "connect",
    (a) => settle(a, 1) ?? `unix:${String(a[1])}`,
    (a) => String(a[1]),
  );
  // Listening: the address really bound (the options object is read again by Node after our check).
  const hookBind = (
    proto: Target | undefined,
    name: string,
    resourceOf: (args: unknown[]) => string,
    fileOf?: (args: unknown[]) => string,
  ) => {
    const original = proto?.[name];
    if (!proto || typeof original !== "function") return;
    Reflect.defineProperty(proto, name, {
      value: function (this: object, ...args: unknown[]) {
        const answer = ask("Network", "Listen", resourceOf(args));
        if (!allows(answer)) throw new PermissionDeniedError("Network", "Listen", answer.r);
        const refusal = fileOf && socketFileRefusal(fileOf(args));
        if (refusal) throw new PermissionDeniedError("FileSystem", refusal[0], refusal[1]);
        return Reflect.apply(original as AnyFunction, this, args);
      },
      writable: false,
      configurable: false,
    });
  };
  // A connect's `localAddress` without a `localPort` binds with the port undefined: port 0 to the
  // native code (an `undefined` in the resource named no port, and matched no grant of one).
  const bindPort = (port: unknown) => (port === undefined ? "0" : String(port));
  hookBind(tcp, "bind", (a) => settle(a, 0, 1) ?? `addr:${String(a[0])}:${bindPort(a[1])}`);
  hookBind(tcp, "bind6", (a) => settle(a, 0, 1) ?? `addr:[${String(a[0])}]:${bindPort(a[1])}`);
  hookBind(
    pipe,
    "bind",
    (a) => settle(a, 0) ?? `unix:${String(a[0])}`,
    (a) => String(a[0]),
  );
  // UDP: the address each datagram goes to (an unconnected send names it), connects and binds.
  const udpSocket = dgram.createSocket("udp4");
  const state = Object.getOwnPropertySymbols(udpSocket).find((k) => k.description === "state symbol");
  const udpHandle =
    state === undefined
      ? undefined
      : (udpSocket as unknown as Record<symbol, { handle?: object }>)[state]?.handle;
  const udp = udpHandle ? (Object.getPrototypeOf(udpHandle) as Target) : undefined;
  udpSocket.close();
  // Before the address hooks below, which then run first (a send's destination, then its bind).
  hookImplicitBind(udp, [
    "recvStart",
    "send",
    "send6",
    "connect",
    "connect6",
    "addMembership",
    "dropMembership",
    "addSourceSpecificMembership",
    "dropSourceSpecificMembership",
  ]);
  const hookUdp = (
    name: string,
    action: "Connect" | "Listen",
    resourceOf: (args: unknown[]) => string | null,
  ) => {
    const original = udp?.[name];
    if (!udp || typeof original !== "function") return;
    Reflect.defineProperty(udp, name, {
      value: function (this: object, ...args: unknown[]) {
        const resource = resourceOf(args);
        if (resource !== null) {
          const answer = ask("Network", action, resource);
          if (!allows(answer)) throw new PermissionDeniedError("Network", action, answer.r);
        }
        return Reflect.apply(original as AnyFunction, this, args);
      },
      writable: false,
      // Made an accessor below, then frozen.
      configurable: true,
    });
  };
  const v4 = (host: unknown, port: unknown) => `addr:${String(host)}:${String(port)}`;
  const v6 = (host: unknown, port: unknown) => `addr:[${String(host)}]:${String(port)}`;
  // send(req, list, count, port, address, hasCallback); a connected socket's send has no address.
  hookUdp("send", "Connect", (a) => (a.length >= 6 ? (settle(a, 4, 3) ?? v4(a[4], a[3])) : null));
  hookUdp("send6", "Connect", (a) => (a.length >= 6 ? (settle(a, 4, 3) ?? v6(a[4], a[3])) : null));
  hookUdp("connect", "Connect", (a) => settle(a, 0, 1) ?? v4(a[0], a[1]));
  hookUdp("connect6", "Connect", (a) => settle(a, 0, 1) ?? v6(a[0], a[1]));
  hookUdp("bind", "Listen", (a) => settle(a, 0, 1) ?? v4(a[0], a[1]));
  hookUdp("bind6", "Listen", (a) => settle(a, 0, 1) ?? v6(a[0], a[1]));
  // Tool code can wrap one of the host's own pipes in a handle of its own (`tty.WriteStream(3)`,
  // a Pipe or TCP handle's `open(3)`): every stream write asks the handle's real descriptor first.
  const stream = pipe ? (Object.getPrototypeOf(pipe) as Target) : undefined;
  const fdOf = stream ? Reflect.getOwnPropertyDescriptor(stream, "fd")?.get : undefined;
  for (const name of STREAM_WRITES) {
    const original = stream?.[name];
    if (!stream || !fdOf || typeof original !== "function") continue;
    Reflect.defineProperty(stream, name, {
      value: function (this: object, ...args: unknown[]) {
        guardFd(Reflect.apply(fdOf, this, []));
        return Reflect.apply(original as AnyFunction, this, args);
      },
      writable: false,
      configurable: false,
    });
  }
  // A handle takes a descriptor only through `open` (and closes it with itself): checked with the
  // number it will get.
  for (const proto of [udp, tcp, pipe]) {
    const open = proto?.open;
    if (!proto || typeof open !== "function") continue;
    Reflect.defineProperty(proto, "open", {
      value: function (this: object, fd: unknown) {
        const number = Number(fd) | 0;
        guardClose(number);
        return Reflect.apply(open as AnyFunction, this, [number]);
      },
      writable: false,
      configurable: true, // frozen below
    });
  }
  if (udp) {
    // Node makes a `udp6` handle by assigning `bind6`, `connect6` and `send6` to the handle's own
    // `bind`, `connect` and `send`, which a frozen method on the prototype refuses (strict code
    // throws): every method becomes a getter of its (checked) function and a setter that gives the
    // one handle an own property — what the assignment did before, the prototype still frozen.
    for (const name of Reflect.ownKeys(udp)) {
      const descriptor = Reflect.getOwnPropertyDescriptor(udp, name);
      const method = descriptor?.value;
      if (name === "constructor" || typeof method !== "function") continue;
      Reflect.defineProperty(udp, name, {
        get: () => method,
        set(this: object, value: unknown) {
          Reflect.defineProperty(this, name, { value, writable: true, configurable: true, enumerable: true });
        },
        enumerable: descriptor?.enumerable ?? false,
        configurable: false,
      });
    }
    Object.freeze(udp);
  }
  if (tcp) Object.freeze(tcp);
  if (pipe) Object.freeze(pipe);
  // The descriptor a stream handle really holds (its prototype's getter: an own `fd` could lie).
  return (handle: unknown) => {
    if (!fdOf || typeof handle !== "object" || handle === null) return undefined;
    try {
      return Reflect.apply(fdOf, handle, []);
    } catch {
      return undefined;
    }
  };
}

/**
 * Hooks the resolver handle class (c-ares's channel, taken from a throw-away `dns.Resolver`'s
 * `_handle` before any tool code), which a resolver drives and tool code can drive itself: its
 * queries go out through c-ares's own sockets, past every socket hook and (on Node 22) Node's
 * permission model, to the servers it was given. So each query is checked on the name (or the
 * address) it asks about, each server it is given as an address to connect to, and a local address
 * as a listen; the list and the names are read once and Node gets what was checked. The `dns`
 * functions (net.ts) only refuse early, with the same message (their allowed calls leave the line
 * to this one).
 */
export function hookResolver(ask: Ask): void {
  const handle = (new dns.Resolver() as unknown as { _handle?: object })._handle;
  const proto = handle ? (Object.getPrototypeOf(handle) as Target) : undefined;
  if (!proto) return;
  const hook = (name: string, checked: (args: unknown[]) => void) => {
    const original = proto[name];
    if (typeof original !== "function") return;
    Reflect.defineProperty(proto, name, {
      value: function (this: object, ...args: unknown[]) {
        checked(args);
        return Reflect.apply(original as AnyFunction, this, args);
      },
      writable: false,
      configurable: false,
    });
  };
  const demand = (action: "Connect" | "Listen", resource: string) => {
    const answer = ask("Network", action, resource);
    if (!allows(answer)) throw new PermissionDeniedError("Network", action, answer.r);
  };
  const address = (ip: string, port: unknown) =>
    ip.includes(":") ? `addr:[${ip}]:${String(port)}` : `addr:${ip}:${String(port)}`;
  for (const name of Reflect.ownKeys(proto)) {
    // queryA(req, name, ttl), …, getHostByAddr(req, ip): what is asked about is the resource.
    if (typeof name !== "string" || !(name.startsWith("query") || name === "getHostByAddr")) continue;
    hook(name, (a) => {
      a[1] = typeof a[1] === "string" ? a[1] : String(a[1]);
      demand("Connect", a[1] as string);
    });
  }
  // setServers([[family, ip, port], …]): each entry read once, into the copy Node gets.
  hook("setServers", (a) => {
    if (!Array.isArray(a[0])) return; // Node refuses anything else outright
    const given = a[0] as unknown[];
    const servers: unknown[] = [];
    for (let i = 0, n = given.length; i < n; i++) {
      const entry = given[i];
      if (!Array.isArray(entry)) {
        servers.push(entry);
        continue;
      }
      const server = [Number(entry[0]), String(entry[1]), Number(entry[2])] as const;
      demand("Connect", address(server[1], server[2]));
      servers.push(server);
    }
    a[0] = servers;
  });
  // setLocalAddress(ipv4[, ipv6]): where c-ares binds its sockets.
  hook("setLocalAddress", (a) => {
    for (let i = 0; i < a.length && i < 2; i++) {
      if (a[i] === undefined) continue;
      a[i] = String(a[i]);
      demand("Listen", address(a[i] as string, 0));
    }
  });
  Object.freeze(proto);
}
