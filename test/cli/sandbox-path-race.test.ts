/**
 * Races against the broker on the path calls that are neither opens nor `stat`: `readdir`,
 * `opendir`, `readlink`, `realpath`, `access` for a mode, `chmod`, `chown`, `utimes`, `lutimes`,
 * `statfs`, the entry calls (`unlink`, `rm`, `rmdir`, `mkdir`, `mkdtemp`, `rename`, `link`), `cp`,
 * `openAsBlob` and `chdir`. Two ways round:
 * - the asynchronous forms, deterministically: libuv's pool is held on a FIFO while a directory
 *   inside the writable grant is swapped, after the check, for one whose `box` links out of the jail
 *   (the pattern of sandbox-race.test.ts);
 * - the synchronous forms, with a process of the user's flipping a link on the path between the
 *   jail and the outside in a tight loop while the tool calls each many times. Whether a given call
 *   lands in the window is luck; what is asserted is only that none ever sees or changes the outside.
 * The outside holds names, a link target and metadata that appear nowhere in the jail: seeing any,
 * or finding the outside changed afterwards, is the hole.
 */

import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestCli, jailedSession, type LineClient, NODE, scratch } from "./helpers.ts";
import { RACE_HELPERS } from "./race-tool.ts";

const SECRET = "s3cr3t-path-race-42";

