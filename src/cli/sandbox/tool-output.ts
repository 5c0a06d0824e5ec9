/**
 * What a tool process prints (its stdout and stderr, together) on its way to the CLI's stderr,
 * bounded: at most {@link MAX_TOOL_OUTPUT_BYTES} per window — the output before a host's first
 * call, then each call's — and the rest dropped, with one line saying how much once the window
 * closes. A call's window runs until the next call starts (or the host ends): the tool's two pipes
 * and the channel its answer comes on are read in no set order, so the tail of what a call printed
 * can arrive after its answer, and what its timers print later is charged to it too. The pipes are
 * always read to the end, so the tool never waits on the CLI.
 *
 * Node writes the CLI's stderr asynchronously when it is a pipe (measured on Node 20 and 22: a
 * write to a pipe nobody reads returns at once and the bytes wait in `writableLength`), so a write
 * here never blocks the protocol loop; what an unread stderr costs is memory, and past
 * {@link MAX_PENDING_STDERR_BYTES} waiting, tool output is dropped too. A terminal or a file is
 * written synchronously by Node, as for any program.
 */
import { StringDecoder } from "node:string_decoder";
import { printable, printableLines } from "../../printable.ts";

/** The most of a tool's output forwarded per window. */
export const MAX_TOOL_OUTPUT_BYTES = 1024 * 1024;

/** Beyond this much of our stderr waiting for its reader, tool output is dropped, not queued. */
export const MAX_PENDING_STDERR_BYTES = 4 * 1024 * 1024;

/** Where the output goes: the CLI's stderr (`writableLength` is what waits for its reader). */
export type OutputSink = Pick<NodeJS.WritableStream, "write"> & { writableLength?: number };

/**
 * A filter for one of the tool's pipes that escapes what a terminal acts on (printable.ts; lines
 * and tabs kept). Used under a restriction: the user's terminal is outside the sandbox, and an
 * escape sequence reaches what no grant covers — the clipboard (OSC 52), the window title, the
 * screen the user reads amber's own lines on. One per pipe: a character may span two chunks.
 */
export function escapedPipe(): (chunk: Buffer) => Buffer {
  const decoder = new StringDecoder("utf8");
  return (chunk) => Buffer.from(printableLines(decoder.write(chunk)));
}

/** Where V8's or Node's report of a fatal error starts (V8 heads an out-of-memory one with its last collections). */
const FATAL_REPORT = /\n?<--- Last few GCs --->|FATAL ERROR: /;

/** The most of a fatal report held back: V8's and Node's are a few KiB; past this it was the tool's text. */
const MAX_FATAL_REPORT_BYTES = 64 * 1024;

/**
 * A host's stderr on its way out, with V8's and Node's report of a fatal error held back: from its
 * first line (the last collections, then `FATAL ERROR: …` and a native stack with addresses) to
 * the host's end, which it precedes, it is Node's, not the tool's, and it means nothing to the
 * user; {@link summary} is the one line said instead. Tool code can print the same text, and then
 * only delays its own output: what is held is let go ({@link release}) when the host lives on to
 * the next call, or grows past any report's size.
 */
export class FatalReport {
  #held: Buffer[] = [];
  #heldBytes = 0;

  /** What of `chunk` goes out now (the rest is held). */
  take(chunk: Buffer): Buffer[] {
    if (this.#heldBytes === 0) {
      const start = FATAL_REPORT.exec(chunk.toString("latin1"))?.index;
      if (start === undefined) return [chunk];
      this.#hold(chunk.subarray(start));
      return start === 0 ? [] : [chunk.subarray(0, start)];
    }
    this.#hold(chunk);
    return this.#heldBytes > MAX_FATAL_REPORT_BYTES ? this.release() : [];
  }

  #hold(chunk: Buffer): void {
    this.#held.push(chunk);
    this.#heldBytes += chunk.length;
  }

  /** What was held, to go out after all (the host did not end). */
  release(): Buffer[] {
    const held = this.#held;
    this.#held = [];
    this.#heldBytes = 0;
    return held;
  }

  /** Whether what is held reports that V8 ran out of memory. */
  outOfMemory(): boolean {
    return /heap out of memory|Allocation failed/.test(Buffer.concat(this.#held).toString("latin1"));
  }

  /** The report's one line (`FATAL ERROR: …`), for a host that ended of something else than memory. */
  summary(): string | undefined {
    const line = /FATAL ERROR: ([^\n]*)/.exec(Buffer.concat(this.#held).toString())?.[1];
    return line === undefined ? undefined : printable(line.trim());
  }
}

/** The forwarding state of one tool host. */
export class ToolOutput {
  readonly #sink: OutputSink;
  #where = "outside calls";
  #forwarded = 0;
  #dropped = 0;
  /** Whether anything was dropped for the limit (else only for an unread stderr). */
  #overLimit = false;

  constructor(sink: OutputSink) {
    this.#sink = sink;
  }

  /** Forwards what fits of `chunk` in this window and counts the rest. */
  write(chunk: Buffer): void {
    const room = MAX_TOOL_OUTPUT_BYTES - this.#forwarded;
    const fits = Math.min(room, chunk.length);
    if (fits < chunk.length) this.#overLimit = true;
    if (fits > 0 && (this.#sink.writableLength ?? 0) <= MAX_PENDING_STDERR_BYTES) {
      this.#sink.write(fits === chunk.length ? chunk : chunk.subarray(0, fits));
      this.#forwarded += fits;
      this.#dropped += chunk.length - fits;
    } else {
      this.#dropped += chunk.length;
    }
  }

  /** Says `what` (one line of amber's own, never counted against the limit) of the current window. */
  notice(what: string, detail = ""): void {
    this.#sink.write(`amber: ${what} ${this.#where}${detail}\n`);
  }

  /** Closes the window (its note, if anything was dropped) and opens the one of call `name`. */
  beginCall(name: string): void {
    this.end();
    this.#where = `in call ${printable(name)}`;
  }

  /** Closes the window: one line saying how much was dropped, if anything was. */
  end(): void {
    if (this.#dropped > 0)
      this.#sink.write(
        this.#overLimit
          ? `amber: tool output over 1 MiB ${this.#where}; ${this.#dropped} bytes dropped\n`
          : `amber: stderr is not being read; tool output ${this.#where}: ${this.#dropped} bytes dropped\n`,
      );
    this.#forwarded = 0;
    this.#dropped = 0;
    this.#overLimit = false;
  }
}
