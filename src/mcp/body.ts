/**
 * Reading a web-standard body with a size cap, without buffering past it. Runtime-neutral; used by
 * the Streamable HTTP transport and by callers reading untrusted upstream answers.
 */

/** What {@link messageBytesWithin} reads: a `Request` or a `Response`. */
interface Message {
  readonly headers: Headers;
  readonly body: ReadableStream<Uint8Array> | null;
  arrayBuffer(): Promise<ArrayBuffer>;
}

/**
 * The message's body, or null when it is larger than `limit` bytes. A body that declares a
 * `Content-Length` over the limit is refused unread; one that declares it within the limit is read
 * in one native `arrayBuffer()` (HTTP framing holds the body to its declared length; the stream loop
 * below cost ≈ 0.09 ms of CPU per MCP call, BENCHMARKS.md "CPU per request") and its size checked
 * again; a chunked or encoded one, or one whose header is not a plain number, through the capped
 * stream reader. A `Transfer-Encoding` overrides the `Content-Length` (RFC 9112 §6.3), and workerd
 * passes both on: a hostile upstream declaring 10 bytes over a chunked body had it buffered whole.
 */
export async function messageBytesWithin(message: Message, limit: number): Promise<Uint8Array | null> {
  const { headers } = message;
  const declared = headers.get("content-length");
  if (
    declared === null ||
    !/^\d{1,15}$/.test(declared) ||
    encoded(headers) ||
    headers.has("transfer-encoding")
  ) {
    return readBytesWithin(message.body, limit);
  }
  if (Number(declared) > limit) return null;
  const bytes = new Uint8Array(await message.arrayBuffer());
  return bytes.byteLength > limit ? null : bytes;
}

/**
 * True when the body carries a `Content-Encoding`: `fetch` decodes a compressed answer as it is
 * read, so its declared length is the compressed size and says nothing about what `arrayBuffer()`
 * would hold (a gzip bomb); such a body goes through the capped stream reader.
 */
function encoded(headers: Headers): boolean {
  const encoding = headers.get("content-encoding");
  return encoding !== null && encoding.trim().toLowerCase() !== "identity";
}

/** {@link messageBytesWithin} decoded as UTF-8 text. */
export async function messageTextWithin(message: Message, limit: number): Promise<string | null> {
  const bytes = await messageBytesWithin(message, limit);
  return bytes === null ? null : new TextDecoder().decode(bytes);
}

/** The stream's bytes, or null as soon as more than `limit` bytes arrive (the stream is cancelled). */
async function readBytesWithin(
  body: ReadableStream<Uint8Array> | null,
  limit: number,
): Promise<Uint8Array | null> {
  if (body === null) return new Uint8Array(0);
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      return null;
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}
