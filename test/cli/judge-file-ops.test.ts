/**
 * The CLI's file calls for a tool host (judge.ts, file-ops.ts) act on what they decided on. The
 * judge reads what the host's descriptor names, decides, and acts through a `/proc` path; the
 * host's descriptor numbers are the host's to reuse, and while the host waits for the answer its
 * libuv pool still runs the tool's queued `close` and `open`. Here the CLI's own pool is held on a
 * FIFO after the decision, the host's descriptor is closed and the number opened again on a file
 * that is only readable, and then the call goes ahead: it must change the file decided on.
 */

import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from "node:child_process";
import fs, { mkdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { NO_AUDIT } from "../../src/cli/audit-log.ts";
import type { Policy } from "../../src/cli/permissions.ts";
import { Judge } from "../../src/cli/sandbox/judge.ts";
import type { CheckMessage, FileOp } from "../../src/cli/sandbox/protocol.ts";
import { scratch } from "./helpers.ts";

/** A host stand-in: opens `argv[1]` (O_PATH, as the broker does); on each line, reopens its number on `argv[2]`. */
const HOST = `
const fs = require("node:fs");
const O_PATH = 0o10000000;
let fd = fs.openSync(process.argv[1], O_PATH | (process.argv[3] === "dir" ? fs.constants.O_DIRECTORY : 0));
process.stdout.write(fd + "\\n");
process.stdin.on("data", () => {
  fs.closeSync(fd);
  fd = fs.openSync(process.argv[2], O_PATH | (process.argv[3] === "dir" ? fs.constants.O_DIRECTORY : 0));
  process.stdout.write(fd + "\\n");
});
`;

/** Reads one line from the host stand-in. */
function line(child: ChildProcessWithoutNullStreams): Promise<string> {
  return new Promise((resolve) => {
    let text = "";
    const onData = (chunk: Buffer) => {
      text += chunk.toString();
      if (text.includes("\n")) {
        child.stdout.off("data", onData);
        resolve(text.trim());
      }
    };
    child.stdout.on("data", onData);
  });
}

/** Holds this process's four libuv pool threads on a FIFO; the returned function lets them go. */
function holdPool(fifo: string): () => Promise<void> {
  const readers: Promise<number | undefined>[] = [];
  for (let i = 0; i < 4; i++)
    readers.push(new Promise((resolve) => fs.open(fifo, "r", (_error, fd) => resolve(fd))));
  return async () => {
    const writer = fs.openSync(fifo, "w");
    for (const fd of await Promise.all(readers)) if (fd !== undefined) fs.closeSync(fd);
    fs.closeSync(writer);
  };
}

describe("the CLI's file calls act on the descriptor it decided on", () => {
  let child: ChildProcessWithoutNullStreams | undefined;

  afterEach(() => {
    child?.kill();
    child = undefined;
  });

  const race = async (op: FileOp, name: string | undefined, kind: "file" | "dir") => {
    const dir = scratch({ "w/file.txt": "writable", "r/file.txt": "read-only" });
    mkdirSync(join(dir, "w/sub"));
    mkdirSync(join(dir, "r/sub"));
    expect(spawnSync("mkfifo", [join(dir, "fifo")]).status).toBe(0);
    const policy: Policy = {
      denied: ["fs.read", "fs.write", "net.connect", "net.listen", "env.read", "run.execute"],
      allowRead: [dir],
      allowWrite: [join(dir, "w")],
      allowNet: [],
      allowEnv: [],
      allowRun: [],
    };
    const judge = new Judge(policy, NO_AUDIT, [], dir);
    const [writable, readable] =
      kind === "dir" ? [join(dir, "w"), join(dir, "r")] : [join(dir, "w/file.txt"), join(dir, "r/file.txt")];
    child = spawn(process.execPath, ["-e", HOST, writable, readable, kind]);
    const fd = Number(await line(child));
    const check: CheckMessage = {
      k: "",
      t: "check",
      n: "",
      kind: "FileSystem",
      action: op.o === "readdir" ? "Read" : "Write",
      resource: `fd:${fd}`,
      fd,
      name,
      op,
      peek: true,
    };
    const release = holdPool(join(dir, "fifo"));
    const answer = judge.answer(check, child.pid);
    // Decided; the call waits for the pool. The host reuses its number on the read-only file.
    child.stdin.write("\n");
    expect(Number(await line(child))).toBe(fd);
    await release();
    return { dir, answer: await answer };
  };

  it("chmod changes the file decided on, not a file opened later under the same number", async () => {
    const before = statSync(scratch({ x: "" }) + "/x").mode;
    const { dir, answer } = await race({ o: "chmod", mode: 0o600 }, undefined, "file");
    expect(answer.d).toBe("Allow");
    expect(statSync(join(dir, "r/file.txt")).mode & 0o777).toBe(before & 0o777);
    expect(statSync(join(dir, "w/file.txt")).mode & 0o777).toBe(0o600);
  });

  it("an entry call removes the entry of the directory decided on", async () => {
    const { dir, answer } = await race({ o: "unlink" }, "file.txt", "dir");
    expect(answer.d).toBe("Allow");
    expect(fs.existsSync(join(dir, "r/file.txt"))).toBe(true);
    expect(fs.existsSync(join(dir, "w/file.txt"))).toBe(false);
  });
});
