/**
 * stdio framing as pure codecs over bytes/strings: newline-delimited JSON (what MCP hosts send) and
 * `Content-Length:` framing (the original `amber mcp`). The framing is detected per connection from
 * the first non-whitespace byte and replies use the same framing. Also a runtime-neutral loop that
 * wires a byte source and a write function to the dispatcher; binding it to process.stdin/stdout
 * is the CLI's job.
 */
import { type DispatchOptions, dispatchPayload, type Handlers, type McpSession } from "./dispatch.ts";
import { encodeJsonRpc, failure, INVALID_REQUEST, type JsonRpcErrorObject, PARSE_ERROR } from "./jsonrpc.ts";

/** The two stdio framings. */
export type Framing = "ndjson" | "content-length";

/** One decoded item: a parsed JSON value, or an error to answer with (id null). */
export type DecodedItem = { message: unknown } | { error: JsonRpcErrorObject };

/** Options of {@link StdioDecoder}. */
export interface StdioDecoderOptions {
  /** Largest accepted message body in bytes (default 4 MiB); bigger frames become error items. */
  maxFrameBytes?: number;
  /** Force a framing instead of detecting it. */
  framing?: Framing;
}

/** Default largest message: 4 MiB. */
export const DEFAULT_MAX_FRAME_BYTES = 4 * 1024 * 1024;
const MAX_HEADER_LINE_BYTES = 8 * 1024;
const LF = 0x0a;
const CR = 0x0d;

const encoder = new TextEncoder();

function isWhitespace(byte: number): boolean {
  return byte === 0x20 || byte === 0x09 || byte === LF || byte === CR;
}

function parseItem(bytes: Uint8Array, decoder: TextDecoder): DecodedItem {
  try {
    return { message: JSON.parse(decoder.decode(bytes)) };
  } catch {
    return { error: { code: PARSE_ERROR, message: "Parse error" } };
  }
}

const tooLarge = (limit: number): DecodedItem => ({
  error: { code: INVALID_REQUEST, message: `Invalid Request: message larger than ${limit} bytes` },
});

/**
 * Incremental decoder for one stdio connection. `push` accepts arbitrary chunks (partial messages,
 * several messages, UTF-8 sequences split across chunks) and returns the complete items so far.
 * Never throws; garbage and oversized frames become error items and decoding resynchronises.
 */
export class StdioDecoder {
  /** The detected (or forced) framing; undefined until the first non-whitespace byte. */
  framing: Framing | undefined;
  private readonly maxFrameBytes: number;
  private buffer: Uint8Array = new Uint8Array(0);
  private readonly text = new TextDecoder();
  /** Bytes still to drop: a frame too large to keep (content-length), or -1 = until the next newline. */
  private discard = 0;
  /** Content-Length of the frame whose body is awaited, or -1 while reading headers. */
  private bodyLength = -1;
  /** Content-Length seen in the current header block (-1 none, -2 invalid). */
  private headerLength = -1;
  private headerLines = 0;
  /** After a malformed frame: skip bytes up to the next `Content-Length` header. */
  private resync = false;

  constructor(options: StdioDecoderOptions = {}) {
    this.maxFrameBytes = options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
    this.framing = options.framing;
  }

  /** Feeds a chunk; returns every item completed by it. */
  push(chunk: Uint8Array | string): DecodedItem[] {
    const bytes = typeof chunk === "string" ? encoder.encode(chunk) : chunk;
    if (bytes.byteLength === 0) return [];
    if (this.buffer.byteLength === 0) this.buffer = bytes;
    else {
      const joined = new Uint8Array(this.buffer.byteLength + bytes.byteLength);
      joined.set(this.buffer);
      joined.set(bytes, this.buffer.byteLength);
      this.buffer = joined;
    }
    const items: DecodedItem[] = [];
    if (this.framing === undefined && !this.detect()) return items;
    if (this.framing === "ndjson") this.drainLines(items);
    else this.drainFrames(items);
    return items;
  }

  /** Signals end of input: a final unterminated newline-delimited message is still decoded. */
  end(): DecodedItem[] {
    const items: DecodedItem[] = [];
    if (this.framing === "ndjson" && this.discard === 0) {
      const rest = this.buffer;
      this.buffer = new Uint8Array(0);
      if (rest.some((b) => !isWhitespace(b))) items.push(parseItem(rest, this.text));
    }
    this.buffer = new Uint8Array(0);
    return items;
  }

