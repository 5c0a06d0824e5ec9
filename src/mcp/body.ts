/**
 * Reading a web-standard body stream with a size cap, without buffering past it. Runtime-neutral;
 * used by the Streamable HTTP transport and by callers reading untrusted upstream answers.
 */

/** The stream's text, or null as soon as more than `limit` bytes arrive (the stream is cancelled). */
export async function readTextWithin(
  body: ReadableStream<Uint8Array> | null,
  limit: number,
): Promise<string | null> {
  if (body === null) return "";
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
  return new TextDecoder().decode(bytes);
}
