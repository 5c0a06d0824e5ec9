/**
 * Watching files under `--sandbox`. Node checks `fs.watch` and `fs.watchFile` once, by the path the
 * tool names, and then watches what the path named (an inotify watch) or polls the path again and
 * again (`watchFile`): a directory swapped on the path after the check (here inside the writable
 * grant, for one whose `box` is a link out of the jail that the user left there) is polled, and the
 * tool learns the outside file's size and times. The watcher a tool gets also carries its class:
 * `new (watcher.constructor)().start(path)` watches any path, past the broker and past Node's own
 * permission model (which checks only `fs.watch` and `fs.watchFile`). Also: `glob` walks through the
 * checked calls, and `fs/promises` reached as `require("fs/promises")` or an ES import is the same
 * checked object.
 */

import { mkdirSync, readFileSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestCli, jailedSession, LineClient, scratch } from "./helpers.ts";

const SECRET = "s3cr3t-watch-42";
/** The outside file's modification time (seconds), which appears nowhere in the jail. */
const OUTSIDE_MTIME = 5000;

const TOOLS = `
const fs = require("node:fs");
const OUT = __OUT__;
const FILE = OUT + "/cur/box/secret.txt";
const tick = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
/**
 * Watches OUT/cur/box/secret.txt while cur is the jail's directory, waits until the watcher has
 * reported a change made inside (so it is polling), then puts the directory whose box links out of
 * the jail in cur's place, and reports every change seen after that, until the swap is undone and
 * one more change came.
 */
export async function watchFileAfterSwap() {
  fs.renameSync(OUT + "/real", OUT + "/cur");
  const events = [];
  let wake = () => {};
  const listener = (curr, prev) => {
    events.push({ size: curr.size, mtime: curr.mtimeMs, prevSize: prev.size, prevMtime: prev.mtimeMs });
    wake();
  };
  const next = () => new Promise((resolve) => { wake = resolve; });
  const watcher = fs.watchFile(FILE, { interval: 10 }, listener);
  const swapped = [];
  try {
    let text = "benign";
    while (events.length === 0) {
      text += "!";
      fs.writeFileSync(FILE, text);
      await Promise.race([next(), tick(100)]);
    }
    const inside = events.length;
    fs.renameSync(OUT + "/cur", OUT + "/real");
    fs.renameSync(OUT + "/trap", OUT + "/cur");
    try {
      while (events.length === inside) await next();
    } finally {
      fs.renameSync(OUT + "/cur", OUT + "/trap");
      fs.renameSync(OUT + "/real", OUT + "/cur");
    }
    const after = events.length;
    while (events.length === after) await next();
    swapped.push(...events.slice(inside));
  } finally {
    fs.unwatchFile(FILE, listener);
    fs.renameSync(OUT + "/cur", OUT + "/real");
  }
  return { swapped, isWatcher: typeof watcher.ref === "function" && typeof watcher.unref === "function", insideSize: fs.statSync(OUT + "/real/box/secret.txt").size };
}
/** watchFile and unwatchFile as Node's: listeners per file, one watcher, stopped by unwatchFile. */
export async function watchFileAsNode() {
  const file = OUT + "/real/box/note.txt";
  fs.writeFileSync(file, "a");
  const seen = [];
  let wake = () => {};
  const one = (curr, prev) => { seen.push("one " + prev.size + ">" + curr.size); wake(); };
  const two = function (curr) { seen.push("two " + curr.size + " " + (this === first)); wake(); };
  const first = fs.watchFile(file, { interval: 10, persistent: false }, one);
  const second = fs.watchFile(file, two);
  let size = 1;
  while (seen.length < 2) {
    fs.writeFileSync(file, "a".repeat(++size));
    await Promise.race([new Promise((resolve) => { wake = resolve; }), tick(100)]);
  }
  fs.unwatchFile(file, one);
  fs.unwatchFile(file);
  const missing = await new Promise((resolve) => {
    const gone = OUT + "/real/box/gone.txt";
    fs.watchFile(gone, { interval: 10 }, (curr, prev) => {
      fs.unwatchFile(gone);
      resolve([curr.size, curr.mtimeMs, prev.size, curr.isFile()]);
    });
  });
  return { same: first === second, seen: seen.slice(0, 2).sort().map((s) => s.replace(/\\d+/g, "N")), missing };
}
/** A watcher's class started on a path of the tool's choosing, past fs.watch and fs.watchFile. */
export function watcherClasses() {
  const result = {};
  try {
    const w = fs.watch(OUT + "/real/box");
    w.close();
    const other = new w.constructor();
    other.start(OUT + "/../../outside");
    result.watch = "started";
    other.close();
  } catch (error) {
    result.watch = error.message.replaceAll(OUT, "OUT");
  }
  try {
    const s = fs.watchFile(OUT + "/real/box/secret.txt", { persistent: false }, () => {});
    fs.unwatchFile(OUT + "/real/box/secret.txt");
    const other = new s.constructor();
    if (typeof other.start !== "function") result.watchFile = "no start";
    else {
      other.start(OUT + "/../../outside/secret.txt", false, 10);
      result.watchFile = "started";
      other.stop?.();
    }
  } catch (error) {
    result.watchFile = error.message.replaceAll(OUT, "OUT");
  }
  return result;
}
export async function watchPromises() {
  try {
    const name = "node:fs/" + "promises";
    const watcher = (await import(name)).watch(OUT + "/real/box");
    await watcher.return?.();
    return "watching";
  } catch (error) {
    return error.message.replaceAll(OUT, "OUT");
  }
}
/** A glob that has the swap done under it between its steps never names the outside. */
export async function globAcrossSwap() {
  if (typeof fs.promises.glob !== "function") return "no glob";
  fs.renameSync(OUT + "/real", OUT + "/cur");
  const names = [];
  let swapped = false;
  try {
    // Relative to the working directory, OUT (what the broker resolves a pattern against).
    for await (const name of fs.promises.glob("cur/**")) {
      names.push(name);
      if (!swapped) {
        swapped = true;
        fs.renameSync(OUT + "/cur", OUT + "/real");
        fs.renameSync(OUT + "/trap", OUT + "/cur");
      }
    }
  } catch (error) {
    names.push("error " + error.message);
  } finally {
    if (swapped) fs.renameSync(OUT + "/cur", OUT + "/trap");
    else fs.renameSync(OUT + "/cur", OUT + "/real");
  }
  return names.join(",");
}
/** A glob's patterns are taken under its own cwd option: inside the grants it lists, outside it is refused. */
export async function globUnderCwd() {
  if (typeof fs.promises.glob !== "function") return "no glob";
  const list = async (pattern) => {
    const names = [];
    try {
      for await (const name of fs.promises.glob(pattern, { cwd: OUT + "/real/box" })) names.push(name);
    } catch (error) {
      return "error " + error.message.replaceAll(OUT, "OUT");
    }
    return names.sort().join(",");
  };
  return { inside: await list("../../*"), outside: await list("../../../../outside/*") };
}
/** Every route to fs/promises and fs is the checked object (names whose functions differ). */
export async function routes() {
  const promises = require("node:fs").promises;
  const named = "node:fs/" + "promises";
  const esm = await import(named);
  const esmFs = await import("node:" + "fs");
  const viaRequire = require("fs/promises");
  const differ = [];
  for (const name of Object.keys(promises)) {
    if (typeof promises[name] !== "function") continue;
    if (viaRequire[name] !== promises[name]) differ.push("require " + name);
    if (name in esm && esm[name] !== promises[name]) differ.push("esm " + name);
    if (esm.default[name] !== promises[name]) differ.push("esm default " + name);
  }
  for (const name of Object.keys(fs)) {
    if (typeof fs[name] !== "function" || !(name in esmFs)) continue;
    if (esmFs[name] !== fs[name]) differ.push("esm fs " + name);
  }
  return differ;
}
export function add({ a, b }) { return a + b; }
`;