  private detect(): boolean {
    let i = 0;
    while (i < this.buffer.byteLength && isWhitespace(this.buffer[i]!)) i++;
    if (i === this.buffer.byteLength) {
      this.buffer = new Uint8Array(0);
      return false;
    }
    const first = this.buffer[i];
    this.framing = first === 0x7b || first === 0x5b ? "ndjson" : "content-length";
    this.buffer = this.buffer.subarray(i);
    return true;
  }

  private drainLines(items: DecodedItem[]): void {
    let start = 0;
    const buf = this.buffer;
    for (;;) {
      const nl = buf.indexOf(LF, start);
      if (nl === -1) break;
      if (this.discard === -1) this.discard = 0;
      else {
        const end = nl > start && buf[nl - 1] === CR ? nl - 1 : nl;
        const line = buf.subarray(start, end);
        if (line.byteLength > this.maxFrameBytes) items.push(tooLarge(this.maxFrameBytes));
        else if (line.some((b) => !isWhitespace(b))) items.push(parseItem(line, this.text));
      }
      start = nl + 1;
    }
    this.buffer = buf.subarray(start);
    if (this.discard === 0 && this.buffer.byteLength > this.maxFrameBytes) {
      items.push(tooLarge(this.maxFrameBytes));
      this.discard = -1;
    }
    if (this.discard === -1) this.buffer = new Uint8Array(0);
  }

  private drainFrames(items: DecodedItem[]): void {
    for (;;) {
      if (this.discard > 0) {
        const dropped = Math.min(this.discard, this.buffer.byteLength);
        this.discard -= dropped;
        this.buffer = this.buffer.subarray(dropped);
        if (this.discard > 0) return;
      }
      if (this.discard === -1) {
        const nl = this.buffer.indexOf(LF);
        if (nl === -1) {
          this.buffer = new Uint8Array(0);
          return;
        }
        this.discard = 0;
        this.buffer = this.buffer.subarray(nl + 1);
      }
      if (this.bodyLength >= 0) {
        if (this.buffer.byteLength < this.bodyLength) return;
        const body = this.buffer.subarray(0, this.bodyLength);
        const item = parseItem(body, this.text);
        this.bodyLength = -1;
        if ("error" in item) {
          // A Content-Length too long swallowed the next frame's header: serve from there.
          items.push(item);
          const at = findHeader(body, 1);
          if (at === -1) {
            this.buffer = this.buffer.subarray(body.byteLength);
            this.resync = true;
          } else this.buffer = this.buffer.subarray(at);
          continue;
        }
        items.push(item);
        this.buffer = this.buffer.subarray(body.byteLength);
        continue;
      }
      if (this.resync && this.headerLines === 0) {
        const at = findHeader(this.buffer, 0);
        if (at === -1) {
          // Keep a tail that may be the start of a header split across chunks.
          this.buffer = this.buffer.subarray(Math.max(0, this.buffer.byteLength - HEADER_NAME.length));
          return;
        }
        this.buffer = this.buffer.subarray(at);
        this.resync = false;
      }
      const first = this.buffer.findIndex((b) => !isWhitespace(b));
      if (this.headerLines === 0 && (this.buffer[first] === 0x7b || this.buffer[first] === 0x5b)) {
        // A newline-delimited message on a Content-Length connection: accept it as is.
        const nl = this.buffer.indexOf(LF);
        if (nl === -1 && this.buffer.byteLength <= this.maxFrameBytes) return;
        const end = nl === -1 ? this.buffer.byteLength : nl;
        const line = this.buffer.subarray(0, end);
        const item = parseItem(line, this.text);
        const at = "error" in item ? findHeader(line, 1) : -1;
        if (at !== -1) {
          // A body with too short a Content-Length left its tail here, glued to the next header.
          this.buffer = this.buffer.subarray(at);
          continue;
        }
        items.push(item);
        this.buffer = this.buffer.subarray(Math.min(end + 1, this.buffer.byteLength));
        continue;
      }
      const nl = this.buffer.indexOf(LF);
      if (nl === -1) {
        if (this.buffer.byteLength > MAX_HEADER_LINE_BYTES) {
          items.push({ error: { code: PARSE_ERROR, message: "Parse error: header line too long" } });
          this.resetHeaders();
          this.discard = -1;
          continue;
        }
        return;
      }
      const end = nl > 0 && this.buffer[nl - 1] === CR ? nl - 1 : nl;
      const line = this.buffer.subarray(0, end);
      this.buffer = this.buffer.subarray(nl + 1);
      this.headerLine(line, items);
    }
  }

