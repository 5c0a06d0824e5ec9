import { describe, expect, it } from "vitest";
import { messageBytesWithin, messageTextWithin } from "../../src/mcp/body.ts";

/** A body that never ends: only a reader that stops at the limit finishes on it. */
function endless(): ReadableStream<Uint8Array> {
  const chunk = new Uint8Array(4096);
  return new ReadableStream({ pull: (controller) => controller.enqueue(chunk) });
}

describe("messageBytesWithin", () => {
  it("reads a body within its declared length", async () => {
    const response = new Response("héllo", { headers: { "content-length": "6" } });
    expect(await messageTextWithin(response, 6)).toBe("héllo");
  });

  it("refuses a declared length over the limit without reading", async () => {
    const response = new Response(endless(), { headers: { "content-length": "5000" } });
    expect(await messageBytesWithin(response, 1000)).toBeNull();
  });

  it("refuses a body longer than the length it declares", async () => {
    const response = new Response("x".repeat(2000), { headers: { "content-length": "10" } });
    expect(await messageBytesWithin(response, 1000)).toBeNull();
  });

  it("reads an encoded body through the capped reader: its declared length is the compressed size", async () => {
    // fetch decodes gzip as the body is read; a whole-body read of a bomb would never stop.
    const response = new Response(endless(), {
      headers: { "content-length": "10", "content-encoding": "gzip" },
    });
    expect(await messageBytesWithin(response, 1000)).toBeNull();
  });

  it("reads chunked bodies and malformed lengths through the capped reader", async () => {
    expect(await messageBytesWithin(new Response(endless()), 1000)).toBeNull();
    const malformed = new Response(endless(), { headers: { "content-length": "1e1" } });
    expect(await messageBytesWithin(malformed, 1000)).toBeNull();
    const small = new Response("abc", { headers: { "content-length": " 3" } });
    expect(await messageTextWithin(small, 1000)).toBe("abc");
  });
});
