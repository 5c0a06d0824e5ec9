/**
 * The README's verification snippet ("Verifying calls to your function"), run as published against
 * the platform's signer: what a developer copies must accept the platform's calls and refuse
 * tampered or stale ones.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { buildUpstreamRequest, type UpstreamRequest } from "../../../src/functions/invoke.ts";
import { signUpstreamRequest } from "../../../src/functions/signing.ts";

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
const fn = { name: "f", version: 3, url: "https://fn.example.com/hook?a=1,2&flag", mcp: null };
const identity = { projectId: "p1", userId: "u1", userEmail: "zoë@example.com", requestId: "r1" };
const upstream = buildUpstreamRequest(fn, identity, { body: { text: "é" }, query: { q: "a b" } });

const asRequest = (signed: UpstreamRequest, headers: Record<string, string> = {}, body = signed.init.body) =>
  new Request(signed.url, { method: "POST", headers: { ...signed.init.headers, ...headers }, body });

describe("README verification snippet", () => {
  it("accepts the platform's signed call and returns the body bytes", async () => {
    const signed = await signUpstreamRequest(upstream, SECRET);
    const body = await verifyAmba(asRequest(signed), SECRET);
    expect(new TextDecoder().decode(body ?? undefined)).toBe('{"text":"é"}');
  });

  it("refuses a changed identity header, body or URL, another secret and a stale timestamp", async () => {
    const signed = await signUpstreamRequest(upstream, SECRET);
    expect(await verifyAmba(asRequest(signed, { "x-amba-user-id": "u2" }), SECRET)).toBeNull();
    expect(await verifyAmba(asRequest(signed, {}, '{"text":"e"}'), SECRET)).toBeNull();
    expect(await verifyAmba(asRequest(signed), SECRET, `${signed.url}&more=1`)).toBeNull();
    expect(await verifyAmba(asRequest(signed), `${SECRET}0`)).toBeNull();
    const stale = await signUpstreamRequest(upstream, SECRET, Date.now() - 301_000);
    expect(await verifyAmba(asRequest(stale), SECRET)).toBeNull();
  });
});
