/**
 * The broker at call time: what it relies on that tool code can change after the broker is
 * installed. `--frozen-intrinsics` freezes the language's built-ins (Array, String, RegExp, Map,
 * Promise, Function, JSON, Reflect, …) and the host locks their global bindings, freezes `path` and
 * `URL`; what stays the tool's to change is Node's own module objects (`fs`, `util`, `process`,
 * `module`, `Buffer`, …), the live ES bindings the host's bundle imports from them (which
 * `module.syncBuiltinESMExports()` points at whatever the tool assigned), and the arguments it
 * passes (a `toString` that answers differently each time it is asked). Each attack is a tool file
 * run through the built CLI:
 * - `util.types` reassigned and synced into the bundle's `import { types } from "node:util"`:
 *   `isArrayBufferView` answering true let a granted program be handed the host's own pipes;
 * - a program, a binding or a worker's file named by an object whose `toString` answers one name
 *   to the check and another to Node: the audit log recorded what never ran, not what did;
 * - a TTY stream made on the host's own pipes (its handle takes the descriptor in its constructor,
 *   past the guarded `open` of the other handles): the calls read, the answers pipe closed;
 * - with files unrestricted, an entry call whose directory the broker could not open to pin it (no
 *   descriptor left) went on unpinned, so a directory swapped after its check moved the audit log.
 */

import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auditLines, buildTestCli, jailedSession, LineClient, NODE, scratch } from "./helpers.ts";
import { RACE_HELPERS } from "./race-tool.ts";

/** Per answer: sessions start side by side on shared machines (no timing is asserted). */
const SLOW = 60_000;

const TOOLS = `
const cp = require("node:child_process");
const util = require("node:util");
const mod = require("node:module");
/** Runs \`body\` with \`util.types\` lying (synced into every ES import of node:util), then restores it. */
function withTypes(lies, body) {
  const real = util.types;
  util.types = { ...real, ...lies };
  mod.syncBuiltinESMExports();
  try {
    return body();
  } finally {
    util.types = real;
    mod.syncBuiltinESMExports();
  }
}
// Every object is an ArrayBufferView: a stdio entry naming a descriptor went on unchecked.
export function stdioThroughTypes() {
  return withTypes({ isArrayBufferView: () => true }, () =>
    String(cp.spawnSync("true", [], { stdio: ["ignore", { fd: 3 }, "ignore"] }).status),
  );
}
// A TTY handle takes its descriptor in its constructor (no \`open\`): the calls pipe read, the
// answers pipe closed under the host (its next check ends it).
const tty = require("node:tty");
export function ttyReadsCalls() { const stream = new tty.ReadStream(4); stream.pause(); return "reading calls"; }
export function ttyClosesAnswers() { tty.WriteStream(5).destroy(); return "closed"; }
export function ttyByPrototype() {
  const Behind = tty.ReadStream.prototype.constructor;
  new Behind(5).destroy();
  return "closed";
}
export function readInside() { return require("node:fs").readFileSync("jail/data.txt", "utf8"); }
/** A program name that is one program to the check and another to Node. */
const lying = () => {
  let reads = 0;
  return { toString: () => (reads++ === 0 ? "amber-no-such-program-42" : "echo") };
};
export function lyingProgramSync() {
  const result = cp.spawnSync(lying(), ["ran-sync"], { encoding: "utf8" });
  return { stdout: result.stdout ?? null, error: result.error?.code ?? null };
}
export function lyingProgramHandle() {
  return new Promise((resolve) => {
    const handle = new cp.ChildProcess()._handle;
    handle.onexit = (status) => resolve({ status });
    const ignore = { type: "ignore" };
    const error = handle.spawn({ file: lying(), args: ["echo", "ran"], envPairs: [], stdio: [ignore, ignore, ignore] });
    if (error !== 0) resolve({ error });
  });
}
/** A name that is one thing the first time it is asked and another after. */
const twoFaced = (first, then) => {
  let reads = 0;
  return { toString: () => (reads++ === 0 ? first : then) };
};
export function lyingBinding() {
  try {
    return typeof process.binding(twoFaced("amber_innocent", "fs")).open;
  } catch (error) {
    return "error " + error.message;
  }
}
export function lyingWorker() {
  const { Worker } = require("node:worker_threads");
  const evil = require("node:url").pathToFileURL(__dirname + "/evil-worker.js");
  return new Promise((resolve) => {
    let worker;
    try {
      const { href, pathname } = evil;
      worker = new Worker({ href, protocol: "file:", hostname: "", pathname, toString: () => "amber-innocent.js" });
    } catch (error) {
      return resolve("error " + error.message);
    }
    worker.on("message", (message) => resolve(message));
    worker.on("error", (error) => resolve("error " + error.message));
  });
}
/** \`Stats#isFile\` made to lie while a write truncates a longer file (sync and FileHandle paths). */
export async function truncateDespiteIsFile() {
  const fs = require("node:fs");
  const real = fs.Stats.prototype.isFile;
  const written = [];
  for (const write of [(f) => fs.writeFileSync(f, "x"), (f) => fs.promises.writeFile(f, "y")]) {
    fs.writeFileSync("jail/out/long.txt", "0123456789");
    fs.Stats.prototype.isFile = () => false;
    try {
      await write("jail/out/long.txt");
    } finally {
      fs.Stats.prototype.isFile = real;
    }
    written.push(fs.readFileSync("jail/out/long.txt", "utf8"));
  }
  return written;
}
export function add({ a, b }) { return a + b; }
`;

