/**
 * `fs.close` under the broker closes at once. A close the tool queues on libuv's pool would run
 * later, when a thread is free — also in the middle of a call of the broker's, which blocks only
 * the main thread: a close of the number the broker's next descriptor gets, queued ahead, and an
 * open of the tool's landing on that number, had the broker read, write or truncate another file
 * than the one the CLI confirmed. (That interleaving is a matter of the pool's timing; what is
 * asserted here is that no close is left for the pool to run.)
 */

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestCli, LineClient, scratch } from "./helpers.ts";

const TOOLS = `
const fs = require("node:fs");
export function closeAtCall({ file }) {
  const fd = fs.openSync(file, "r");
  let called = false;
  fs.close(fd, () => { called = true; });
  let open;
  try { fs.fstatSync(fd); open = "still open"; } catch (error) { open = error.code; }
  return { open, called };
}
export async function closeAsNode() {
  const missing = await new Promise((resolve) => fs.close(999999, (error) => resolve(error?.code)));
  let invalid;
  try { fs.close("x", () => {}); } catch (error) { invalid = error.code; }
  let badCallback;
  try { fs.close(999999, "x"); } catch (error) { badCallback = error.code; }
  const file = fs.openSync(${JSON.stringify("__FILE__")}, "r");
  const closed = await new Promise((resolve) => fs.close(file, (...args) => resolve(args)));
  return { missing, invalid, badCallback, closed };
}
/** A FileHandle's number is its own until its close is done: closing it by number is refused. */
export async function handleNumber({ file }) {
  const handle = await fs.promises.open(file);
  const number = handle.fd;
  const tries = [];
  for (const attempt of [() => fs.closeSync(number), () => fs.close(number, () => {}), () => fs.createReadStream(null, { fd: number })]) {
    try {
      attempt();
      tries.push("closed");
    } catch (error) {
      tries.push(error.message.replace(/\\d+/g, "N"));
    }
  }
  const text = await handle.readFile("utf8");
  await handle.close();
  let after;
  try { fs.closeSync(number); after = "closed"; } catch (error) { after = error.code; }
  return { tries, text, after };
}
export async function streamCloses() {
  const stream = fs.createReadStream(${JSON.stringify("__FILE__")}, "utf8");
  let text = "";
  for await (const chunk of stream) text += chunk;
  await new Promise((resolve) => (stream.closed ? resolve() : stream.on("close", resolve)));
  return text;
}
`;

describe("sandbox: fs.close closes at once", () => {
  let dir: string;
  let session: LineClient;

  beforeAll(async () => {
    const { bin } = await buildTestCli();
    dir = scratch({ "data/file.txt": "contents" });
    const file = join(dir, "data/file.txt");
    writeFileSync(join(dir, "tools.js"), TOOLS.replaceAll("__FILE__", file));
    session = new LineClient(bin, ["session", "--sandbox", "--allow-read", "data", "tools.js"], { cwd: dir });
  });

  afterAll(async () => {
    await session?.close();
  });

  it("no close of the tool's is left for libuv's pool to run later", async () => {
    const response = await session.call("closeAtCall", { file: join(dir, "data/file.txt") });
    expect(response.result, JSON.stringify(response)).toEqual({ open: "EBADF", called: false });
  });

  it("a FileHandle's number cannot be closed under it (its close would run on the pool later)", async () => {
    const response = await session.call("handleNumber", { file: join(dir, "data/file.txt") });
    const refused = "permission denied: FileSystem Write fd:N";
    expect(response.result, JSON.stringify(response)).toEqual({
      tries: [refused, refused, refused],
      text: "contents",
      after: "EBADF",
    });
  });

  it("answers as Node's close: the callback on a later tick, errors where Node puts them", async () => {
    const response = await session.call("closeAsNode");
    expect(response.result, JSON.stringify(response)).toEqual({
      missing: "EBADF",
      invalid: "ERR_INVALID_ARG_TYPE",
      badCallback: "ERR_INVALID_ARG_TYPE",
      closed: [null],
    });
    expect((await session.call("streamCloses")).result).toBe("contents");
  });
});
