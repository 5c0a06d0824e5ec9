/**
 * `--isolate-per-call`: every call runs in a fresh tool process (a spare, started and loaded while
 * the previous call ran), so no global, prototype or module state set by one call is seen by the
 * next — with and without the sandbox (without it, intrinsics are not frozen and the poisoning
 * really happens in the call that does it).
 */
import { describe, expect, it } from "vitest";
import { cliSuite, LineClient } from "./helpers.ts";

const TOOLS = `
let count = 0;
export function taint() {
  const seen = {
    stash: globalThis.stash ?? null,
    protoX: ({}).x ?? null,
    arrayEvil: typeof [].evil,
    count: ++count,
    pid: process.pid,
  };
  globalThis.stash = "kept";
  try { Object.prototype.x = 1; } catch {}
  try { Array.prototype.evil = () => 1; } catch {}
  try { JSON.stringify = () => "poisoned"; } catch {}
  return seen;
}
export function defineSomething() {
  const o = {};
  Object.defineProperty(o, "v", { value: 42, enumerable: true });
  return o;
}
export async function normal() {
  class A { #x = 1; get x() { return this.#x; } toString() { return "A"; } }
  class B extends A { constructor() { super(); this.y = 2; } }
  const o = JSON.parse(JSON.stringify({ a: [1, { b: 2 }] }));
  const m = new Map([[1, 2]]);
  const read = require("node:fs").readFileSync(__filename, "utf8").length > 0;
  try { Array.prototype.evil = 1; } catch {}
  const frozen = typeof [].evil === "number" ? "assigned" : "ignored";
  try { delete Array.prototype.evil; } catch {}
  return { x: new B().x, y: new B().y, s: String(new B()), o, m: [...m], read, awaited: await Promise.resolve(3), frozen };
}
export function poisonGetter() {
  try { Object.prototype.get = 1; } catch {}
  return "poisoned";
}
`;

describe("--isolate-per-call", () => {
  const { bin, dir } = cliSuite({ "tools.js": TOOLS });

  for (const flags of [[], ["--sandbox"]]) {
    it(`carries no globals, prototypes or module state over (${flags.join(" ") || "no permission options"})`, async () => {
      const client = new LineClient(bin, ["session", "--isolate-per-call", ...flags, "tools.js"], {
        cwd: dir,
      });
      const pids = new Set<number>();
      for (let i = 0; i < 3; i++) {
        const seen = (await client.call("taint")).result as Record<string, unknown>;
        expect(seen).toEqual({
          stash: null,
          protoX: null,
          arrayEvil: "undefined",
          count: 1,
          pid: expect.any(Number),
        });
        pids.add(seen.pid as number);
      }
      expect(pids.size).toBe(3);
      // A poisoned Object.prototype ("Getter must be a function" for every descriptor) stays in its call.
      expect((await client.call("poisonGetter")).result).toBe("poisoned");
      expect((await client.call("defineSomething")).result).toEqual({ v: 42 });
      expect(await client.close()).toBe(0);
    });
  }

  for (const [flags, frozen] of [
    [[], "assigned"],
    [["--sandbox"], "ignored"],
  ] as [string[], string][]) {
    it(`runs ordinary code unchanged; built-ins are frozen only under a restriction (${flags.join(" ") || "none"})`, async () => {
      const client = new LineClient(bin, ["session", ...flags, "tools.js"], { cwd: dir });
      expect((await client.call("normal")).result).toEqual({
        x: 1,
        y: 2,
        s: "A",
        o: { a: [1, { b: 2 }] },
        m: [[1, 2]],
        read: true,
        awaited: 3,
        frozen,
      });
      expect(await client.close()).toBe(0);
    });
  }

  it("keeps state between calls without the flag (the control)", async () => {
    const client = new LineClient(bin, ["session", "tools.js"], { cwd: dir });
    await client.call("taint");
    const second = (await client.call("taint")).result as Record<string, unknown>;
    expect(second).toMatchObject({ stash: "kept", protoX: 1, arrayEvil: "function", count: 2 });
    expect(await client.close()).toBe(0);
  });
});
