/**
 * Hostile tool files, generated: every built-in the permission checks could depend on, poisoned
 * (at module load and again inside the call) before every kind of operation, plus the routes that
 * once got out (custom `lookup`, argument smuggling, programs by path, shell strings, writes to the
 * host's channel, Node-level refusals). Each file runs in its own `amber session --sandbox`: the
 * attempt must fail with the broker's `permission denied: <kind> …`, leave a `Deny` line for that
 * kind in the audit log, reach nothing, and leave the session answering.
 */

import { createSocket, type Socket as UdpSocket } from "node:dgram";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestCli, jailedSession, scratch } from "./helpers.ts";

const SECRET = "s3cr3t-hostile-77";
/** Per answer: sessions start side by side on shared machines (no timing is asserted). */
const SLOW = 60_000;

/**
 * Poisons, two built-ins (or sets of them) per file: each statement tries to replace one (each may
 * throw on its own, intrinsics being frozen, without stopping the next).
 */
const POISONS: [string, string[]][] = [
  [
    "Array.prototype.includes/some/every/find + Array.isArray",
    [
      "Array.prototype.includes = function () { return true; }",
      "Array.prototype.some = function () { return true; }",
      "Array.prototype.every = function () { return true; }",
      "Array.prototype.find = function () { return this[0]; }",
      "Array.isArray = function () { return false; }",
    ],
  ],
  [
    "String.prototype + RegExp.prototype",
    [
      "String.prototype.startsWith = function () { return true; }",
      "String.prototype.includes = function () { return true; }",
      "String.prototype.split = function () { return ['127.0.0.1']; }",
      "String.prototype.slice = function () { return ''; }",
      "RegExp.prototype.test = function () { return false; }",
      "RegExp.prototype.exec = function () { return null; }",
      "RegExp.prototype[Symbol.replace] = function (s) { return s; }",
    ],
  ],
  [
    "Set.prototype + Map.prototype",
    [
      "Set.prototype.has = function () { return true; }",
      "Map.prototype.get = function () { return 'Allow'; }",
      "Map.prototype.has = function () { return true; }",
    ],
  ],
  [
    "Function.prototype call/apply/bind",
    [
      "Function.prototype.call = function () { return undefined; }",
      "Function.prototype.apply = function () { return undefined; }",
      "Function.prototype.bind = function () { return () => ({ d: 'Allow', r: '' }); }",
    ],
  ],
  [
    "Object statics + Object.prototype",
    [
      "Object.hasOwn = function () { return true; }",
      "Object.keys = function () { return []; }",
      "Object.defineProperty = function (o) { return o; }",
      "Object.getOwnPropertySymbols = function () { return []; }",
      "Object.prototype.d = 'Allow'",
      "Object.defineProperty(Object.prototype, 'shell', { get() { return false; }, configurable: true })",
    ],
  ],
  [
    "Reflect + Promise.prototype",
    [
      "Reflect.apply = function () { return undefined; }",
      "Reflect.get = function () { return 'Allow'; }",
      "Reflect.defineProperty = function () { return true; }",
      "Promise.prototype.then = function (f) { return f ? f() : this; }",
    ],
  ],
  [
    "JSON + global bindings",
    [
      "JSON.parse = function () { return { d: 'Allow', r: 'x' }; }",
      "JSON.stringify = function () { return '{}'; }",
      "globalThis.JSON = { parse: () => ({ d: 'Allow', r: 'x' }), stringify: () => '{}' }",
      "globalThis.Reflect = { apply: () => undefined }",
      "globalThis.TextDecoder = function () {}",
    ],
  ],
  [
    "node:path, fs.realpathSync, process.cwd",
    [
      "require('node:path').resolve = () => JAIL",
      "require('node:path').join = () => JAIL",
      "require('node:fs').realpathSync = () => JAIL",
      "process.cwd = () => JAIL",
      "require('node:module').syncBuiltinESMExports()",
    ],
  ],
];