  private resetHeaders(): void {
    this.headerLength = -1;
    this.headerLines = 0;
  }

  private headerLine(line: Uint8Array, items: DecodedItem[]): void {
    if (line.byteLength === 0) {
      if (this.headerLines === 0) return;
      const length = this.headerLength;
      this.resetHeaders();
      if (length < 0) {
        items.push({
          error: { code: PARSE_ERROR, message: "Parse error: missing or invalid Content-Length" },
        });
        this.resync = true;
      } else if (length > this.maxFrameBytes) {
        items.push(tooLarge(this.maxFrameBytes));
        this.discard = length;
      } else this.bodyLength = length;
      return;
    }
    const text = this.text.decode(line);
    const match = /^([A-Za-z0-9-]+)[ \t]*:[ \t]*(.*?)[ \t]*$/.exec(text);
    if (match === null) {
      items.push({ error: { code: PARSE_ERROR, message: "Parse error: expected a Content-Length header" } });
      this.resetHeaders();
      this.resync = true;
      return;
    }
    this.headerLines++;
    if (match[1]!.toLowerCase() === "content-length") {
      this.headerLength = /^\d{1,15}$/.test(match[2]!) ? Number(match[2]) : -2;
    }
  }
}

const HEADER_NAME = encoder.encode("content-length");

/** Where a `Content-Length` header name (any case) starts in `bytes` at or after `from`, or -1. */
function findHeader(bytes: Uint8Array, from: number): number {
  const last = bytes.byteLength - HEADER_NAME.length;
  outer: for (let i = from; i <= last; i++) {
    for (let j = 0; j < HEADER_NAME.length; j++) {
      const b = bytes[i + j]!;
      // ASCII letters compare case-insensitively; '-' only matches itself.
      if ((b >= 0x41 && b <= 0x5a ? b + 0x20 : b) !== HEADER_NAME[j]) continue outer;
    }
    return i;
  }
  return -1;
}

/** Serializes one message (or batch) in `framing`. */
export function encodeMessage(message: unknown, framing: Framing): string {
  const json = encodeJsonRpc(message);
  if (framing === "ndjson") return `${json}\n`;
  return `Content-Length: ${encoder.encode(json).byteLength}\r\n\r\n${json}`;
}

/** Options of {@link serveStdioLoop}. */
export interface StdioLoopOptions {
  /** The incoming byte stream (e.g. process.stdin). */
  read: AsyncIterable<Uint8Array | string>;
  /** Writes one encoded reply; may return a promise to apply backpressure. */
  write: (data: string) => void | Promise<void>;
  /** Answers one decoded item (`null`: nothing to send). */
  answer: (item: DecodedItem) => Promise<unknown>;
  maxFrameBytes?: number;
  /** Force a framing instead of detecting it from the first bytes. */
  framing?: Framing;
  /** Runs once, just after the first chunk's items were dispatched (start background work here). */
  afterFirstChunk?: () => void;
  /** How long a ready reply waits for earlier ones (default {@link REPLY_ORDER_GRACE_MS}; 0: never). */
  replyOrderGraceMs?: number;
  /**
   * Receives, at start, a function that sends a server-initiated message (a notification) in the
   * connection's framing, between replies.
   */
  connect?: (send: (message: unknown) => Promise<void>) => void;
}

/**
 * How long a ready reply waits for the replies to earlier requests before it leaves anyway: long
 * enough for an ordinary tool call (a fresh sandboxed tool host on a busy machine included), short
 * enough that a hanging call never keeps `ping` or `tools/list` from a host.
 */
export const REPLY_ORDER_GRACE_MS = 2000;

