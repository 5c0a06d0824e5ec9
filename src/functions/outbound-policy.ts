/**
 * Where a deployed function may point: the outbound policy checked at deploy and again before every
 * invocation (a version stored under an older policy is still refused). Pure: a URL string and a
 * policy in, the parsed URL out or a 400 `invalid_url` naming the rule that refused it.
 *
 * Refused: non-https URLs (http only under the dev policy), credentials in the URL, literal
 * addresses that are not public unicast (loopback, RFC 1918, CGNAT, ULA, link-local, unspecified,
 * multicast, broadcast, reserved — also inside IPv4-mapped, IPv4-compatible, NAT64 and 6to4 IPv6
 * forms), and internal names (`localhost`, `*.localhost`, `*.internal`, `*.local`, `metadata.*`,
 * names without a dot). WHATWG URL parsing already turns decimal, octal, hex and short IPv4
 * spellings into dotted quads, so one IPv4 check covers them. A public name that resolves to a
 * private address is left to the platform (`global_fetch_strictly_public` in production).
 */
import { AppError } from "../errors.ts";

/**
 * `strict`: https and public destinations only (production). `dev`: additionally http and
 * loopback (127.0.0.0/8, ::1, `localhost`), so `amber serve` on 127.0.0.1 works under
 * `npm run dev`; every other rule still applies.
 */
export type FunctionUrlPolicy = "strict" | "dev";

/** The policy a Worker runs with: `dev` only when the `FUNCTION_URL_POLICY` var says so. */
export const functionUrlPolicy = (setting: string | undefined): FunctionUrlPolicy =>
  setting === "dev" ? "dev" : "strict";

const refuse = (reason: string) => new AppError(400, "invalid_url", `function url refused: ${reason}`);

type Ipv4 = [number, number, number, number];

/** A dotted quad (as WHATWG URL normalises every IPv4 spelling to), or null. */
function parseIpv4(host: string): Ipv4 | null {
  const parts = host.split(".");
  if (parts.length !== 4) return null;
  const octets = parts.map((p) => (/^(0|[1-9][0-9]{0,2})$/.test(p) ? Number(p) : Number.NaN));
  return octets.every((o) => o >= 0 && o <= 255) ? (octets as Ipv4) : null;
}

/** Eight 16-bit groups of an IPv6 literal (with or without brackets, `::`, dotted tail), or null. */
function parseIpv6(literal: string): number[] | null {
  let host = literal.startsWith("[") && literal.endsWith("]") ? literal.slice(1, -1) : literal;
  if (!host.includes(":") || host.includes("%")) return null;
  const tail: number[] = [];
  const lastColon = host.lastIndexOf(":");
  const v4 = parseIpv4(host.slice(lastColon + 1));
  if (v4) {
    tail.push((v4[0] << 8) | v4[1], (v4[2] << 8) | v4[3]);
    host = host.slice(0, lastColon + 1);
    if (!host.endsWith("::")) host = host.slice(0, -1);
  }
  const halves = host.split("::");
  if (halves.length > 2) return null;
  const groups = (s: string) => (s === "" ? [] : s.split(":"));
  const head = groups(halves[0] ?? "");
  const rest = halves.length === 2 ? groups(halves[1] ?? "") : [];
  if ([...head, ...rest].some((g) => !/^[0-9a-f]{1,4}$/i.test(g))) return null;
  const known = head.length + rest.length + tail.length;
  if (halves.length === 1 ? known !== 8 : known > 7) return null;
  const zeros = new Array<number>(8 - known).fill(0);
  return [
    ...head.map((g) => Number.parseInt(g, 16)),
    ...zeros,
    ...rest.map((g) => Number.parseInt(g, 16)),
    ...tail,
  ];
}

/** Why an IPv4 address is not a public unicast destination, or null when it is. */
function ipv4Refusal([a, b, c]: Ipv4): string | null {
  if (a === 127) return "loopback";
  if (a === 0) return "unspecified";
  if (a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168)) return "private";
  if (a === 100 && b >= 64 && b <= 127) return "shared (CGNAT)";
  if (a === 169 && b === 254) return "link-local";
  if (a >= 224 && a <= 239) return "multicast";
  if (a === 255 && b === 255) return "broadcast";
  if (a >= 240) return "reserved";
  if (a === 192 && b === 0 && c === 0) return "reserved";
  if (a === 198 && (b === 18 || b === 19)) return "reserved";
  return null;
}