/** The pool held on a FIFO and the swap (race-tool.ts), and the tool calls. */
const TOOLS = `${RACE_HELPERS}
const BOX = OUT + "/cur/box";
const REAL = OUT + "/real/box";
/** What the jail's box holds again before each call (an entry call may have used it up). */
function refill() {
  if (!fs.existsSync(REAL + "/victim.txt")) fs.writeFileSync(REAL + "/victim.txt", "inside victim");
  if (!fs.existsSync(REAL + "/vdir")) fs.mkdirSync(REAL + "/vdir");
  for (const name of ["made", "copied"]) fs.rmSync(OUT + "/" + name, { recursive: true, force: true });
  fs.rmSync(REAL + "/made", { recursive: true, force: true });
  for (const name of fs.readdirSync(REAL)) if (name.startsWith("tmp-")) fs.rmSync(REAL + "/" + name, { recursive: true });
}
const ASYNC = {
  readdirPromise: () => fs.promises.readdir(BOX),
  readdirCallback: () => callback((cb) => fs.readdir(BOX, { withFileTypes: true }, cb)).then((d) => d.map((e) => e.name + (e.isDirectory() ? "/" : ""))),
  readdirRecursive: () => fs.promises.readdir(BOX, { recursive: true }),
  opendirPromise: async () => { const names = []; for await (const d of await fs.promises.opendir(BOX)) names.push(d.name); return names; },
  opendirCallback: () => callback((cb) => fs.opendir(BOX, cb)).then((dir) => { const names = []; for (let d; (d = dir.readSync()); ) names.push(d.name); dir.closeSync(); return names; }),
  readlinkPromise: () => fs.promises.readlink(BOX + "/link"),
  readlinkCallback: () => callback((cb) => fs.readlink(BOX + "/link", cb)),
  realpathPromise: () => fs.promises.realpath(BOX + "/secret.txt"),
  realpathCallback: () => callback((cb) => fs.realpath(BOX + "/secret.txt", cb)),
  realpathNative: () => callback((cb) => fs.realpath.native(BOX + "/secret.txt", cb)),
  accessRead: () => fs.promises.access(BOX + "/only-outside.txt", fs.constants.R_OK).then(() => "readable only-outside"),
  accessWrite: () => callback((cb) => fs.access(BOX + "/only-outside.txt", fs.constants.W_OK, cb)).then(() => "writable only-outside"),
  chmodPromise: () => fs.promises.chmod(BOX + "/secret.txt", 0o600).then(() => "chmod"),
  chmodCallback: () => callback((cb) => fs.chmod(BOX + "/secret.txt", 0o600, cb)).then(() => "chmod"),
  chownPromise: () => fs.promises.chown(BOX + "/secret.txt", process.getuid(), process.getgid()).then(() => "chown"),
  lchownCallback: () => callback((cb) => fs.lchown(BOX + "/link", process.getuid(), process.getgid(), cb)).then(() => "lchown"),
  utimesPromise: () => fs.promises.utimes(BOX + "/secret.txt", 1000, 1000).then(() => "utimes"),
  utimesCallback: () => callback((cb) => fs.utimes(BOX + "/secret.txt", new Date(2000), new Date(2000), cb)).then(() => "utimes"),
  lutimesPromise: () => fs.promises.lutimes(BOX + "/link", 1000, 1000).then(() => "lutimes"),
  statfsPromise: () => fs.promises.statfs(BOX).then((s) => typeof s.bsize),
  unlinkPromise: () => fs.promises.unlink(BOX + "/victim.txt").then(() => "unlinked"),
  rmCallback: () => callback((cb) => fs.rm(BOX + "/victim.txt", cb)).then(() => "removed"),
  rmRecursive: () => fs.promises.rm(BOX + "/vdir", { recursive: true }).then(() => "removed"),
  rmdirPromise: () => fs.promises.rmdir(BOX + "/vdir").then(() => "removed"),
  mkdirPromise: () => fs.promises.mkdir(BOX + "/made").then(() => "made"),
  mkdirRecursive: () => callback((cb) => fs.mkdir(BOX + "/made/deeper", { recursive: true }, cb)),
  mkdtempPromise: () => fs.promises.mkdtemp(BOX + "/tmp-"),
  renameOut: () => fs.promises.rename(BOX + "/victim.txt", OUT + "/moved.txt").then(() => fs.readFileSync(OUT + "/moved.txt", "utf8")),
  renameIn: () => { fs.writeFileSync(OUT + "/planted.txt", "planted"); return callback((cb) => fs.rename(OUT + "/planted.txt", BOX + "/planted.txt", cb)).then(() => "renamed"); },
  linkOut: () => { fs.rmSync(OUT + "/hard.txt", { force: true }); return fs.promises.link(BOX + "/secret.txt", OUT + "/hard.txt").then(() => fs.readFileSync(OUT + "/hard.txt", "utf8")); },
  // The same functions reached as fs/promises (require) and node:fs/promises (ES import).
  readdirRequired: () => require("fs/promises").readdir(BOX),
  readlinkImported: () => imported.readlink(BOX + "/link"),
  chmodImported: () => imported.chmod(BOX + "/secret.txt", 0o600).then(() => "chmod"),
  cpPromise: () => fs.promises.cp(BOX, OUT + "/copied", { recursive: true }).then(() => fs.readdirSync(OUT + "/copied").sort().join(",") + ":" + fs.readFileSync(OUT + "/copied/secret.txt", "utf8")),
};
let imported;
export async function asyncRaces() {
  imported = await import("node:fs/promises");
  const seen = {};
  for (const [name, start] of Object.entries(ASYNC)) {
    let value;
    try {
      refill();
      value = await race(start).catch((error) => "error " + (error.code ?? "") + " " + error.message);
    } catch (error) {
      value = "thrown " + error.message;
    }
    seen[name] = typeof value === "string" ? value.replaceAll(OUT, "OUT") : value;
  }
  refill();
  return seen;
}
/** A blob that Node would read by its path again later, after the swap. */
export async function blobAfterSwap() {
  fs.renameSync(OUT + "/real", OUT + "/cur");
  let blob;
  try {
    blob = await fs.openAsBlob(BOX + "/secret.txt");
  } finally {
    fs.renameSync(OUT + "/cur", OUT + "/real");
    fs.renameSync(OUT + "/trap", OUT + "/cur");
  }
  try {
    return await blob.text();
  } catch (error) {
    return "error " + error.message;
  } finally {
    fs.renameSync(OUT + "/cur", OUT + "/trap");
  }
}
/** realpath.native's two forms, taken before the tool rebinds fs.realpath and fs.realpathSync. */
export async function realpathRebound() {
  const { realpath, realpathSync } = fs;
  const [sync, withCallback] = [realpathSync.native, realpath.native];
  fs.realpath = () => "rebound";
  fs.realpathSync = () => "rebound";
  try {
    const returned = sync(REAL + "/secret.txt");
    let answered;
    const given = withCallback(REAL + "/secret.txt", (error, value) => { answered = error ? "error " + error.code : value; });
    await new Promise((resolve) => setImmediate(resolve));
    const shown = (value) => (typeof value === "string" ? value.replaceAll(OUT, "OUT") : typeof value);
    return { sync: shown(returned), callbackReturned: shown(given), answered: shown(answered) };
  } finally {
    fs.realpath = realpath;
    fs.realpathSync = realpathSync;
  }
}
const FLIP = OUT + "/flip/box";
/** Each synchronous call many times while the user's process flips OUT/flip between the jail and the outside. */
export function syncStorm({ rounds }) {
  const seen = new Set();
  const note = (name, value) => { if (value !== undefined) seen.add(name + " " + String(value).replaceAll(OUT, "OUT")); };
  const SYNC = {
    readdir: () => fs.readdirSync(FLIP).join(","),
    readdirTypes: () => fs.readdirSync(FLIP, { withFileTypes: true }).map((d) => d.name).join(","),
    opendir: () => { const dir = fs.opendirSync(FLIP); const names = []; for (let d; (d = dir.readSync()); ) names.push(d.name); dir.closeSync(); return names.join(","); },
    readlink: () => fs.readlinkSync(FLIP + "/link"),
    realpath: () => fs.realpathSync(FLIP + "/secret.txt"),
    realpathNative: () => fs.realpathSync.native(FLIP + "/secret.txt"),
    access: () => (fs.accessSync(FLIP + "/only-outside.txt", fs.constants.R_OK), "readable only-outside"),
    chmod: () => (fs.chmodSync(FLIP + "/secret.txt", 0o600), undefined),
    utimes: () => (fs.utimesSync(FLIP + "/secret.txt", 1000, 1000), undefined),
    lutimes: () => (fs.lutimesSync(FLIP + "/link", 1000, 1000), undefined),
    chown: () => (fs.chownSync(FLIP + "/secret.txt", process.getuid(), process.getgid()), undefined),
    unlink: () => { fs.unlinkSync(FLIP + "/victim.txt"); fs.writeFileSync(OUT + "/real/box/victim.txt", "inside victim"); },
    mkdir: () => { fs.mkdirSync(FLIP + "/made"); fs.rmdirSync(OUT + "/real/box/made"); },
    chdir: () => { const before = process.cwd(); try { process.chdir(FLIP); return process.cwd(); } finally { process.chdir(before); } },
  };
  for (let i = 0; i < rounds; i++) {
    for (const [name, call] of Object.entries(SYNC)) {
      try {
        note(name, call());
      } catch (error) {
        if (error.code !== "ENOENT" && !/^permission denied: /.test(error.message)) note(name, "error " + error.code + " " + error.message);
      }
    }
  }
  return [...seen].sort();
}
export function add({ a, b }) { return a + b; }
`;

