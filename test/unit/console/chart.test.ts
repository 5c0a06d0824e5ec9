import { describe, expect, it } from "vitest";
import { lastPeriods, usageChart } from "../../../src/console/chart.ts";

describe("console usage chart", () => {
  it("lists the billing months ending with a period, across a year boundary", () => {
    expect(lastPeriods("2026-02", 4)).toEqual(["2025-11", "2025-12", "2026-01", "2026-02"]);
  });

  it("draws one labelled bar per period, scaled to the largest", async () => {
    const svg = String(
      await usageChart(
        [
          { period: "2026-10", value: 2 },
          { period: "2026-11", value: 4 },
        ],
        "calls <per> month",
      ),
    );
    expect(svg).toContain('<title id="usage-chart-title">calls &lt;per&gt; month</title>');
    const heights = [...svg.matchAll(/<rect [^>]*height="(\d+)"/g)].map((m) => Number(m[1]));
    expect(heights).toEqual([60, 120]);
    expect([...svg.matchAll(/class="value"[^>]*>(\d+)</g)].map((m) => m[1])).toEqual(["2", "4"]);
  });
});
