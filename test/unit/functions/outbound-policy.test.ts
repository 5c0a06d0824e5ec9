/**
 * The outbound policy for function URLs, with literals: every spelling of an internal destination
 * is refused with a message naming the rule; public https URLs pass; the dev policy opens http and
 * loopback only.
 */
import { describe, expect, it } from "vitest";
import { AppError } from "../../../src/errors.ts";
import { checkFunctionUrl, functionUrlPolicy } from "../../../src/functions/outbound-policy.ts";

/** The refusal message for `url` under `policy` (fails the test when the URL is allowed). */
function refusal(url: string, policy: "strict" | "dev" = "strict"): string {
  try {
    checkFunctionUrl(url, policy);
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({ status: 400, code: "invalid_url" });
    return (err as AppError).message;
  }
  throw new Error(`${url} was allowed under ${policy}`);
}

describe("checkFunctionUrl", () => {
  it("allows public https URLs", () => {
    for (const url of [
      "https://fn.example.com/add",
      "https://api.example.co.uk:8443/x?y=1",
      "https://93.184.216.34/",
      "https://[2606:4700::1111]/",
      "https://[::ffff:93.184.216.34]/",
      "https://[64:ff9b::808:808]/",
      "https://8.8.8.8/",
    ]) {
      expect(checkFunctionUrl(url, "strict").href).toBe(new URL(url).href);
    }
  });

  it("names the rule: loopback address", () => {
    expect(refusal("https://127.0.0.1:9911/add")).toBe(
      "function url refused: loopback address 127.0.0.1 is not allowed",
    );
  });

  it("refuses http in production and allows it under the dev policy", () => {
    expect(refusal("http://fn.example.com/")).toBe(
      "function url refused: scheme http is not allowed (https only)",
    );
    expect(checkFunctionUrl("http://fn.example.com/", "dev").hostname).toBe("fn.example.com");
    expect(refusal("ftp://fn.example.com/", "dev")).toContain("scheme ftp is not allowed");
    expect(refusal("file:///etc/passwd")).toContain("scheme file");
    expect(refusal("not a url")).toContain("not an absolute URL");
  });

  it("refuses credentials in the URL, under both policies", () => {
    expect(refusal("https://user:pass@fn.example.com/")).toBe(
      "function url refused: credentials in the URL are not allowed",
    );
    expect(refusal("https://user@fn.example.com/")).toContain("credentials");
    expect(refusal("http://u:p@127.0.0.1:1/", "dev")).toContain("credentials");
  });

  it.each([
    // every IPv4 spelling of 127.0.0.1 (WHATWG URL normalises them; each is checked anyway)
    ["https://127.0.0.1/", "loopback address 127.0.0.1"],
    ["https://2130706433/", "loopback address 127.0.0.1"],
    ["https://0x7f000001/", "loopback address 127.0.0.1"],
    ["https://0x7f.0.0.1/", "loopback address 127.0.0.1"],
    ["https://0177.0.0.1/", "loopback address 127.0.0.1"],
    ["https://017700000001/", "loopback address 127.0.0.1"],
    ["https://127.1/", "loopback address 127.0.0.1"],
    ["https://127.0.1/", "loopback address 127.0.0.1"],
    ["https://127.0.0.1./", "loopback address 127.0.0.1"],
    ["https://127.255.255.254/", "loopback address 127.255.255.254"],
    ["https://%31%32%37.0.0.1/", "loopback address 127.0.0.1"],
    ["https://0/", "unspecified address 0.0.0.0"],
    ["https://0.0.0.0/", "unspecified address 0.0.0.0"],
    ["https://10.0.0.5/", "private address 10.0.0.5"],
    ["https://172.16.0.1/", "private address 172.16.0.1"],
    ["https://172.31.255.255/", "private address 172.31.255.255"],
    ["https://192.168.1.1/", "private address 192.168.1.1"],
    ["https://3232235777/", "private address 192.168.1.1"],
    ["https://100.64.0.1/", "shared (CGNAT) address 100.64.0.1"],
    ["https://100.127.255.255/", "shared (CGNAT) address 100.127.255.255"],
    ["https://169.254.169.254/", "link-local address 169.254.169.254"],
    ["https://0xa9fea9fe/", "link-local address 169.254.169.254"],
    ["https://224.0.0.1/", "multicast address 224.0.0.1"],
    ["https://239.255.255.250/", "multicast address 239.255.255.250"],
    ["https://255.255.255.255/", "broadcast address 255.255.255.255"],
    ["https://240.0.0.1/", "reserved address 240.0.0.1"],
    // IPv6
    ["https://[::1]/", "loopback address [::1]"],
    ["https://[0:0:0:0:0:0:0:1]/", "loopback address [::1]"],
    ["https://[::]/", "unspecified address [::]"],
    ["https://[fc00::1]/", "private (unique local) address [fc00::1]"],
    ["https://[fd12:3456::1]/", "private (unique local) address [fd12:3456::1]"],
    ["https://[fe80::1]/", "link-local address [fe80::1]"],
    ["https://[febf::1]/", "link-local address [febf::1]"],
    ["https://[fec0::1]/", "private (site-local) address [fec0::1]"],
    ["https://[ff02::1]/", "multicast address [ff02::1]"],
    // IPv4 inside IPv6
    ["https://[::ffff:127.0.0.1]/", "loopback (IPv4 inside IPv6) address [::ffff:7f00:1]"],
    ["https://[::ffff:7f00:1]/", "loopback (IPv4 inside IPv6) address [::ffff:7f00:1]"],
    ["https://[::ffff:169.254.169.254]/", "link-local (IPv4 inside IPv6)"],
    ["https://[::ffff:10.0.0.1]/", "private (IPv4 inside IPv6)"],
    ["https://[::127.0.0.1]/", "loopback (IPv4 inside IPv6) address [::7f00:1]"],
    ["https://[::a9fe:a9fe]/", "link-local (IPv4 inside IPv6)"],
    ["https://[64:ff9b::127.0.0.1]/", "loopback (IPv4 inside IPv6) address [64:ff9b::7f00:1]"],
    ["https://[64:ff9b::192.168.0.1]/", "private (IPv4 inside IPv6)"],
    ["https://[64:ff9b:1::1]/", "local-use NAT64"],
    ["https://[2002:7f00:1::]/", "loopback (IPv4 inside 6to4)"],
    ["https://[2002:c0a8:101::1]/", "private (IPv4 inside 6to4)"],
    // internal names
    ["https://localhost/", "loopback host localhost"],
    ["https://LOCALHOST./", "loopback host localhost"],
    ["https://api.localhost/", "loopback host api.localhost"],
    ["https://db.internal/", "internal host db.internal"],
    ["https://metadata.google.internal/", "internal host metadata.google.internal"],
    ["https://printer.local/", "internal host printer.local"],
    ["https://metadata.example.com/", "cloud metadata host metadata.example.com"],
    ["https://intranet/", "internal (no dot) host intranet"],
    // more than one trailing dot: WHATWG URL keeps the host as a name, unnormalised
    ["https://localhost../", "loopback host localhost"],
    ["https://127.0.0.1../", "loopback address 127.0.0.1"],
    ["https://0x7f.0.0.1.../", "loopback address 127.0.0.1"],
    ["https://169.254.169.254../", "link-local address 169.254.169.254"],
    ["https://printer.local../", "internal host printer.local"],
  ])("refuses %s (%s)", (url, rule) => {
    expect(refusal(url)).toContain(rule);
  });

  it("dev policy: http and loopback allowed, nothing else widened", () => {
    for (const url of [
      "http://127.0.0.1:9911/add",
      "http://[::1]:9911/add",
      "http://localhost:9911/add",
      "http://2130706433:9911/",
    ]) {
      expect(() => checkFunctionUrl(url, "dev")).not.toThrow();
    }
    expect(refusal("http://10.0.0.1/", "dev")).toContain("private address 10.0.0.1");
    expect(refusal("http://169.254.169.254/", "dev")).toContain("link-local");
    expect(refusal("http://[::ffff:192.168.0.1]/", "dev")).toContain("private (IPv4 inside IPv6)");
    expect(refusal("http://db.internal/", "dev")).toContain("internal host");
    expect(refusal("http://0.0.0.0:9911/", "dev")).toContain("unspecified");
  });

  it("reads the policy from the Worker setting: dev only when it says dev", () => {
    expect(functionUrlPolicy("dev")).toBe("dev");
    expect(functionUrlPolicy(undefined)).toBe("strict");
    expect(functionUrlPolicy("")).toBe("strict");
    expect(functionUrlPolicy("strict")).toBe("strict");
    expect(functionUrlPolicy("DEV ")).toBe("strict");
  });
});
