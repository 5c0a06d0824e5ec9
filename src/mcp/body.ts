/**
 * Reading a web-standard body stream with a size cap, without buffering past it. Runtime-neutral;
 * used by the Streamable HTTP transport and by callers reading untrusted upstream answers.
 */

/** The stream's text, or null as soon as more than `limit` bytes arrive (the stream is cancelled). */
export async function readTextWithin(
  body: ReadableStream<Uint8Array> | null,
  limit: number,
): Promise<string | null> {
  const bytes = await readBytesWithin(body, limit);
  return bytes === null ? null : new TextDecoder().decode(bytes);
}

/** The stream's bytes, or null as soon as more than `limit` bytes arrive (the stream is cancelled). */
export async function readBytesWithin(
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
