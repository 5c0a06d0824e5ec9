import { describe, expect, it } from "vitest";
import { decodeCursor, encodeCursor } from "../../../src/data/cursor.ts";
import { uuidv7 } from "../../../src/data/uuid7.ts";

const id = "0190f2a4-0000-7000-8000-000000000001";

describe("cursors", () => {
  it("round-trips the order signature, value (unicode included) and id as base64url", () => {
    const cursor = encodeCursor({ order: "title asc", value: "ünï'cödé \"; --", id });
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeCursor(cursor, "title asc")).toEqual({ order: "title asc", value: "ünï'cödé \"; --", id });
  });

  it("refuses a cursor issued for another order", () => {
    const cursor = encodeCursor({ order: "created_at desc", value: "2026-01-01T00:00:00Z", id });
    expect(() => decodeCursor(cursor, "calories asc")).toThrow(/issued for order "created_at desc"/);
  });

  it("refuses garbage and tampered cursors with a 400", () => {
    for (const bad of [
      "",
      "!!!",
      "bm90IGpzb24",
      btoa(JSON.stringify(["created_at desc", 1, "not-a-uuid"])),
    ]) {
      expect(() => decodeCursor(bad, "created_at desc")).toThrow(expect.objectContaining({ status: 400 }));
    }
  });
});

describe("uuidv7", () => {
  it("makes version-7, variant-1 ids that sort by creation", () => {
    const ids = Array.from({ length: 500 }, () => uuidv7());
    for (const value of ids)
      expect(value).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("encodes the millisecond timestamp in the first 48 bits", () => {
    const value = uuidv7(Date.UTC(2030, 0, 1));
    expect(Number.parseInt(value.replace(/-/g, "").slice(0, 12), 16)).toBeGreaterThanOrEqual(
      Date.UTC(2030, 0, 1),
    );
  });
});