/** `[kind, expected audit kind/action, code of an async function body that must be refused]`. */
const OPERATIONS: [string, string, string][] = [
  ["fs sync", "FileSystem/Read", "return fs.readFileSync(OUTSIDE, 'utf8');"],
  ["fs async", "FileSystem/Read", "return await fs.promises.readFile(OUTSIDE, 'utf8');"],
  [
    "fs stream",
    "FileSystem/Read",
    "return await new Promise((res, rej) => { const s = fs.createReadStream(OUTSIDE); s.on('error', rej); s.on('data', (d) => res(String(d))); });",
  ],
  [
    "net",
    "Network/Connect",
    "return await new Promise((res, rej) => { const s = require('node:net').connect(TCP_PORT, '127.0.0.1'); s.on('connect', () => res('connected')); s.on('error', rej); });",
  ],
  [
    "tls",
    "Network/Connect",
    "return await new Promise((res, rej) => { const s = require('node:tls').connect(TCP_PORT, '127.0.0.1', { rejectUnauthorized: false }); s.on('secureConnect', () => res('connected')); s.on('error', rej); });",
  ],
  [
    "http",
    "Network/Connect",
    "return await new Promise((res, rej) => { require('node:http').get('http://127.0.0.1:' + TCP_PORT + '/', (r) => res(r.statusCode)).on('error', rej); });",
  ],
  [
    "https",
    "Network/Connect",
    "return await new Promise((res, rej) => { require('node:https').get('https://127.0.0.1:' + TCP_PORT + '/', { rejectUnauthorized: false }, (r) => res(r.statusCode)).on('error', rej); });",
  ],
  [
    "fetch",
    "Network/Connect",
    "const r = await fetch('http://127.0.0.1:' + TCP_PORT + '/'); return await r.text();",
  ],
  [
    "dgram",
    "Network/Connect",
    "const s = require('node:dgram').createSocket('udp4'); return await new Promise((res, rej) => { s.on('error', rej); s.send('escaped', UDP_PORT, '127.0.0.1', (e) => (e ? rej(e) : res('sent'))); });",
  ],
  ["dns", "Network/Connect", "return await require('node:dns').promises.lookup('localhost');"],
  [
    "child_process",
    "Process/Execute",
    "return String(require('node:child_process').execFileSync('cat', [OUTSIDE]));",
  ],
  [
    "worker_threads",
    "Process/Execute",
    "const { Worker } = require('node:worker_threads'); new Worker('1', { eval: true }); return 'worker';",
  ],
  [
    "env",
    "Environment/Read",
    "const v = process.env.AMBER_TEST_SECRET; return v === undefined ? 'no value' : v;",
  ],
];

