/**
 * The stdin/stdout loop of `session` and `mcp` on the protocol core's decoder: every message is
 * dispatched on arrival (cheap methods answer at once; `tools/call`s wait their turn in the tool
 * server's queue, one at a time) and answered strictly in arrival order, each reply written as soon
 * as it and the ones before it are ready, in the connection's framing. EOF waits for the answers in flight.
 */
import {
  type DecodedItem,
  encodeMessage,
  type Framing,
  type JsonRpcResponse,
  StdioDecoder,
} from "../mcp/index.ts";

/** Options of {@link serveOrdered}. */
export interface OrderedLoopOptions {
  read: AsyncIterable<Uint8Array | string>;
  write: (data: string) => void | Promise<void>;
  /** Answers one decoded item (`null`: nothing to send). */
  answer: (item: DecodedItem) => Promise<JsonRpcResponse | JsonRpcResponse[] | null>;
  /** Force a framing (session: newline-delimited only). */
  framing?: Framing;
  /** Runs once, after the first chunk's answers are on their way (start background work here). */
  afterFirstChunk?: () => void;
}

/** Serves one stdio connection until its input ends. */
export async function serveOrdered(options: OrderedLoopOptions): Promise<void> {
  const decoder = new StdioDecoder({ framing: options.framing });
  let queue: Promise<void> = Promise.resolve();
  const enqueue = (items: DecodedItem[]) => {
    for (const item of items) {
      const reply = options.answer(item);
      queue = queue.then(async () => {
        const response = await reply;
        if (response !== null) await options.write(encodeMessage(response, decoder.framing ?? "ndjson"));
      });
    }
  };
  let first = options.afterFirstChunk;
  for await (const chunk of options.read) {
    enqueue(decoder.push(chunk));
    if (first) {
      // After the microtasks that answer cheap requests (initialize, tools/list) have run.
      setImmediate(first);
      first = undefined;
    }
  }
  first?.();
  enqueue(decoder.end());
  await queue;
}

/** Writes to stdout, waiting for `drain` when the pipe is full. */
export function writeStdout(data: string): Promise<void> | undefined {
  if (process.stdout.write(data)) return;
  return new Promise((resolve) => process.stdout.once("drain", () => resolve()));
}
