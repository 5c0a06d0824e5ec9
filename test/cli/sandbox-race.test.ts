/**
 * Races against the broker: tool code that changes what a path names between the broker's check and
 * Node's open. A directory inside the writable grant is swapped, after the check, for one whose
 * entry is a symlink out of the jail (made by the user, not the tool: Node refuses the tool every
 * symlink under a restriction). libuv's pool threads are held on a FIFO until the swap is done, so
 * the open always comes after it — no timing involved. One session serves every case.
 */

import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestCli, jailedSession, LineClient, scratch } from "./helpers.ts";
import { RACE_HELPERS } from "./race-tool.ts";

const SECRET = "s3cr3t-race-42";

const RACES = `${RACE_HELPERS}
const SECRET = OUT + "/cur/box/secret.txt";
const LOG = OUT + "/cur/logs/audit.jsonl";
export function readFilePromise() { return race(() => fs.promises.readFile(SECRET, "utf8")); }
export function readFileCallback() { return race(() => callback((cb) => fs.readFile(SECRET, "utf8", cb))); }
export async function openHandle() {
  const handle = await race(() => fs.promises.open(SECRET));
  try { return await handle.readFile("utf8"); } finally { await handle.close(); }
}
export async function openCallback() {
  const fd = await race(() => callback((cb) => fs.open(SECRET, "r", cb)));
  try { return fs.readFileSync(fd, "utf8"); } finally { fs.closeSync(fd); }
}
export function truncatePromise() { return race(() => fs.promises.writeFile(SECRET, "")).then(() => "truncated"); }
export function overwriteCallback() { return race(() => callback((cb) => fs.writeFile(SECRET, "PWNED", cb))).then(() => "written"); }
export function openForWriting() { return race(() => fs.promises.open(SECRET, "w")).then((handle) => handle.close()).then(() => "opened"); }
export function forgeAuditLine() { return race(() => fs.promises.appendFile(LOG, '{"forged":true}\\n')).then(() => "forged"); }
export function copyPromise() { return race(() => fs.promises.copyFile(SECRET, OUT + "/copy.txt")).then(() => fs.readFileSync(OUT + "/copy.txt", "utf8")); }
export function copyCallback() { return race(() => callback((cb) => fs.copyFile(SECRET, OUT + "/copy.txt", cb))).then(() => fs.readFileSync(OUT + "/copy.txt", "utf8")); }
export function truncatePathPromise() { return race(() => fs.promises.truncate(SECRET)).then(() => "truncated"); }
export function truncatePathCallback() { return race(() => callback((cb) => fs.truncate(SECRET, cb))).then(() => "truncated"); }
export function statPromise() { return race(() => fs.promises.stat(SECRET)).then((stats) => stats.size); }
export function statCallback() { return race(() => callback((cb) => fs.stat(SECRET, cb))).then((stats) => stats.size); }
export function lstatPromise() { return race(() => fs.promises.lstat(SECRET, { bigint: true })).then((stats) => String(stats.size)); }
export function lstatCallback() { return race(() => callback((cb) => fs.lstat(SECRET, {}, cb))).then((stats) => stats.size); }
export function existsCallback() { return race(() => new Promise((resolve) => fs.exists(OUT + "/cur/box/only-outside.txt", resolve))); }
export function accessPromise() { return race(() => fs.promises.access(OUT + "/cur/box/only-outside.txt")).then(() => "there"); }
export function accessCallback() { return race(() => callback((cb) => fs.access(OUT + "/cur/box/only-outside.txt", fs.constants.F_OK, cb))).then(() => "there"); }
// stat and lstat of what is there (and is not), every way round, as Node answers them.
export async function looks() {
  const file = OUT + "/real/box/secret.txt";
  const missing = OUT + "/real/box/missing.txt";
  const sizes = [
    fs.statSync(file).size,
    fs.lstatSync(file, { bigint: true }).size,
    (await fs.promises.stat(file)).size,
    (await fs.promises.lstat(OUT + "/real/box")).isDirectory(),
    (await callback((cb) => fs.stat(file, cb))).isFile(),
    (await callback((cb) => fs.lstat(file, { bigint: true }, cb))).size,
    fs.statSync(missing, { throwIfNoEntry: false }),
    fs.lstatSync(missing, { throwIfNoEntry: false }),
    fs.existsSync(file),
    fs.existsSync(missing),
    await new Promise((resolve) => fs.exists(file, resolve)),
    await new Promise((resolve) => fs.exists(missing, resolve)),
    fs.accessSync(file) ?? "accessible",
    await fs.promises.access(file, fs.constants.R_OK).then(() => "readable"),
  ];
  const errors = await Promise.all([
    Promise.resolve().then(() => fs.statSync(missing)).catch((e) => e),
    fs.promises.lstat(missing).catch((e) => e),
    callback((cb) => fs.stat(missing, cb)).catch((e) => e),
    fs.promises.access(missing).catch((e) => e),
    callback((cb) => fs.access(missing, cb)).catch((e) => e),
  ]);
  return [...sizes, ...errors.map((e) => [e.code, e.syscall, e.path === missing, e.message.replace(OUT, "OUT")].join(" "))].join("|");
}
// What the jail allows still works, every way round (truncation waits for the check of what was opened).
export async function inside() {
  const file = OUT + "/real/box/new.txt";
  fs.writeFileSync(file, "one two");
  fs.appendFileSync(file, " three");
  await fs.promises.writeFile(file, (await fs.promises.readFile(file, "utf8")) + " four");
  await callback((cb) => fs.appendFile(file, " five", cb));
  const handle = await fs.promises.open(file, "r+");
  await handle.write("ONE", 0);
  await handle.close();
  const text = await callback((cb) => fs.readFile(file, "utf8", cb));
  fs.closeSync(fs.openSync(file, "w"));
  // No flags: the callback's own text ("…a…") is not read as one (it asked to write the read-only jail).
  const fd = await new Promise((resolve, reject) => fs.open(OUT + "/../data.txt", (error, handle) => (error ? reject(error) : resolve(handle))));
  fs.closeSync(fd);
  const box = OUT + "/real/box/";
  fs.copyFileSync(box + "secret.txt", box + "copy.txt");
  await fs.promises.copyFile(box + "copy.txt", box + "copy2.txt");
  const exclusive = await callback((cb) => fs.copyFile(box + "copy.txt", box + "copy2.txt", fs.constants.COPYFILE_EXCL, cb)).catch((e) => e.code);
  await callback((cb) => fs.truncate(box + "copy2.txt", 3, cb));
  fs.truncateSync(box + "copy.txt", 2);
  const copies = fs.readFileSync(box + "copy2.txt", "utf8") + fs.readFileSync(box + "copy.txt", "utf8") + exclusive;
  return [text, fs.readFileSync(file, "utf8"), fs.readFileSync(box + "secret.txt", "utf8"), copies].join("|");
}
export function add({ a, b }) { return a + b; }
`;