describe("sandbox: watching a path", () => {
  let dir: string;
  let session: LineClient;

  beforeAll(async () => {
    const { bin } = await buildTestCli();
    dir = scratch({
      "outside/secret.txt": SECRET,
      "jail/out/real/box/secret.txt": "benign",
    });
    mkdirSync(join(dir, "jail/out/trap"));
    mkdirSync(join(dir, "logs"));
    symlinkSync(join(dir, "outside"), join(dir, "jail/out/trap/box"));
    utimesSync(join(dir, "outside/secret.txt"), OUTSIDE_MTIME, OUTSIDE_MTIME);
    writeFileSync(join(dir, "tools.js"), TOOLS.replace("__OUT__", JSON.stringify(join(dir, "jail/out"))));
    session = jailedSession(bin, dir, ["--audit-log", "logs/audit.jsonl", "tools.js"]);
  });

  afterAll(async () => {
    await session?.close();
  });

  it("watchFile polls what the checks allow: a directory swapped under it shows no outside stats", async () => {
    const response = await session.call("watchFileAfterSwap", {}, 60_000);
    const result = response.result as {
      swapped: { size: number; mtime: number; prevSize: number; prevMtime: number }[];
      isWatcher: boolean;
      insideSize: number;
    };
    expect(result, JSON.stringify(response)).toBeTypeOf("object");
    expect(result.isWatcher).toBe(true);
    for (const event of result.swapped) {
      expect([event.size, event.prevSize]).not.toContain(SECRET.length);
      expect([event.mtime, event.prevMtime]).not.toContain(OUTSIDE_MTIME * 1000);
    }
    // Out of the grants reads as a file that is not there (zero-filled, as Node reports a missing
    // one); back inside, the file as it is.
    expect(result.swapped[0]).toMatchObject({ size: 0, mtime: 0 });
    expect(result.swapped.at(-1)).toMatchObject({ size: result.insideSize, prevSize: 0 });
  });

  it("watchFile and unwatchFile keep Node's behaviour", async () => {
    const response = await session.call("watchFileAsNode", {}, 60_000);
    expect(response.result, JSON.stringify(response)).toEqual({
      same: true,
      seen: ["one N>N", "two N true"],
      missing: [0, 0, 0, false],
    });
  });

  it("fs.watch is refused (no way to tie the watch to what was checked), and so is a watcher's class", async () => {
    const classes = await session.call("watcherClasses");
    const result = classes.result as { watch: string; watchFile: string };
    expect(result, JSON.stringify(classes)).toBeTypeOf("object");
    expect(result.watch).toMatch(
      /^permission denied: FileSystem Read OUT\/real\/box \(fs\.watch is not available under a file restriction/,
    );
    expect(result.watchFile).toBe("no start");
    expect((await session.call("watchPromises")).result).toMatch(
      /^permission denied: FileSystem Read OUT\/real\/box \(fs\.watch/,
    );
  });

  it("fs/promises through require and ES import is the checked object", async () => {
    const response = await session.call("routes");
    expect(response.result, JSON.stringify(response)).toEqual([]);
    expect((await session.call("add", { a: 20, b: 22 })).result).toBe(42);
    await session.close();
    expect(readFileSync(join(dir, "outside/secret.txt"), "utf8")).toBe(SECRET);
    const audit = readFileSync(join(dir, "logs/audit.jsonl"), "utf8");
    expect(audit).toMatch(/jail\/out\/real\/box","decision":"Deny"/);
  });
});

describe("sandbox: a glob (Node 22) walks through the checked calls", () => {
  let dir: string;
  let session: LineClient;

  beforeAll(async () => {
    const { bin } = await buildTestCli();
    dir = scratch({ "outside/secret.txt": SECRET, "jail/out/real/box/secret.txt": "benign" });
    mkdirSync(join(dir, "jail/out/trap"));
    symlinkSync(join(dir, "outside"), join(dir, "jail/out/trap/box"));
    writeFileSync(join(dir, "tools.js"), TOOLS.replace("__OUT__", JSON.stringify(join(dir, "jail/out"))));
    // The Node this test runs on (the pinned 22), which has fs.glob; the working directory is OUT.
    session = new LineClient(
      bin,
      ["session", "--sandbox", "--allow-read", "..", "--allow-write", ".", join(dir, "tools.js")],
      { cwd: join(dir, "jail/out"), node: process.execPath },
    );
  });

  afterAll(async () => {
    await session?.close();
  });

  it("a swap between its steps shows nothing outside", async () => {
    const response = await session.call("globAcrossSwap");
    expect(response.result, JSON.stringify(response)).toMatch(/^cur,/);
    expect(response.result).not.toContain(SECRET);
    expect(response.result).not.toMatch(/outside/);
  });

  it("takes patterns under the glob's own cwd option (granted: listed; outside: refused)", async () => {
    const response = await session.call("globUnderCwd");
    const result = response.result as { inside: string; outside: string };
    expect(result.inside, JSON.stringify(response)).toBe("../../real,../../trap");
    expect(result.outside).toMatch(/^error permission denied/);
    expect(result.outside).not.toContain(SECRET);
  });
});
