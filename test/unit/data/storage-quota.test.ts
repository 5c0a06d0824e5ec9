/**
 * The isolate's storage gauge (src/data/storage-quota.ts): when a project's size is measured again,
 * with the clock passed in, and what it knows after a delete of events freed bytes. The Worker test (test/worker/data/storage-quota.test.ts) covers the
 * refusals through REST and the app MCP.
 */
import { describe, expect, it } from "vitest";
import {
  DEFAULT_STORAGE_QUOTA_MIB,
  StorageGauge,
  storageQuotaBytes,
} from "../../../src/data/storage-quota.ts";

const P = "project";

describe("StorageGauge", () => {
  it("measures a project first on use, then at most once an interval, one measurement at a time", () => {
    const gauge = new StorageGauge(10_000);
    expect(gauge.read(P, 0)).toEqual({ bytes: undefined, due: true });
    // Running: no second measurement, whatever the clock says.
    expect(gauge.read(P, 50_000)).toEqual({ bytes: undefined, due: false });
    gauge.settle(P, 3_000, 100);
    expect(gauge.read(P, 9_000)).toEqual({ bytes: 3_000, due: false });
    expect(gauge.read(P, 10_100)).toEqual({ bytes: 3_000, due: true });
    // A project that shrank (a dropped collection) is known to have at the next measurement.
    gauge.settle(P, 1_000, 10_200);
    expect(gauge.read(P, 10_300)).toEqual({ bytes: 1_000, due: false });
    expect(gauge.read("other", 10_300)).toEqual({ bytes: undefined, due: true });
  });

  it("keeps the last size when a measurement fails, and tries again an interval later", () => {
    const gauge = new StorageGauge(10_000);
    gauge.read(P, 0);
    gauge.settle(P, 5_000, 0);
    expect(gauge.read(P, 10_000).due).toBe(true);
    gauge.settle(P, undefined, 10_000);
    expect(gauge.read(P, 15_000)).toEqual({ bytes: 5_000, due: false });
    expect(gauge.read(P, 20_000)).toEqual({ bytes: 5_000, due: true });
  });
});

describe("StorageGauge.freed (a delete of events)", () => {
  it("lowers the known size at once and measures again on the next write", () => {
    const gauge = new StorageGauge(10_000);
    gauge.read(P, 0);
    gauge.settle(P, 5_000, 0);
    gauge.freed(P, 3_000);
    expect(gauge.read(P, 1_000)).toEqual({ bytes: 2_000, due: true });
    gauge.settle(P, 2_500, 1_100);
    expect(gauge.read(P, 1_200)).toEqual({ bytes: 2_500, due: false });
    // A project this isolate never measured stays unknown (its first write measures it).
    gauge.freed("other", 1_000);
    expect(gauge.read("other", 1_200)).toEqual({ bytes: undefined, due: true });
  });

  it("does not let a measurement that ran across the delete bring the freed bytes back", () => {
    const gauge = new StorageGauge(10_000);
    gauge.read(P, 0);
    gauge.settle(P, 5_000, 0);
    expect(gauge.read(P, 10_000).due).toBe(true);
    // The delete lands while that measurement runs; it may have read the size before the delete.
    gauge.freed(P, 3_000);
    expect(gauge.read(P, 10_100)).toEqual({ bytes: 2_000, due: false });
    gauge.settle(P, 5_000, 10_200);
    // The lower bound, and measured again on the next write.
    expect(gauge.read(P, 10_300)).toEqual({ bytes: 2_000, due: true });
    gauge.settle(P, 2_100, 10_400);
    expect(gauge.read(P, 10_500)).toEqual({ bytes: 2_100, due: false });
  });

  it("knows which of a project's bytes are its events' (row writes are refused on the rest alone), also after a delete of events", () => {
    const gauge = new StorageGauge(10_000);
    expect(gauge.eventBytes(P)).toBe(0);
    gauge.read(P, 0);
    gauge.settle(P, 5_000, 0, 4_000);
    expect(gauge.eventBytes(P)).toBe(4_000);
    gauge.freed(P, 3_000);
    expect(gauge.read(P, 100).bytes).toBe(2_000);
    expect(gauge.eventBytes(P)).toBe(1_000);
    // A failed measurement keeps what was known.
    gauge.settle(P, undefined, 200);
    expect(gauge.eventBytes(P)).toBe(1_000);
    // A measurement running while events were deleted: the lower bound of both.
    gauge.read(P, 20_000);
    gauge.freed(P, 500);
    gauge.settle(P, 6_000, 20_100, 3_000);
    expect(gauge.read(P, 20_200).bytes).toBe(5_500);
    expect(gauge.eventBytes(P)).toBe(2_500);
  });
});

describe("storageQuotaBytes", () => {
  it("reads STORAGE_QUOTA_MIB, else the default", () => {
    expect(storageQuotaBytes("2")).toBe(2 * 1024 * 1024);
    for (const setting of [undefined, "", "0", "-1", "lots"]) {
      expect(storageQuotaBytes(setting)).toBe(DEFAULT_STORAGE_QUOTA_MIB * 1024 * 1024);
    }
  });
});