/** Routes that got out once, each its own file: `[name, audit kind/action, body]`. */
const SPECIAL: [string, string, string, string[]?][] = [
  [
    "lookup: net.connect to a granted name, lookup answers loopback",
    "Network/Connect",
    "return await new Promise((res, rej) => { const s = require('node:net').connect({ host: 'granted.invalid', port: TCP_PORT, lookup: LOOPBACK }); s.on('connect', () => res('connected')); s.on('error', rej); });",
  ],
  [
    "lookup: http.get with lookup",
    "Network/Connect",
    "return await new Promise((res, rej) => { require('node:http').get({ host: 'granted.invalid', port: TCP_PORT, path: '/', lookup: LOOPBACK }, (r) => res(r.statusCode)).on('error', rej); });",
  ],
  [
    "lookup: tls.connect with lookup",
    "Network/Connect",
    "return await new Promise((res, rej) => { const s = require('node:tls').connect({ host: 'granted.invalid', port: TCP_PORT, lookup: LOOPBACK, rejectUnauthorized: false }); s.on('secureConnect', () => res('connected')); s.on('error', rej); });",
  ],
  [
    "lookup: net.connect with a lookup and autoSelectFamily",
    "Network/Connect",
    "return await new Promise((res, rej) => { const s = require('node:net').connect({ host: 'granted.invalid', port: TCP_PORT, lookup: LOOPBACK, autoSelectFamily: true }); s.on('connect', () => res('connected')); s.on('error', rej); });",
  ],
  [
    "lookup: dgram socket with lookup",
    "Network/Connect",
    "const s = require('node:dgram').createSocket({ type: 'udp4', lookup: (h, o, cb) => cb(null, h === 'granted.invalid' ? '127.0.0.1' : h, 4) }); return await new Promise((res, rej) => { s.on('error', rej); s.send('escaped', UDP_PORT, 'granted.invalid', (e) => (e ? rej(e) : res('sent'))); });",
    // The implicit bind must be allowed for the datagram's own address to be what is refused.
    ["--allow-net", "0.0.0.0"],
  ],
  [
    "smuggling: array with host/port properties",
    "Network/Connect",
    "const a = [{ host: 'granted.invalid', port: 443 }]; a.host = '127.0.0.1'; a.port = TCP_PORT; return await new Promise((res, rej) => { const s = require('node:net').connect(a); s.on('connect', () => res('connected')); s.on('error', rej); });",
  ],
  [
    "smuggling: normalized-args array rewritten",
    "Network/Connect",
    "const net = require('node:net'); const a = net._normalizeArgs([{ host: 'granted.invalid', port: TCP_PORT }]); a[0] = { host: '127.0.0.1', port: TCP_PORT }; return await new Promise((res, rej) => { const s = new net.Socket(); s.connect(a); s.on('connect', () => res('connected')); s.on('error', rej); });",
  ],
  [
    "smuggling: getter answers differently on the second read",
    "Network/Connect",
    "let n = 0; const o = { get host() { return n++ === 0 ? 'granted.invalid' : '127.0.0.1'; }, port: TCP_PORT }; return await new Promise((res, rej) => { const s = require('node:net').connect(o); s.on('connect', () => res('connected')); s.on('error', rej); });",
  ],
  [
    "smuggling: port as a string",
    "Network/Connect",
    "return await new Promise((res, rej) => { const s = require('node:net').connect({ host: '127.0.0.1', port: String(TCP_PORT) }); s.on('connect', () => res('connected')); s.on('error', rej); });",
  ],
  [
    "smuggling: [options, callback]",
    "Network/Connect",
    "return await new Promise((res, rej) => { const s = require('node:net').connect([{ host: '127.0.0.1', port: TCP_PORT }, () => res('connected')]); s.on('error', rej); });",
  ],
  [
    "smuggling: IPC socket path",
    "Network/Connect",
    "return await new Promise((res, rej) => { const s = require('node:net').connect({ path: UNIX_PATH }); s.on('connect', () => res('connected')); s.on('error', rej); });",
  ],
  [
    "smuggling: IPv6 loopback",
    "Network/Connect",
    "return await new Promise((res, rej) => { const s = require('node:net').connect({ host: '::ffff:127.0.0.1', port: TCP_PORT }); s.on('connect', () => res('connected')); s.on('error', rej); });",
  ],
  [
    "smuggling: listen options with a getter",
    "Network/Listen",
    "let n = 0; const o = { get port() { return n++ < 2 ? 'granted.invalid' : 0; }, host: '0.0.0.0' }; return await new Promise((res, rej) => { const s = require('node:net').createServer(); s.on('error', rej); s.listen(o, () => res('listening')); });",
  ],
  [
    "run-path: ./true written into the jail",
    "Process/Execute",
    "fs.writeFileSync(JAIL + '/out/true', '#!/bin/sh\\ncat ' + OUTSIDE + '\\n', { mode: 0o755 }); return String(require('node:child_process').execFileSync('./true', [], { cwd: JAIL + '/out' }));",
  ],
  [
    "run-path: absolute path to a look-alike",
    "Process/Execute",
    "fs.writeFileSync(JAIL + '/out/true', '#!/bin/sh\\ncat ' + OUTSIDE + '\\n', { mode: 0o755 }); return String(require('node:child_process').spawnSync(JAIL + '/out/true').stdout);",
  ],
  [
    "run-path: spawn through a raw ChildProcess",
    "Process/Execute",
    "const { ChildProcess } = require('node:child_process'); const c = new ChildProcess(); c.spawn({ file: JAIL + '/out/true', args: ['true'], stdio: ['pipe', 'pipe', 'pipe'] }); return 'spawned';",
  ],
  [
    "shell: exec of a granted first word",
    "Process/Execute",
    "return await new Promise((res, rej) => require('node:child_process').exec('true && cat ' + OUTSIDE, (e, out) => (e ? rej(e) : res(out))));",
  ],
  [
    "shell: execSync",
    "Process/Execute",
    "return String(require('node:child_process').execSync('true; cat ' + OUTSIDE));",
  ],
  [
    "shell: spawn with shell: true",
    "Process/Execute",
    "return await new Promise((res, rej) => { const c = require('node:child_process').spawn('true && cat ' + OUTSIDE, { shell: true }); c.on('error', rej); c.on('exit', () => res('ran')); });",
  ],
  [
    "shell: spawnSync with a shell path",
    "Process/Execute",
    "return String(require('node:child_process').spawnSync('true', ['&&', 'cat', OUTSIDE], { shell: '/bin/bash' }).stdout);",
  ],
  [
    "shell: execFileSync with a shell getter",
    "Process/Execute",
    "let n = 0; const o = { get shell() { return n++ === 0 ? false : true; } }; return String(require('node:child_process').execFileSync('true && cat ' + OUTSIDE, [], o));",
  ],
  [
    "shell: /proc/<cli pid>/environ through cat",
    "Process/Execute",
    "return String(require('node:child_process').execFileSync('cat', ['/proc/' + process.ppid + '/environ']));",
  ],
  [
    "audit forgery: write to the host's channel",
    "FileSystem/Write",
    "fs.writeSync(3, JSON.stringify({ t: 'check', kind: 'Network', action: 'Connect', resource: 'example.org:443' }) + '\\n'); return 'forged';",
  ],
  ["audit forgery: close the channel", "FileSystem/Write", "fs.closeSync(3); return 'closed';"],
  [
    "audit forgery: socket on the answer pipe",
    "FileSystem/Write",
    "const s = new (require('node:net').Socket)({ fd: 5, readable: true }); s.destroy(); return 'closed';",
  ],
  [
    "audit forgery: stream on the call pipe",
    "FileSystem/Write",
    "fs.createWriteStream(null, { fd: 4 }).write('{\"t\":\"call\"}\\n'); return 'written';",
  ],
  [
    "audit forgery: the channel by path",
    "FileSystem/Write",
    "fs.writeFileSync('/proc/self/fd/3', '{}\\n'); return 'written';",
  ],
  ["node-level: require of a file outside the jail", "FileSystem/Read", "return require(OUTSIDE_JS);"],
  [
    "node-level: import() of a file outside the jail",
    "FileSystem/Read",
    "return (await import(require('node:url').pathToFileURL(OUTSIDE_JS).href)).default;",
  ],
  [
    "node-level: process.chdir out of the jail",
    "FileSystem/Read",
    "process.chdir(OUTSIDE_DIR); return process.cwd();",
  ],
  [
    "node-level: symlink inside the writable jail",
    "FileSystem/Write",
    "fs.symlinkSync(JAIL + '/data.txt', JAIL + '/out/link-' + Date.now()); return 'linked';",
  ],
  ["node-level: kill the CLI", "Process/Execute", "process.kill(process.ppid, 'SIGKILL'); return 'killed';"],
];

