import { describe, expect, it } from "vitest";
import {
  constantTimeEqual,
  formatCredential,
  hashPassword,
  issueCredential,
  parseCredential,
  sha256Hex,
  verifyPassword,
} from "../../../src/accounts/crypto.ts";

describe("credentials", () => {
  it("round-trips id and secret through the token format", async () => {
    const issued = await issueCredential("session");
    expect(issued.token).toMatch(/^amba_sess_[0-9a-f]{32}_[A-Za-z0-9_-]{43}$/);
    const parsed = parseCredential("session", issued.token);
    expect(parsed?.id).toBe(issued.id);
    expect(await sha256Hex(parsed?.secret ?? "")).toBe(issued.secretHash);
    expect(formatCredential("session", issued.id, parsed?.secret ?? "")).toBe(issued.token);
  });

  it("hashes to lowercase hex SHA-256 (the stored form of every secret)", async () => {
    expect(await sha256Hex("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    expect(await sha256Hex("")).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  });

  it("parses only its own kind and refuses anything malformed", async () => {
    const { token } = await issueCredential("developer");
    expect(parseCredential("clientKey", token)).toBeNull();
    for (const bad of [
      undefined,
      null,
      "",
      "amba_dev_",
      `${token}x`,
      token.slice(0, -1),
      token.toUpperCase(),
      `${token}\n`,
    ]) {
      expect(parseCredential("developer", bad)).toBeNull();
    }
  });

  it("secrets are random", async () => {
    const a = await issueCredential("clientKey");
    const b = await issueCredential("clientKey");
    expect(a.token).not.toBe(b.token);
    expect(a.secretHash).not.toBe(b.secretHash);
  });
});

describe("constantTimeEqual", () => {
  it("compares strings of equal and different lengths", () => {
    expect(constantTimeEqual("abc", "abc")).toBe(true);
    expect(constantTimeEqual("abc", "abd")).toBe(false);
    expect(constantTimeEqual("abc", "abcd")).toBe(false);
    expect(constantTimeEqual("", "")).toBe(true);
  });
});

describe("passwords", () => {
  it("verifies the right password only, with a fresh salt each time", async () => {
    const one = await hashPassword("hunter2hunter2", 1000);
    const two = await hashPassword("hunter2hunter2", 1000);
    expect(one.salt).not.toBe(two.salt);
    expect(one.hash).not.toBe(two.hash);
    expect(await verifyPassword("hunter2hunter2", one)).toBe(true);
    expect(await verifyPassword("hunter2hunter3", one)).toBe(false);
    expect(await verifyPassword("hunter2hunter2", { ...one, iterations: 1001 })).toBe(false);
  });
});
