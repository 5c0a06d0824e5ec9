/**
 * The README's verification snippet ("Verifying calls to your function"), run as published against
 * the platform's signer: what a developer copies must accept the platform's calls and refuse
 * tampered or stale ones.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { buildUpstreamRequest, type UpstreamRequest } from "../../../src/functions/invoke.ts";
import { type SigningKeys, signUpstreamRequest, verifySignature } from "../../../src/functions/signing.ts";

type Verify = (request: Request, secret: string, url?: string) => Promise<Uint8Array | null>;
let verifyAmba: Verify;

beforeAll(async () => {
  const readme = readFileSync(join(import.meta.dirname, "../../../README.md"), "utf8");
  const section = readme.slice(readme.indexOf("## Verifying calls to your function"));
  const code = /```js\n([\s\S]*?)```/.exec(section)?.[1];
  if (!code) throw new Error('README: no js block under "Verifying calls to your function"');
  ({ verifyAmba } = await import(`data:text/javascript,${encodeURIComponent(code)}`));
});

const SECRET = `amba_fsig_${"ab".repeat(32)}`;
const OLD = `amba_fsig_${"cd".repeat(32)}`;
const keys: SigningKeys = { secret: SECRET, previous: null };
/** A rotation's overlap: `OLD` still signed with until `expiresAtMs`. */
const overlap = (expiresAtMs: number): SigningKeys => ({
  secret: SECRET,
  previous: { secret: OLD, expiresAtMs },
});
const fn = { name: "f", version: 3, url: "https://fn.example.com/hook?a=1,2&flag", mcp: null };
const identity = { projectId: "p1", userId: "u1", userEmail: "zoë@example.com", requestId: "r1" };
const upstream = buildUpstreamRequest(fn, identity, { body: { text: "é" }, query: { q: "a b" } });

const asRequest = (signed: UpstreamRequest, headers: Record<string, string> = {}, body = signed.init.body) =>
  new Request(signed.url, { method: "POST", headers: { ...signed.init.headers, ...headers }, body });

describe("README verification snippet", () => {
  it("accepts the platform's signed call and returns the body bytes", async () => {
    const signed = await signUpstreamRequest(upstream, keys);
    const body = await verifyAmba(asRequest(signed), SECRET);
    expect(new TextDecoder().decode(body ?? undefined)).toBe('{"text":"é"}');
  });

  it("refuses a changed identity header, body or URL, another secret and a stale timestamp", async () => {
    const signed = await signUpstreamRequest(upstream, keys);
    expect(await verifyAmba(asRequest(signed, { "x-amba-user-id": "u2" }), SECRET)).toBeNull();
    expect(await verifyAmba(asRequest(signed, {}, '{"text":"e"}'), SECRET)).toBeNull();
    expect(await verifyAmba(asRequest(signed), SECRET, `${signed.url}&more=1`)).toBeNull();
    expect(await verifyAmba(asRequest(signed), `${SECRET}0`)).toBeNull();
    const stale = await signUpstreamRequest(upstream, keys, Date.now() - 301_000);
    expect(await verifyAmba(asRequest(stale), SECRET)).toBeNull();
  });

  it("during a rotation's overlap accepts the call with either secret, after it with the new one only", async () => {
    const during = await signUpstreamRequest(upstream, overlap(Date.now() + 60_000));
    expect(during.init.headers["x-amba-signature"]).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    for (const secret of [SECRET, OLD]) {
      const body = await verifyAmba(asRequest(during), secret);
      expect(new TextDecoder().decode(body ?? undefined)).toBe('{"text":"é"}');
    }
    expect(await verifyAmba(asRequest(during), `${SECRET}0`)).toBeNull();
    // The new signature comes first: a header cut to its first v1 verifies with the new secret only.
    const first = during.init.headers["x-amba-signature"]?.split(",").slice(0, 2).join(",") as string;
    expect(await verifyAmba(asRequest(during, { "x-amba-signature": first }), SECRET)).not.toBeNull();
    expect(await verifyAmba(asRequest(during, { "x-amba-signature": first }), OLD)).toBeNull();

    const after = await signUpstreamRequest(upstream, overlap(Date.now() - 1));
    expect(after.init.headers["x-amba-signature"]).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(await verifyAmba(asRequest(after), SECRET)).not.toBeNull();
    expect(await verifyAmba(asRequest(after), OLD)).toBeNull();
  });
});

describe("verifySignature (what amber serve runs)", () => {
  const headerOf = (signed: { init: { headers: Record<string, string> } }) =>
    signed.init.headers["x-amba-signature"] as string;
  const check = async (secrets: string[], signature?: string) => {
    const signed = await signUpstreamRequest(upstream, overlap(Date.now() + 60_000));
    const headers = { ...signed.init.headers, "x-amba-signature": signature ?? headerOf(signed) };
    return verifySignature({ method: "POST", url: signed.url, headers, body: signed.init.body }, secrets);
  };

  it("matches any v1 against any of several secrets and says which matched", async () => {
    const both = await check([OLD, "amba_fsig_other"]);
    expect("matched" in both && both.matched).toHaveLength(1);
    const all = await check([SECRET, OLD]);
    expect("matched" in all && all.matched).toHaveLength(2);
    expect(await check(["amba_fsig_other"])).toEqual({ problem: "the signature does not match" });
  });

  it("refuses malformed headers with the reason", async () => {
    const t = Math.floor(Date.now() / 1000);
    const v1 = `v1=${"0".repeat(64)}`;
    const malformed = "x-amba-signature is not t=<unix seconds>,v1=<64 hex digits>[,v1=…]";
    for (const value of [
      "",
      `t=${t}`,
      `t=${t},`,
      `t=${t},v1=`,
      `t=${t},v1=${"g".repeat(64)}`,
      `t=${t},${v1},`,
    ]) {
      expect(await check([SECRET], value), value).toEqual({ problem: malformed });
    }
    const nine = [`t=${t}`, ...Array(9).fill(v1)].join(",");
    expect(await check([SECRET], nine)).toEqual({
      problem: "x-amba-signature carries more than 8 v1 signatures",
    });
    expect(await check([SECRET], `t=${t}${",".repeat(1_000_000)}`)).toEqual({
      problem: "x-amba-signature carries more than 8 v1 signatures",
    });
  });
});
