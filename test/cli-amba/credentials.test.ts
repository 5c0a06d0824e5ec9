/**
 * Where the developer token is kept and where it must not turn up: the stored login is replaced,
 * never rewritten in place (an existing file's inode, links and mode never see the token), and a
 * usage error does not quote the value of a flag.
 */
import {
  chmodSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { commandWords } from "../../src/cli/amba/commands.ts";
import { readStoredLogin, writeStoredLogin } from "../../src/cli/amba/settings.ts";

const root = mkdtempSync(join(tmpdir(), "amba-credentials-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const LOGIN = { url: "https://api.example.com", token: "amba_dev_secret" };
const mode = (path: string) => statSync(path).mode & 0o777;

describe("the stored login", () => {
  it("is created in a 0700 directory as a 0600 file", () => {
    const path = join(root, "fresh", "amba", "config.json");
    writeStoredLogin(LOGIN, path);
    expect(mode(join(root, "fresh", "amba"))).toBe(0o700);
    expect(mode(path)).toBe(0o600);
    expect(readStoredLogin(path)).toEqual(LOGIN);
  });

  it("replaces an existing file: its old inode (a hard link elsewhere) never gets the token", () => {
    const dir = join(root, "linked", "amba");
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    chmodSync(dir, 0o755);
    const path = join(dir, "config.json");
    writeFileSync(path, '{"url":"http://127.0.0.1:8787","token":"old"}\n', { mode: 0o644 });
    chmodSync(path, 0o644);
    const elsewhere = join(root, "linked", "world-readable.json");
    linkSync(path, elsewhere);
    writeStoredLogin(LOGIN, path);
    expect(readFileSync(elsewhere, "utf8")).not.toContain(LOGIN.token);
    expect(mode(elsewhere)).toBe(0o644);
    expect(readStoredLogin(path)).toEqual(LOGIN);
    expect(mode(path)).toBe(0o600);
    expect(mode(dir)).toBe(0o700);
  });

  it("replaces a symbolic link instead of writing through it", () => {
    const dir = join(root, "symlinked", "amba");
    mkdirSync(dir, { recursive: true });
    const target = join(root, "symlinked", "target.txt");
    writeFileSync(target, "not a config\n");
    const path = join(dir, "config.json");
    symlinkSync(target, path);
    writeStoredLogin(LOGIN, path);
    expect(readFileSync(target, "utf8")).toBe("not a config\n");
    expect(readStoredLogin(path)).toEqual(LOGIN);
    expect(mode(path)).toBe(0o600);
  });
});

describe("an unknown command's error", () => {
  it("quotes the words before the first flag, never a flag's value", () => {
    expect(commandWords(["colections", "list", "--json"])).toEqual(["colections", "list"]);
    expect(commandWords(["--amba-token", "amba_dev_secret", "whoami"])).toEqual([]);
    expect(commandWords(["whoamii", "--amba-token", "amba_dev_secret"])).toEqual(["whoamii"]);
  });
});