/** Every descriptor taken while an entry call starts, so the broker cannot pin its directory. */
const EXHAUSTED = `${RACE_HELPERS}
const LOG = OUT + "/cur/logs/audit.jsonl";
export function setUp({ logs }) {
  fs.mkdirSync(OUT + "/real/logs", { recursive: true });
  fs.mkdirSync(OUT + "/trap");
  fs.symlinkSync(logs, OUT + "/trap/logs");
  fs.writeFileSync(OUT + "/filler", "");
  return "ready";
}
export async function moveAuditLogOutOfDescriptors() {
  try {
    await race(() => {
      const taken = [];
      try {
        for (;;) taken.push(fs.openSync(OUT + "/filler", "r"));
      } catch (error) {
        if (error.code !== "EMFILE") throw error;
      }
      try {
        return fs.promises.rename(LOG, OUT + "/moved.jsonl");
      } catch (error) {
        return Promise.reject(error);
      } finally {
        for (const fd of taken) fs.closeSync(fd);
      }
    });
    return "moved";
  } catch (error) {
    return "error " + error.code;
  }
}
export function add({ a, b }) { return a + b; }
`;

describe("sandbox primordials: what the broker relies on at call time", () => {
  it("no broker module but originals.ts imports a name from a Node built-in (a live ES binding), node:path aside", () => {
    const broker = join(import.meta.dirname, "../../src/cli/sandbox/broker");
    const named: string[] = [];
    for (const file of readdirSync(broker)) {
      if (!file.endsWith(".ts") || file === "originals.ts") continue;
      const source = readFileSync(join(broker, file), "utf8");
      for (const match of source.matchAll(/^import\s*\{[^}]*\}\s*from\s*"(node:[^"]+)"/gm))
        if (match[1] !== "node:path") named.push(`${file}: ${match[1]}`);
    }
    expect(named).toEqual([]);
  });

  let bin: string;
  let dir: string;

  beforeAll(async () => {
    ({ bin } = await buildTestCli());
    dir = scratch({ "jail/data.txt": "inside", "jail/out/.keep": "" });
    writeFileSync(join(dir, "tools.js"), TOOLS);
    writeFileSync(
      join(dir, "evil-worker.js"),
      'require("node:worker_threads").parentPort.postMessage("evil ran");',
    );
  });

  describe("jailed, with a granted program", () => {
    let session: LineClient;

    beforeAll(() => {
      session = jailedSession(bin, dir, ["--allow-run", "true", "--audit-log", "jailed.jsonl", "tools.js"]);
    });

    afterAll(async () => {
      await session?.close();
    });

    it(
      "a child gets none of the host's pipes when the tool makes util.types lie (an ES binding of the host's)",
      async () => {
        const response = await session.call("stdioThroughTypes", {}, SLOW);
        expect(response.error, JSON.stringify(response)).toMatchObject({
          message: "permission denied: FileSystem Write fd:3",
        });
        expect(auditLines(join(dir, "jailed.jsonl"))).toContainEqual(
          expect.objectContaining({
            kind: "FileSystem",
            action: "Write",
            resource: "fd:3",
            decision: "Deny",
          }),
        );
        expect((await session.call("add", { a: 20, b: 22 }, SLOW)).result).toBe(42);
      },
      2 * SLOW,
    );

    for (const [tool, fd] of [
      ["ttyReadsCalls", 4],
      ["ttyClosesAnswers", 5],
      ["ttyByPrototype", 5],
    ] as const) {
      it(
        `${tool}: a TTY handle is not made on the host's own pipe`,
        async () => {
          const response = await session.call(tool, {}, SLOW);
          expect(response.error, JSON.stringify(response)).toMatchObject({
            message: `permission denied: FileSystem Write fd:${fd}`,
          });
          // The host still asks and hears its answers (a closed answers pipe would end it).
          expect((await session.call("readInside", {}, SLOW)).result).toBe("inside");
        },
        2 * SLOW,
      );
    }

    it("a write truncates as O_TRUNC would when the tool makes Stats#isFile lie", async () => {
      const response = await session.call("truncateDespiteIsFile", {}, SLOW);
      expect(response.result, JSON.stringify(response)).toEqual(["x", "y"]);
    });
  });

  describe("audit only", () => {
    let session: LineClient;
    const audit = () => auditLines(join(dir, "audit-only.jsonl"));

    beforeAll(() => {
      session = new LineClient(bin, ["session", "--audit-log", "audit-only.jsonl", "tools.js"], { cwd: dir });
    });

    afterAll(async () => {
      await session?.close();
    });

    const ranPrograms = () =>
      audit()
        .filter((line) => line.kind === "Process" && line.action === "Execute")
        .map((line) => line.resource ?? "");

    it("a program named by a lying toString is the one on the record (spawnSync)", async () => {
      const response = await session.call("lyingProgramSync", {}, SLOW);
      const result = response.result as { stdout: string | null; error: string | null };
      expect(result, JSON.stringify(response)).toBeTypeOf("object");
      // Whatever ran is what the log names: the name checked is the name run.
      expect(result.stdout ?? "").not.toContain("ran-sync");
      expect(result.error).toBe("ENOENT");
      expect(ranPrograms()).toContain("amber-no-such-program-42");
      expect(ranPrograms().some((program) => program.endsWith("/echo"))).toBe(false);
    });

    it("a program named by a lying toString is the one on the record (the Process handle)", async () => {
      const response = await session.call("lyingProgramHandle", {}, SLOW);
      const result = response.result as { status?: number; error?: number };
      expect(result, JSON.stringify(response)).toBeTypeOf("object");
      // echo would have run and exited 0; the name checked does not exist.
      expect(result.status).not.toBe(0);
      expect(ranPrograms().some((program) => program.endsWith("/echo"))).toBe(false);
    });

    it("a binding named by a lying toString is the one on the record", async () => {
      const response = await session.call("lyingBinding", {}, SLOW);
      const resources = audit().map((line) => line.resource ?? "");
      // The fs binding handed out only with "process.binding:fs" on the record.
      if (response.result === "function") expect(resources).toContain("process.binding:fs");
      else
        expect(response.result, JSON.stringify(response)).toMatch(
          /^error No such (built-in )?module: amber_innocent/,
        );
    });

    it("a worker's file given as a lying URL-like object is the one on the record", async () => {
      const response = await session.call("lyingWorker", {}, SLOW);
      expect(response.result, JSON.stringify(response)).toBe("evil ran");
      const workers = audit()
        .map((line) => line.resource ?? "")
        .filter((resource) => resource.startsWith("worker:"));
      expect(workers).not.toContain("worker:amber-innocent.js");
      expect(workers.some((resource) => resource.endsWith("/evil-worker.js"))).toBe(true);
    });
  });

  describe("files unrestricted, with no descriptor left", () => {
    let session: LineClient;
    let out: string;

    beforeAll(async () => {
      out = join(dir, "unrestricted");
      mkdirSync(join(out, "out"), { recursive: true });
      mkdirSync(join(out, "logs"));
      expect(spawnSync("mkfifo", [join(out, "out/fifo")]).status).toBe(0);
      writeFileSync(join(out, "tools.js"), EXHAUSTED.replace("__OUT__", JSON.stringify(join(out, "out"))));
      // A few hundred descriptors, not the machine's tens of thousands, for the tool to use up.
      const node = join(out, "node-few-fds");
      writeFileSync(node, `#!/bin/sh\nulimit -n 256\nexec ${JSON.stringify(NODE)} "$@"\n`);
      chmodSync(node, 0o755);
      session = new LineClient(
        bin,
        ["session", "--deny-net", "--deny-env", "--audit-log", "logs/audit.jsonl", "tools.js"],
        { cwd: out, node },
      );
      expect((await session.call("setUp", { logs: join(out, "logs") }, SLOW)).result).toBe("ready");
    });

    afterAll(async () => {
      await session?.close();
    });

    it(
      "an entry call its directory cannot be pinned for fails, and the audit log stays where it is",
      async () => {
        const response = await session.call("moveAuditLogOutOfDescriptors", {}, SLOW);
        expect(response.result, JSON.stringify(response)).toBe("error EMFILE");
        expect(existsSync(join(out, "out/moved.jsonl"))).toBe(false);
        expect((await session.call("add", { a: 20, b: 22 }, SLOW)).result).toBe(42);
        expect(readFileSync(join(out, "logs/audit.jsonl"), "utf8")).toContain('"resource":"tool:add"');
      },
      2 * SLOW,
    );
  });
});