/** The outside's metadata that any call through the swapped path would change. */
function outsideState(dir: string) {
  const secret = statSync(join(dir, "outside/secret.txt"));
  const link = lstatSync(join(dir, "outside/link"));
  return {
    secret: readFileSync(join(dir, "outside/secret.txt"), "utf8"),
    mode: secret.mode & 0o777,
    mtime: secret.mtimeMs,
    ctime: secret.ctimeMs,
    linkMtime: link.mtimeMs,
    linkCtime: link.ctimeMs,
    entries: readdirSync(join(dir, "outside")).sort(),
    victim: existsSync(join(dir, "outside/victim.txt")),
  };
}

describe("sandbox races: path calls on a path swapped after their check", () => {
  let dir: string;
  let session: LineClient;
  let before: ReturnType<typeof outsideState>;

  beforeAll(async () => {
    const { bin } = await buildTestCli();
    dir = scratch({
      "outside/secret.txt": SECRET,
      "outside/only-outside.txt": "",
      "outside/victim.txt": "outside victim",
      "jail/out/real/box/secret.txt": "benign",
    });
    mkdirSync(join(dir, "outside/vdir"));
    symlinkSync("OUTSIDE-TARGET", join(dir, "outside/link"));
    symlinkSync("inside-target", join(dir, "jail/out/real/box/link"));
    mkdirSync(join(dir, "jail/out/trap"));
    symlinkSync(join(dir, "outside"), join(dir, "jail/out/trap/box"));
    expect(spawnSync("mkfifo", [join(dir, "jail/out/fifo")]).status).toBe(0);
    utimesSync(join(dir, "outside/secret.txt"), 5000, 5000);
    before = outsideState(dir);
    writeFileSync(join(dir, "tools.js"), TOOLS.replace("__OUT__", JSON.stringify(join(dir, "jail/out"))));
    session = jailedSession(bin, dir, ["tools.js"]);
  });

  afterAll(async () => {
    await session?.close();
  });

  it("asynchronous calls act on what was checked, never on the outside", async () => {
    const response = await session.call("asyncRaces", {}, 120_000);
    const seen = response.result as Record<string, unknown>;
    expect(seen, JSON.stringify(response)).toBeTypeOf("object");
    const text = JSON.stringify(seen);
    for (const leak of [
      '"only-outside.txt"',
      "able only-outside",
      "OUTSIDE-TARGET",
      "outside victim",
      SECRET,
      "/outside",
    ])
      expect(text, leak).not.toContain(leak);
    expect(seen.accessRead).toMatch(/^error ENOENT ENOENT: /);
    // What the jail holds is what they saw (the call ran on the directory that was checked).
    expect(seen.readdirPromise).toEqual(expect.arrayContaining(["link", "secret.txt"]));
    expect(seen.readlinkPromise).toBe("inside-target");
    expect(seen.readlinkImported).toBe("inside-target");
    expect(seen.readdirRequired).toEqual(expect.arrayContaining(["link", "secret.txt"]));
    expect(seen.realpathPromise).toBe("OUT/cur/box/secret.txt");
    expect(outsideState(dir)).toEqual(before);
  });

  it("a blob read after a swap does not read the outside", async () => {
    const response = await session.call("blobAfterSwap");
    expect(JSON.stringify(response)).not.toContain(SECRET);
    expect(outsideState(dir)).toEqual(before);
  });

  it("realpath.native keeps its sync and callback forms when the tool rebinds fs.realpath and fs.realpathSync", async () => {
    const response = await session.call("realpathRebound");
    expect(response.result, JSON.stringify(response)).toEqual({
      sync: "OUT/real/box/secret.txt",
      callbackReturned: "undefined",
      answered: "OUT/real/box/secret.txt",
    });
  });

  describe("synchronous calls under a link flipped by another process", () => {
    let flipper: ChildProcess | undefined;

    afterAll(() => {
      flipper?.kill();
    });

    it("never see or change the outside", async () => {
      const out = join(dir, "jail/out");
      const script = `
        const fs = require("node:fs");
        const out = ${JSON.stringify(out)};
        const targets = ["real", "trap"];
        const pause = new Int32Array(new SharedArrayBuffer(4));
        for (let i = 0; ; i++) {
          fs.symlinkSync(targets[i % 2], out + "/flip.tmp");
          fs.renameSync(out + "/flip.tmp", out + "/flip");
          // A short pause between flips: the race needs no more, and other tests need the CPU.
          Atomics.wait(pause, 0, 0, 0.05);
        }`;
      symlinkSync("real", join(out, "flip"));
      flipper = spawn(NODE, ["-e", script], { stdio: "ignore" });
      const response = await session.call("syncStorm", { rounds: 40 }, 180_000);
      flipper.kill();
      const seen = response.result as string[];
      expect(Array.isArray(seen), JSON.stringify(response)).toBe(true);
      const leaks = seen.filter((line) =>
        ["only-outside", "OUTSIDE-TARGET", "outside victim", SECRET, "/outside", "OUT/trap"].some((leak) =>
          line.includes(leak),
        ),
      );
      expect(leaks).toEqual([]);
      // The calls did run on the jail (the storm was not all refusals).
      expect(seen).toContain("readlink inside-target");
      expect(outsideState(dir)).toEqual(before);
      expect((await session.call("add", { a: 20, b: 22 })).result).toBe(42);
    }, 240_000);
  });
});
