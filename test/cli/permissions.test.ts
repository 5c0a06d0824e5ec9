import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type CommandDef, parseArgs } from "../../src/cli/command.ts";
import { sessionCommand } from "../../src/cli/commands/session.ts";
import { allowAllPolicy, buildPolicy, canonicalPath, decide, isWithin } from "../../src/cli/permissions.ts";
import { nodePermissionArgs } from "../../src/cli/sandbox/node-flags.ts";
import { scratch } from "./helpers.ts";

describe("permission policy", () => {
  it("matches paths by whole components", () => {
    expect(isWithin("/data", "/data")).toBe(true);
    expect(isWithin("/data/x/y", "/data")).toBe(true);
    expect(isWithin("/database", "/data")).toBe(false);
    expect(isWithin("/anything", "/")).toBe(true);
  });

  it("allows everything without flags", () => {
    const policy = buildPolicy({}, "/");
    expect(policy).toEqual(allowAllPolicy());
    expect(decide(policy, "FileSystem", "Write", "/etc/passwd")).toBe("Allow");
    expect(nodePermissionArgs(policy, { hostScript: "/h", entry: "/e" })).toEqual([]);
  });

  it("--sandbox denies every category and grants punch through", () => {
    const dir = scratch({ "data/a.txt": "a" });
    const policy = buildPolicy(
      {
        sandbox: true,
        allowRead: ["data"],
        allowNet: ["example.com:443,LocalHost."],
        allowEnv: ["HOME"],
        allowRun: ["git"],
      },
      dir,
    );
    expect(decide(policy, "FileSystem", "Read", join(dir, "data/a.txt"))).toBe("Allow");
    expect(decide(policy, "FileSystem", "Read", join(dir, "database"))).toBe("Deny");
    expect(decide(policy, "FileSystem", "Write", join(dir, "data/a.txt"))).toBe("Deny");
    expect(decide(policy, "Network", "Connect", "example.com:443")).toBe("Allow");
    expect(decide(policy, "Network", "Connect", "example.com:80")).toBe("Deny");
    // A bare name is its lookup: a name granted with a port is looked up (a connect by name needs
    // it), what is dialled is checked again on its address and port.
    expect(decide(policy, "Network", "Connect", "example.com")).toBe("Allow");
    expect(decide(policy, "Network", "Connect", "example.org")).toBe("Deny");
    expect(decide(policy, "Network", "Connect", "localhost:5432")).toBe("Allow");
    expect(decide(policy, "Network", "Listen", "0.0.0.0:0")).toBe("Deny");
    // Host names are compared as DNS does: case aside, a root label's trailing dot aside.
    expect(decide(policy, "Network", "Connect", "Example.COM:443")).toBe("Allow");
    expect(decide(policy, "Network", "Connect", "example.com.:443")).toBe("Allow");
    expect(decide(policy, "Network", "Connect", "LOCALHOST.")).toBe("Allow");
    expect(decide(policy, "Network", "Connect", "example.com..:443")).toBe("Deny");
    expect(decide(policy, "Network", "Connect", "example.com.:80")).toBe("Deny");
    expect(decide(policy, "Environment", "Read", "HOME")).toBe("Allow");
    expect(decide(policy, "Environment", "Read", "PATH")).toBe("Deny");
    expect(decide(policy, "Process", "Execute", "/usr/bin/git")).toBe("Allow");
    expect(decide(policy, "Process", "Execute", "sh")).toBe("Deny");
  });

  it("--deny-* flags deny one category each", () => {
    const policy = buildPolicy({ denyNet: true, denyEnv: true }, "/");
    expect(policy.denied).toEqual(["net.connect", "net.listen", "env.read"]);
    expect(decide(policy, "FileSystem", "Read", "/etc/passwd")).toBe("Allow");
  });

  it("under any restriction, no file grant reaches another process's environment, memory or pipes", () => {
    const fsOpen = buildPolicy({ denyNet: true, denyEnv: true }, "/");
    for (const path of ["/proc/42/environ", "/proc/self/environ", "/proc/42/task/43/environ"])
      expect(decide(fsOpen, "FileSystem", "Read", path), path).toBe("Deny");
    for (const path of ["/proc/42/mem", "/proc/42/fd/pipe:[9]", "/proc/42/task/43/fd/1"]) {
      expect(decide(fsOpen, "FileSystem", "Read", path), path).toBe("Deny");
      expect(decide(fsOpen, "FileSystem", "Write", path), path).toBe("Deny");
    }
    const rootGrant = buildPolicy({ sandbox: true, allowRead: ["/"], allowWrite: ["/"] }, "/");
    expect(decide(rootGrant, "FileSystem", "Write", "/proc/42/mem")).toBe("Deny");
    // Ordinary /proc files, and environments where the environment is granted, stay as granted.
    expect(decide(fsOpen, "FileSystem", "Read", "/proc/cpuinfo")).toBe("Allow");
    expect(decide(fsOpen, "FileSystem", "Read", "/proc/42/status")).toBe("Allow");
    expect(decide(fsOpen, "FileSystem", "Write", "/proc/42/oom_score_adj")).toBe("Deny");
    expect(decide(fsOpen, "FileSystem", "Write", "/proc/42")).toBe("Deny");
    expect(decide(fsOpen, "FileSystem", "Write", "/proc/sys/vm/overcommit_memory")).toBe("Allow");
    expect(decide(buildPolicy({ denyNet: true }, "/"), "FileSystem", "Read", "/proc/42/environ")).toBe(
      "Allow",
    );
    expect(decide(allowAllPolicy(), "FileSystem", "Write", "/proc/42/mem")).toBe("Allow");
  });

  it("reads a policy file with paths relative to it", () => {
    const dir = scratch({
      "conf/policy.json": JSON.stringify({
        permissions: { deny_fs: true, allow_read: ["../ws"], allow_env: ["X"] },
      }),
    });
    mkdirSync(join(dir, "ws"));
    const policy = buildPolicy({ permissionPolicy: "conf/policy.json" }, dir);
    expect(policy.denied).toEqual(["fs.read", "fs.write"]);
    expect(policy.allowRead).toEqual([join(dir, "ws")]);
    expect(policy.allowEnv).toEqual(["X"]);
    expect(() => buildPolicy({ permissionPolicy: "nope.json" }, dir)).toThrow(
      "Failed to read permission policy",
    );
    writeFileSync(join(dir, "bad.json"), "{");
    expect(() => buildPolicy({ permissionPolicy: "bad.json" }, dir)).toThrow(
      "Failed to parse permission policy",
    );
  });

  it("canonicalises through symlinks, even for files that do not exist yet", () => {
    const dir = scratch({ "real/x": "" });
    symlinkSync(join(dir, "real"), join(dir, "link"));
    expect(canonicalPath("link/x", dir)).toBe(join(dir, "real/x"));
    expect(canonicalPath("link/new/deeper.txt", dir)).toBe(join(dir, "real/new/deeper.txt"));
    expect(canonicalPath("real/../link/./x", dir)).toBe(join(dir, "real/x"));
  });

  it("restricts the tool process with Node's permission model to the grants", () => {
    const policy = buildPolicy({ sandbox: true, allowRead: ["/tmp"], allowWrite: ["/var/tmp"] }, "/");
    expect(
      nodePermissionArgs(policy, { hostScript: "/h.mjs", entry: "/e.ts" }, "--permission", false),
    ).toEqual([
      "--permission",
      "--allow-fs-read=/h.mjs",
      "--allow-fs-read=/e.ts",
      "--allow-fs-read=/tmp",
      "--allow-fs-read=/var/tmp",
      "--allow-fs-write=/var/tmp",
    ]);
    // Where Node's permission model covers the network (Node ≥ 25): none unless some host is granted.
    expect(nodePermissionArgs(policy, { hostScript: "/h", entry: "/e" }, "--permission", true)).not.toContain(
      "--allow-net",
    );
    const oneHost = buildPolicy({ sandbox: true, allowNet: ["api.example.com"] }, "/");
    expect(nodePermissionArgs(oneHost, { hostScript: "/h", entry: "/e" }, "--permission", true)).toContain(
      "--allow-net",
    );
    expect(
      nodePermissionArgs(oneHost, { hostScript: "/h", entry: "/e" }, "--permission", false),
    ).not.toContain("--allow-net");
    const runOnly = buildPolicy({ denyNet: true, allowRun: ["git"] }, "/");
    expect(nodePermissionArgs(runOnly, { hostScript: "/h", entry: "/e" }, "--permission", false)).toEqual([
      "--permission",
      "--allow-fs-read=*",
      "--allow-fs-write=*",
      "--allow-child-process",
    ]);
  });
});

