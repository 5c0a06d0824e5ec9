import { describe, expect, it } from "vitest";
import { usageChart } from "../../../src/console/chart.ts";

const points = [
  { day: "2026-10-31", value: 2 },
  { day: "2026-11-01", value: 0 },
  { day: "2026-11-02", value: 4 },
];

describe("console usage chart", () => {
  it("draws one bar per day, scaled to the largest, labelled and summarised for assistive technology", async () => {
    const svg = String(await usageChart(points, "calls <per> day"));
    expect(svg).toContain('aria-labelledby="usage-chart-title usage-chart-desc"');
    expect(svg).toContain('<title id="usage-chart-title">calls &lt;per&gt; day</title>');
    expect(svg).toContain(
      '<desc id="usage-chart-desc">2026-10-31 to 2026-11-02 (UTC): 6 in total; the busiest day 2026-11-02 with 4.</desc>',
    );
    const heights = [...svg.matchAll(/<rect [^>]*height="(\d+)"/g)].map((m) => Number(m[1]));
    expect(heights).toEqual([65, 0, 130]);
    expect([...svg.matchAll(/<rect [^>]*><title>([^<]+)</g)].map((m) => m[1])).toEqual([
      "2026-10-31: 2",
      "2026-11-01: 0",
      "2026-11-02: 4",
    ]);
    // Labels at the first, middle and last day, the outer two kept inside the chart.
    expect(
      [...svg.matchAll(/class="day"[^>]*text-anchor="(\w+)"[^>]*>([^<]+)</g)].map((m) => `${m[2]} ${m[1]}`),
    ).toEqual(["10-31 start", "11-01 middle", "11-02 end"]);
  });

  it("repeats every number in a visually hidden table, one row per day", async () => {
    const markup = String(await usageChart(points, "calls per day"));
    const table = markup.slice(markup.indexOf('<div class="visually-hidden"><table id="usage-table">'));
    expect(table).toMatch(
      /^<div class="visually-hidden"><table id="usage-table"><caption>calls per day<\/caption>/,
    );
    expect(
      [...table.matchAll(/<tr><th scope="row">([^<]+)<\/th><td>(\d+)<\/td><\/tr>/g)].map((m) => [m[1], m[2]]),
    ).toEqual([
      ["2026-10-31", "2"],
      ["2026-11-01", "0"],
      ["2026-11-02", "4"],
    ]);
  });

  it("says so when nothing was counted", async () => {
    const svg = String(await usageChart([{ day: "2026-11-02", value: 0 }], "t"));
    expect(svg).toContain('<desc id="usage-chart-desc">2026-11-02 to 2026-11-02 (UTC): none.</desc>');
  });
});