// [tool, the error it must end with]: each opened what the link named, outside the grants.
const RACE_ATTEMPTS: [string, RegExp][] = [
  ["readFilePromise", /^permission denied: FileSystem Read \S*\/outside\/secret\.txt$/],
  ["readFileCallback", /^permission denied: FileSystem Read \S*\/outside\/secret\.txt$/],
  ["openHandle", /^permission denied: FileSystem Read \S*\/outside\/secret\.txt$/],
  ["openCallback", /^permission denied: FileSystem Read \S*\/outside\/secret\.txt$/],
  ["truncatePromise", /^permission denied: FileSystem Write \S*\/outside\/secret\.txt$/],
  ["overwriteCallback", /^permission denied: FileSystem Write \S*\/outside\/secret\.txt$/],
  ["openForWriting", /^permission denied: FileSystem (Read|Write) \S*\/outside\/secret\.txt$/],
  ["forgeAuditLine", /^permission denied: FileSystem Write \S*\/logs\/audit\.jsonl$/],
  ["copyPromise", /^permission denied: FileSystem Read \S*\/outside\/secret\.txt$/],
  ["copyCallback", /^permission denied: FileSystem Read \S*\/outside\/secret\.txt$/],
  ["truncatePathPromise", /^permission denied: FileSystem Write \S*\/outside\/secret\.txt$/],
  ["truncatePathCallback", /^permission denied: FileSystem (Read|Write) \S*\/outside\/secret\.txt$/],
  ["statPromise", /^permission denied: FileSystem Read \S*\/outside\/secret\.txt$/],
  ["statCallback", /^permission denied: FileSystem Read \S*\/outside\/secret\.txt$/],
  ["lstatPromise", /^permission denied: FileSystem Read \S*\/outside\/secret\.txt$/],
  ["lstatCallback", /^permission denied: FileSystem Read \S*\/outside\/secret\.txt$/],
  ["accessPromise", /^permission denied: FileSystem Read \S*\/outside\/only-outside\.txt$/],
  ["accessCallback", /^permission denied: FileSystem Read \S*\/outside\/only-outside\.txt$/],
];