interface Case {
  name: string;
  expected: string;
  source: string;
  flags: string[];
}

function toolFile(statements: string[], body: string): string {
  const poison = statements.map((statement) => `try { ${statement}; } catch {}`).join(" ");
  return `const fs = require("node:fs");
const JAIL = __JAIL__;
const OUTSIDE = __OUTSIDE__;
const OUTSIDE_JS = __OUTSIDE_JS__;
const OUTSIDE_DIR = __OUTSIDE_DIR__;
const TCP_PORT = __TCP_PORT__;
const UDP_PORT = __UDP_PORT__;
const UNIX_PATH = __UNIX_PATH__;
const LOOPBACK = (host, options, cb) => (options && options.all ? cb(null, [{ address: "127.0.0.1", family: 4 }]) : cb(null, "127.0.0.1", 4));
const poison = () => { ${poison} };
poison();
export function add({ a, b }) { return a + b; }
export async function attack() {
  poison();
  ${body}
}
`;
}

const CASES: Case[] = [
  ...POISONS.flatMap(([poisonName, poison]) =>
    OPERATIONS.map(([kind, expected, body]) => ({
      name: `${poisonName} poisoned, then ${kind}`,
      expected,
      source: toolFile(poison, body),
      flags: [],
    })),
  ),
  ...SPECIAL.map(([name, expected, body, flags]) => ({
    name,
    expected,
    source: toolFile([], body),
    flags: flags ?? [],
  })),
];