describe("grant flags without a value", () => {
  const parse = (argv: string[]) => parseArgs(sessionCommand as CommandDef<unknown>, argv);
  it("stand alone before another option or at the end, and never take the tool file", () => {
    expect(parse(["--sandbox", "--allow-read", "data", "t.ts"])).toMatchObject({
      allowRead: ["data"],
      positionals: ["t.ts"],
    });
    expect(parse(["--allow-read", "--allow-env", "t.ts"])).toMatchObject({
      allowRead: [""],
      allowEnv: [""],
      positionals: ["t.ts"],
    });
    expect(parse(["--allow-net", "t.ts", "--timeout", "5"])).toMatchObject({
      allowNet: [""],
      positionals: ["t.ts"],
    });
    expect(parse(["t.ts", "--allow-run"])).toMatchObject({ allowRun: [""], positionals: ["t.ts"] });
    expect(parse(["t.ts", "--allow-write", "out"])).toMatchObject({ allowWrite: ["out"] });
  });

  it("grant their whole kind back under --sandbox", () => {
    const policy = buildPolicy({ sandbox: true, allowRead: [""], allowNet: [""] }, "/");
    expect(policy.denied).toEqual(["fs.write", "env.read", "run.execute"]);
    expect(policy.allowRead).toEqual([]);
    expect(decide(policy, "FileSystem", "Read", "/etc/hostname")).toBe("Allow");
    expect(decide(policy, "Network", "Listen", "127.0.0.1:80")).toBe("Allow");
    expect(decide(policy, "FileSystem", "Write", "/tmp/x")).toBe("Deny");
  });

  it("--allow-listen grants listening (and looking up the host to bind), never connecting", () => {
    const policy = buildPolicy({ sandbox: true, allowListen: ["127.0.0.1"] }, "/");
    expect(decide(policy, "Network", "Listen", "127.0.0.1:8080")).toBe("Allow");
    expect(decide(policy, "Network", "Connect", "127.0.0.1")).toBe("Allow");
    expect(decide(policy, "Network", "Connect", "127.0.0.1:8080")).toBe("Deny");
    expect(decide(policy, "Network", "Listen", "0.0.0.0:8080")).toBe("Deny");
    const bare = buildPolicy({ sandbox: true, allowListen: [""] }, "/");
    expect(bare.denied).toEqual(["fs.read", "fs.write", "net.connect", "env.read", "run.execute"]);
    expect(decide(bare, "Network", "Listen", "0.0.0.0:1")).toBe("Allow");
    expect(decide(bare, "Network", "Connect", "example.com")).toBe("Deny");
  });
});