/**
 * The one stdio loop: decodes, dispatches every item on arrival, and writes the replies in the
 * connection's framing in request order — scripts read replies by position (the original runtime
 * answered one line at a time), so a reply waits for the earlier ones; one held back longer than
 * {@link REPLY_ORDER_GRACE_MS} by a slow request leaves anyway (JSON-RPC matches replies by id),
 * so nothing blocks the connection. Writes never interleave. At the end of input it waits for the
 * answers in flight. Resolves with the framing that was used.
 */
export async function serveStdioLoop(options: StdioLoopOptions): Promise<Framing | undefined> {
  const decoder = new StdioDecoder({ maxFrameBytes: options.maxFrameBytes, framing: options.framing });
  let writes: Promise<void> = Promise.resolve();
  const inFlight = new Set<Promise<void>>();
  options.connect?.((message) => {
    const text = encodeMessage(message, decoder.framing ?? "ndjson");
    writes = writes.then(() => options.write(text));
    return writes;
  });
  const grace = options.replyOrderGraceMs ?? REPLY_ORDER_GRACE_MS;
  // One slot per item, in arrival order; `text` is undefined until its answer is in (null: none).
  type Slot = { text?: string | null; sent?: true; timer?: ReturnType<typeof setTimeout> };
  const slots: Slot[] = [];
  const send = (slot: Slot) => {
    slot.sent = true;
    clearTimeout(slot.timer);
    const text = slot.text;
    if (text) writes = writes.then(() => options.write(text));
  };
  const flush = () => {
    while (slots.length > 0 && slots[0]!.text !== undefined) {
      const slot = slots.shift()!;
      if (!slot.sent) send(slot);
    }
  };
  const settle = (slot: Slot, reply: unknown) => {
    slot.text =
      reply === null || reply === undefined ? null : encodeMessage(reply, decoder.framing ?? "ndjson");
    if (slots[0] === slot) flush();
    else if (slot.text !== null) {
      if (grace === 0) send(slot);
      else slot.timer = setTimeout(() => send(slot), grace);
    }
  };
  const handle = (items: DecodedItem[]) => {
    for (const item of items) {
      const slot: Slot = {};
      slots.push(slot);
      const done = options.answer(item).then(
        (reply) => settle(slot, reply),
        () => settle(slot, null),
      );
      inFlight.add(done);
      void done.finally(() => inFlight.delete(done));
    }
  };
  let first = options.afterFirstChunk;
  for await (const chunk of options.read) {
    handle(decoder.push(chunk));
    if (first) {
      // After the microtasks that answer cheap requests (initialize, tools/list) have run.
      setTimeout(first, 0);
      first = undefined;
    }
  }
  first?.();
  handle(decoder.end());
  while (inFlight.size > 0) await Promise.all(inFlight);
  await writes;
  return decoder.framing;
}

/** Options of {@link serveStdio}. */
export interface ServeStdioOptions<Ctx> {
  /** The incoming byte stream (e.g. process.stdin). */
  read: AsyncIterable<Uint8Array | string>;
  /** Writes one encoded reply; may return a promise to apply backpressure. */
  write: (data: string) => void | Promise<void>;
  handlers: Handlers<Ctx>;
  ctx: Ctx;
  maxFrameBytes?: number;
  /** Force a framing instead of detecting it from the first bytes. */
  framing?: Framing;
  /** Per-connection MCP state (a fresh one by default). */
  session?: McpSession;
  onInternalError?: DispatchOptions["onInternalError"];
}

/**
 * Serves one stdio connection with a handler table until `read` ends ({@link serveStdioLoop}
 * dispatching to the handlers). Resolves with the framing that was used.
 */
export function serveStdio<Ctx>(options: ServeStdioOptions<Ctx>): Promise<Framing | undefined> {
  const dispatchOptions: DispatchOptions = {
    transport: { session: options.session ?? {} },
    onInternalError: options.onInternalError,
  };
  return serveStdioLoop({
    read: options.read,
    write: options.write,
    maxFrameBytes: options.maxFrameBytes,
    framing: options.framing,
    answer: async (item) =>
      "error" in item
        ? failure(null, item.error.code, item.error.message)
        : dispatchPayload(item.message, options.handlers, options.ctx, dispatchOptions),
  });
}