/**
 * With files unrestricted (only the network and the environment denied), the tool makes its own
 * links, and what the broker guards is the audit log: calls on a directory entry must not move,
 * erase or hard-link it through a directory swapped after their check.
 */
const ENTRY_RACES = `${RACE_HELPERS}
const LOG = OUT + "/cur/logs/audit.jsonl";
export function setUp({ logs }) {
  fs.mkdirSync(OUT + "/real/logs", { recursive: true });
  fs.mkdirSync(OUT + "/trap");
  fs.symlinkSync(logs, OUT + "/trap/logs");
  return "ready";
}
export function moveAuditLog() { return race(() => fs.promises.rename(LOG, OUT + "/moved.jsonl")).then(() => "moved"); }
export function linkAuditLog() {
  return race(() => callback((cb) => fs.link(LOG, OUT + "/linked.jsonl", cb))).then(() => {
    fs.appendFileSync(OUT + "/linked.jsonl", '{"forged":true}\\n');
    return "forged";
  });
}
export function unlinkAuditLog() { return race(() => fs.promises.unlink(LOG)).then(() => "erased"); }
export function removeAuditLog() { return race(() => callback((cb) => fs.rm(LOG, cb))).then(() => "erased"); }
// The same calls on what is there, every way round.
export async function entries() {
  const dir = OUT + "/real/entries";
  fs.mkdirSync(dir + "/a/b", { recursive: true });
  fs.writeFileSync(dir + "/a/b/f.txt", "x");
  fs.renameSync(dir + "/a/b/f.txt", dir + "/f.txt");
  await fs.promises.link(dir + "/f.txt", dir + "/g.txt");
  await callback((cb) => fs.symlink("g.txt", dir + "/h.txt", cb));
  fs.unlinkSync(dir + "/f.txt");
  const seen = fs.readdirSync(dir).sort().join(",") + ":" + fs.readFileSync(dir + "/h.txt", "utf8").length;
  const missing = await fs.promises.unlink(dir + "/nothing.txt").catch((e) => e.message);
  const made = await fs.promises.mkdir(dir + "/m", { recursive: true });
  await fs.promises.rm(dir, { recursive: true });
  return [seen, missing, made, fs.existsSync(dir)].join("|").replaceAll(OUT, "OUT");
}
export function add({ a, b }) { return a + b; }
`;

// [tool, the error it must end with]: the pinned directory has no such entry (the swap came after).
const ENTRY_ATTEMPTS: [string, RegExp][] = [
  ["moveAuditLog", /^ENOENT: no such file or directory, rename '\S*\/cur\/logs\/audit\.jsonl' -> /],
  ["linkAuditLog", /^ENOENT: no such file or directory, link '\S*\/cur\/logs\/audit\.jsonl' -> /],
  ["unlinkAuditLog", /^ENOENT: no such file or directory, unlink '\S*\/cur\/logs\/audit\.jsonl'$/],
  ["removeAuditLog", /^ENOENT: no such file or directory, lstat '\S*\/cur\/logs\/audit\.jsonl'$/],
];

