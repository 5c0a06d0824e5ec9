/**
 * Time-ordered ids: UUID version 7 (RFC 9562), generated in the Worker so the database needs no
 * extension or Postgres 18. Monotonic within an isolate: ids minted in the same millisecond carry an
 * increasing 12-bit counter.
 */

let lastMs = -1;
let counter = 0;

const hex = (bytes: Uint8Array) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

/** A new UUIDv7 string. */
export function uuidv7(now: number = Date.now()): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  let ms = now;
  if (ms <= lastMs) {
    ms = lastMs;
    counter++;
    if (counter > 0xfff) {
      ms = ++lastMs;
      counter = 0;
    }
  } else {
    counter = bytes[6]! & 0x07; // random start, with room to count up
  }
  lastMs = ms;
  // 48-bit big-endian millisecond timestamp.
  for (let i = 5; i >= 0; i--) {
    bytes[i] = ms % 256;
    ms = Math.floor(ms / 256);
  }
  bytes[6] = 0x70 | ((counter >> 8) & 0x0f);
  bytes[7] = counter & 0xff;
  bytes[8] = 0x80 | (bytes[8]! & 0x3f);
  const h = hex(bytes);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