describe("hostile tool files", () => {
  let bin: string;
  let cleanup: () => void;
  let dir: string;
  let tcp: Server;
  let unix: Server;
  let udp: UdpSocket;
  const reached: string[] = [];

  beforeAll(async () => {
    ({ bin, cleanup } = await buildTestCli());
    dir = scratch({
      "secret.txt": SECRET,
      "secret.js": `module.exports = ${JSON.stringify(SECRET)};`,
      "jail/data.txt": "inside",
    });
    mkdirSync(join(dir, "jail/out"));
    tcp = createServer((socket) => {
      reached.push("tcp");
      socket.end(`HTTP/1.1 200 OK\r\ncontent-length: 7\r\n\r\nreached`);
    });
    await new Promise<void>((resolve) => tcp.listen(0, "127.0.0.1", resolve));
    unix = createServer((socket) => {
      reached.push("unix");
      socket.end();
    });
    await new Promise<void>((resolve) => unix.listen(join(dir, "ipc.sock"), resolve));
    udp = createSocket("udp4");
    udp.on("message", () => reached.push("udp"));
    await new Promise<void>((resolve) => udp.bind(0, "127.0.0.1", resolve));
    const values: Record<string, string> = {
      __JAIL__: JSON.stringify(join(dir, "jail")),
      __OUTSIDE__: JSON.stringify(join(dir, "secret.txt")),
      __OUTSIDE_JS__: JSON.stringify(join(dir, "secret.js")),
      __OUTSIDE_DIR__: JSON.stringify(dir),
      __TCP_PORT__: String((tcp.address() as { port: number }).port),
      __UDP_PORT__: String(udp.address().port),
      __UNIX_PATH__: JSON.stringify(join(dir, "ipc.sock")),
    };
    mkdirSync(join(dir, "tools"));
    CASES.forEach((c, i) => {
      writeFileSync(
        join(dir, "tools", `hostile-${i}.js`),
        c.source.replace(/__[A-Z_]+__/g, (m) => values[m] ?? m),
      );
    });
  });

  afterAll(() => {
    tcp?.close();
    unix?.close();
    udp?.close();
    cleanup();
  });

  it(`has at least 120 hostile files (${CASES.length}), beside the 46 attempts of the escape suite`, () => {
    expect(CASES.length).toBeGreaterThanOrEqual(120);
  });

  CASES.forEach((c, i) => {
    it.concurrent(
      `${c.name}: denied (${c.expected})`,
      async () => {
        const audit = join(dir, `audit-${i}.jsonl`);
        const client = jailedSession(
          bin,
          dir,
          [
            ...["--allow-net", "granted.invalid", "--allow-run", "true", "--timeout", "20000"],
            ...c.flags,
            ...["--audit-log", audit, `tools/hostile-${i}.js`],
          ],
          { env: { AMBER_TEST_SECRET: SECRET } },
        );
        try {
          const response = await client.call("attack", {}, SLOW);
          const text = JSON.stringify(response);
          expect(text).not.toContain(SECRET);
          expect(response.error).toMatchObject({
            code: -32000,
            message: expect.stringMatching(/^permission denied: /),
          });
          const [kind, action] = c.expected.split("/");
          expect((response.error as { message: string }).message).toMatch(
            new RegExp(`^permission denied: ${kind} ${action} `),
          );
          // The session is still answering.
          expect((await client.call("add", { a: 20, b: 22 }, SLOW)).result).toBe(42);
          const lines = readFileSync(audit, "utf8")
            .trim()
            .split("\n")
            .map((line) => JSON.parse(line) as Record<string, string>);
          expect(lines.some((l) => l.kind === kind && l.action === action && l.decision === "Deny")).toBe(
            true,
          );
          expect(lines.filter((l) => l.resource === "tool:attack").map((l) => l.decision)).toEqual(["Deny"]);
          expect(lines.some((l) => l.resource === "example.org:443")).toBe(false);
          // Operations Node's model refuses outright are refused before any Allow line is written.
          if (/chdir|symlink/.test(c.name))
            expect(lines.filter((l) => l.kind === "FileSystem" && l.decision === "Allow")).toEqual([]);
        } finally {
          await client.close();
        }
      },
      4 * SLOW,
    );
  });

  it("reached no server and leaked no secret into any audit log", () => {
    expect(reached).toEqual([]);
    CASES.forEach((_, i) => {
      const audit = join(dir, `audit-${i}.jsonl`);
      if (existsSync(audit)) expect(readFileSync(audit, "utf8")).not.toContain(SECRET);
    });
  });
});
