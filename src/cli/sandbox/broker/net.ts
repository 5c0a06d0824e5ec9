/**
 * The network calls tool code makes by name — `net.Socket#connect`, `net.Server#listen`, `fetch`,
 * `WebSocket`, `dgram` sockets, `dns` — refused up front, with the broker's own message, before
 * anything happens. What they really dial, bind or ask is checked again below them, on the native
 * handles (net-handles.ts), whatever lookup or argument form got there.
 */
import dgram from "node:dgram";
import dns from "node:dns";
import net from "node:net";
import { type AnyFunction, type Broker, type Target, wrap } from "./context.ts";
import { isArray } from "./originals.ts";

/** Installs the up-front checks of the network calls (after the handle hooks). */
export function hookNetCalls(broker: Broker): void {
  const { check, refuseIfDenied } = broker;
  const netResource = (options: Record<string, unknown>, fallbackHost: string): string => {
    if (typeof options.path === "string") return `unix:${options.path}`;
    const host = typeof options.host === "string" && options.host !== "" ? options.host : fallbackHost;
    const shown = host.includes(":") ? `[${host}]` : host;
    return `${shown}:${options.port ?? 0}`;
  };
  const normalize = (net as unknown as { _normalizeArgs: (a: unknown[]) => unknown[] })._normalizeArgs;
  const normalizedArgs = Reflect.ownKeys(normalize([{}])).find((k) => typeof k === "symbol");
  // Up front, by name (the broker's message before anything happens); the dial hook
  // (net-handles.ts) checks the address Node really connects to, whatever lookup or argument form
  // got it there.
  wrap(net.Socket.prototype as unknown as Target, "connect", (a) => {
    const first = a[0];
    const normalized =
      isArray(first) && normalizedArgs !== undefined && (first as unknown as Target)[normalizedArgs]
        ? first
        : normalize(a);
    const o = (normalized[0] ?? {}) as Record<string, unknown>;
    const path = o.path;
    const host = o.host;
    const port = o.port;
    refuseIfDenied(
      "Network",
      "Connect",
      netResource(
        { path, host, port: typeof port === "string" || typeof port === "number" ? port : 0 },
        "localhost",
      ),
    );
  });
  wrap(net.Server.prototype as unknown as Target, "listen", (a) => {
    const first = a[0];
    let options: Record<string, unknown>;
    if (typeof first === "object" && first !== null && !Array.isArray(first)) {
      const o = first as Record<string, unknown>;
      options =
        "fd" in o || "_handle" in o || "handle" in o ? { host: "fd", port: String(o.fd ?? "handle") } : o;
    } else if (typeof first === "string" && !/^\d+$/.test(first)) options = { path: first };
    else options = { port: first ?? 0, host: typeof a[1] === "string" ? a[1] : undefined };
    refuseIfDenied("Network", "Listen", netResource(options, "0.0.0.0"));
  });
  // fetch and WebSocket (undici) connect through net.Socket, checked above, but undici reports a
  // refused connect as a bare "fetch failed". Refuse them up front instead, with the broker's own
  // error; an allowed request is audited once, by the socket connect it makes.
  const urlResource = (raw: unknown, ports: Record<string, string>): string | null => {
    let url: URL;
    try {
      url = new URL(raw instanceof Request ? raw.url : String(raw));
    } catch {
      return null; // the original reports the bad URL
    }
    const port = url.port || ports[url.protocol];
    if (port === undefined) return null; // data:, blob:, … never touch the network
    return netResource({ host: url.hostname.replace(/^\[(.*)\]$/, "$1"), port }, "localhost");
  };
  const refuseUpFront = (resource: string | null) => {
    if (resource !== null) refuseIfDenied("Network", "Connect", resource);
  };
  const HTTP_PORTS = { "http:": "80", "https:": "443" };
  const globals = globalThis as unknown as Target;
  if (typeof globals.fetch === "function") {
    const originalFetch = globals.fetch as AnyFunction;
    const checkedFetch = function fetch(this: unknown, ...args: unknown[]) {
      try {
        refuseUpFront(urlResource(args[0], HTTP_PORTS));
      } catch (error) {
        return Promise.reject(error);
      }
      return Reflect.apply(originalFetch, this, args);
    };
    Reflect.defineProperty(globals, "fetch", { value: checkedFetch, writable: true, configurable: true });
  }
  if (typeof globals.WebSocket === "function") {
    const OriginalWebSocket = globals.WebSocket as typeof WebSocket;
    const WS_PORTS = { "ws:": "80", "wss:": "443", ...HTTP_PORTS };
    class CheckedWebSocket extends OriginalWebSocket {
      constructor(url: string | URL, protocols?: string | string[]) {
        refuseUpFront(urlResource(url, WS_PORTS));
        super(url as string, protocols);
      }
    }
    Object.defineProperty(CheckedWebSocket, "name", { value: "WebSocket" });
    Reflect.defineProperty(globals, "WebSocket", {
      value: CheckedWebSocket,
      writable: true,
      configurable: true,
    });
  }
  const dgramTarget = dgram.Socket.prototype as unknown as Target;
  wrap(dgramTarget, "bind", (a) => {
    const o = a[0];
    const options = typeof o === "object" && o !== null ? (o as Record<string, unknown>) : { port: o };
    refuseIfDenied(
      "Network",
      "Listen",
      netResource({ host: options.address, port: options.port }, "0.0.0.0"),
    );
  });
  wrap(dgramTarget, "connect", (a) =>
    refuseIfDenied(
      "Network",
      "Connect",
      netResource({ port: a[0], host: typeof a[1] === "string" ? a[1] : undefined }, "localhost"),
    ),
  );
  wrap(dgramTarget, "send", (a) => {
    const numbers = a.filter((x) => typeof x === "number");
    const strings = a
      .filter((x) => typeof x === "string")
      .slice(a[0] === undefined || typeof a[0] !== "string" ? 0 : 1);
    if (numbers.length === 0) return; // connected socket: checked by connect()
    const port = numbers.length >= 3 ? numbers[2] : numbers[0];
    refuseIfDenied("Network", "Connect", netResource({ port, host: strings[0] }, "localhost"));
  });
  const DNS_NAMES = [
    "lookup",
    "lookupService",
    "resolve",
    "resolve4",
    "resolve6",
    "resolveAny",
    "resolveCaa",
    "resolveCname",
    "resolveMx",
    "resolveNaptr",
    "resolveNs",
    "resolvePtr",
    "resolveSoa",
    "resolveSrv",
    "resolveTxt",
    "reverse",
  ];
  // A lookup goes through the system's resolver (getaddrinfo, getnameinfo), checked here; a
  // resolver's queries and servers go through its handle, checked there (hookResolver) — here they
  // are only refused early, by name, with the line left to the handle.
  const SYSTEM_LOOKUPS = new Set(["lookup", "lookupService"]);
  for (const target of [dns, dns.promises, dns.Resolver.prototype, dns.promises.Resolver.prototype]) {
    for (const name of DNS_NAMES)
      wrap(target as unknown as Target, name, (a) =>
        SYSTEM_LOOKUPS.has(name)
          ? check("Network", "Connect", String(a[0]))
          : refuseIfDenied("Network", "Connect", String(a[0])),
      );
  }
}