const v4Of = (hi: number, lo: number): Ipv4 => [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff];

/** Why an IPv6 address is not a public unicast destination, or null when it is. */
function ipv6Refusal(g: number[]): string | null {
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0, g6 = 0, g7 = 0] = g;
  const prefixZero = g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0;
  if (prefixZero && g5 === 0 && g6 === 0 && g7 === 0) return "unspecified";
  if (prefixZero && g5 === 0 && g6 === 0 && g7 === 1) return "loopback";
  // ::ffff:a.b.c.d (mapped), ::a.b.c.d (compatible), 64:ff9b::a.b.c.d (NAT64): judge the IPv4 inside.
  const embedded =
    (prefixZero && (g5 === 0xffff || g5 === 0)) ||
    (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0);
  if (embedded) {
    const inner = ipv4Refusal(v4Of(g6, g7));
    return inner ? `${inner} (IPv4 inside IPv6)` : null;
  }
  if (g0 === 0x2002) {
    const inner = ipv4Refusal(v4Of(g1, g2));
    return inner ? `${inner} (IPv4 inside 6to4)` : null;
  }
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 1) return "local-use NAT64";
  if (prefixZero || (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0)) return "reserved";
  if ((g0 & 0xfe00) === 0xfc00) return "private (unique local)";
  if ((g0 & 0xffc0) === 0xfe80) return "link-local";
  if ((g0 & 0xffc0) === 0xfec0) return "private (site-local)";
  if ((g0 & 0xff00) === 0xff00) return "multicast";
  if (g0 === 0x100 && g1 === 0 && g2 === 0 && g3 === 0) return "reserved";
  return null;
}

const isLoopbackName = (host: string) => host === "localhost" || host.endsWith(".localhost");

/** Why a host name is internal, or null. */
function nameRefusal(host: string): string | null {
  if (isLoopbackName(host)) return "loopback";
  if (host.endsWith(".internal") || host === "internal") return "internal";
  if (host.endsWith(".local") || host === "local") return "internal";
  if (host.startsWith("metadata.") || host === "metadata") return "cloud metadata";
  if (!host.includes(".")) return "internal (no dot)";
  return null;
}

/**
 * The host as judged: trailing dots dropped (`localhost.` names the same host). WHATWG URL strips
 * one and normalises IPv4 spellings only then, so `127.0.0.1..` or `0x7f.0.0.1..` stays a "name";
 * after dropping every trailing dot the host is parsed again, which turns those into dotted quads.
 */
function canonicalHost(hostname: string): string {
  const host = hostname.toLowerCase();
  if (host.startsWith("[") || !host.endsWith(".")) return host;
  const stripped = host.replace(/\.+$/, "");
  try {
    return new URL(`http://${stripped}/`).hostname;
  } catch {
    return stripped;
  }
}

/**
 * Check `raw` against `policy`; the parsed URL when allowed, otherwise a 400 `invalid_url`
 * `function url refused: <rule>` (e.g. `loopback address 127.0.0.1 is not allowed`).
 */
export function checkFunctionUrl(raw: string, policy: FunctionUrlPolicy): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refuse("not an absolute URL");
  }
  const dev = policy === "dev";
  if (url.protocol !== "https:" && !(dev && url.protocol === "http:")) {
    throw refuse(
      `scheme ${url.protocol.slice(0, -1)} is not allowed (${dev ? "http or https" : "https only"})`,
    );
  }
  if (url.username !== "" || url.password !== "") throw refuse("credentials in the URL are not allowed");
  const host = canonicalHost(url.hostname);
  if (host === "") throw refuse("no host");
  const v6 = host.startsWith("[") ? parseIpv6(host) : null;
  if (host.startsWith("[") && !v6) throw refuse(`address ${host} is not allowed`);
  const v4 = v6 ? null : parseIpv4(host);
  const kind = v6 ? ipv6Refusal(v6) : v4 ? ipv4Refusal(v4) : nameRefusal(host);
  if (kind === null) return url;
  if (dev && kind === "loopback") return url;
  const what = v6 || v4 ? "address" : "host";
  throw refuse(`${kind} ${what} ${host} is not allowed`);
}