describe("sandbox races: a path swapped between the check and the open", () => {
  let dir: string;
  let session: LineClient;

  beforeAll(async () => {
    const { bin } = await buildTestCli();
    dir = scratch({
      "outside/secret.txt": SECRET,
      "outside/only-outside.txt": "",
      "jail/data.txt": "read-only",
      "jail/out/real/box/secret.txt": "benign",
    });
    mkdirSync(join(dir, "jail/out/real/logs"));
    mkdirSync(join(dir, "jail/out/trap"));
    mkdirSync(join(dir, "logs"));
    symlinkSync(join(dir, "outside"), join(dir, "jail/out/trap/box"));
    symlinkSync(join(dir, "logs"), join(dir, "jail/out/trap/logs"));
    expect(spawnSync("mkfifo", [join(dir, "jail/out/fifo")]).status).toBe(0);
    writeFileSync(join(dir, "races.js"), RACES.replace("__OUT__", JSON.stringify(join(dir, "jail/out"))));
    session = jailedSession(bin, dir, ["--audit-log", "logs/audit.jsonl", "races.js"]);
  });

  afterAll(async () => {
    await session?.close();
  });

  it("what the jail allows reads, writes, appends, copies and truncates as before", async () => {
    expect((await session.call("inside")).result).toBe("ONE two three four five||benign|benbeEEXIST");
    const missing = (syscall: string) =>
      `ENOENT ${syscall} true ENOENT: no such file or directory, ${syscall} 'OUT/real/box/missing.txt'`;
    const looks = await session.call("looks");
    expect(looks.result, JSON.stringify(looks)).toBe(
      [
        "6|6|6|true|true|6|||true|false|true|false|accessible|readable",
        missing("stat"),
        missing("lstat"),
        missing("stat"),
        missing("access"),
        missing("access"),
      ].join("|"),
    );
  });

  it("the file opened is checked again: one out of the grants is closed and refused", async () => {
    for (const [tool, expected] of RACE_ATTEMPTS) {
      const response = await session.call(tool);
      const message = (response.error as { message?: string } | undefined)?.message;
      expect(message ?? JSON.stringify(response), tool).toMatch(expected);
    }
    // What is there only out of the grants does not exist for the tool.
    expect((await session.call("existsCallback")).result).toBe(false);
    expect((await session.call("add", { a: 20, b: 22 })).result).toBe(42);
    await session.close();
    // Nothing was read, truncated or written out there, and the refusals are on the record.
    expect(readFileSync(join(dir, "outside/secret.txt"), "utf8")).toBe(SECRET);
    const audit = readFileSync(join(dir, "logs/audit.jsonl"), "utf8");
    expect(audit).not.toContain("forged");
    expect(audit).toMatch(/outside\/secret\.txt","decision":"Deny"/);
  });
});

describe("sandbox races: a directory entry swapped between the check and the call (files unrestricted)", () => {
  let dir: string;
  let session: LineClient;

  beforeAll(async () => {
    const { bin } = await buildTestCli();
    dir = scratch({ "entries.js": "" });
    mkdirSync(join(dir, "out"));
    mkdirSync(join(dir, "logs"));
    expect(spawnSync("mkfifo", [join(dir, "out/fifo")]).status).toBe(0);
    writeFileSync(join(dir, "entries.js"), ENTRY_RACES.replace("__OUT__", JSON.stringify(join(dir, "out"))));
    session = new LineClient(
      bin,
      ["session", "--deny-net", "--deny-env", "--audit-log", "logs/audit.jsonl", "entries.js"],
      { cwd: dir },
    );
    expect((await session.call("setUp", { logs: join(dir, "logs") })).result).toBe("ready");
  });

  afterAll(async () => {
    await session?.close();
  });

  it("renames, links, unlinks and removes what is there as before", async () => {
    const r = await session.call("entries");
    expect(r.result).toBe(
      "a,g.txt,h.txt:1|ENOENT: no such file or directory, unlink 'OUT/real/entries/nothing.txt'|OUT/real/entries/m|false",
    );
  });

  it("the directory is pinned when checked: the audit log is neither moved, erased nor linked", async () => {
    for (const [tool, expected] of ENTRY_ATTEMPTS) {
      const response = await session.call(tool);
      const message = (response.error as { message?: string } | undefined)?.message;
      expect(message ?? JSON.stringify(response), tool).toMatch(expected);
    }
    expect((await session.call("add", { a: 20, b: 22 })).result).toBe(42);
    await session.close();
    const audit = readFileSync(join(dir, "logs/audit.jsonl"), "utf8");
    expect(audit).toContain('"resource":"tool:add"');
    expect(audit).not.toContain("forged");
  });
});
