/**
 * The console's usage chart: agent tool calls per billing month as a small inline SVG bar chart
 * (pure: data in, markup out — no script, readable without colour: every bar carries its number).
 */
import { html } from "hono/html";

/** One bar: a billing period (YYYY-MM) and its count. */
export interface UsagePoint {
  period: string;
  value: number;
}

const WIDTH = 420;
const HEIGHT = 160;
const TOP = 18;
const BOTTOM = 22;

/** An SVG bar chart of `points` (oldest first), titled `title`. */
export function usageChart(points: readonly UsagePoint[], title: string) {
  const max = Math.max(1, ...points.map((p) => p.value));
  const slot = WIDTH / Math.max(1, points.length);
  const barWidth = Math.min(48, slot * 0.6);
  const plot = HEIGHT - TOP - BOTTOM;
  return html`<svg id="usage-chart" role="img" aria-labelledby="usage-chart-title" viewBox="0 0 ${WIDTH} ${HEIGHT}" width="${WIDTH}" height="${HEIGHT}" xmlns="http://www.w3.org/2000/svg">
  <title id="usage-chart-title">${title}</title>
  <line x1="0" y1="${HEIGHT - BOTTOM}" x2="${WIDTH}" y2="${HEIGHT - BOTTOM}" stroke="#9aa3b5"/>
  ${points.map((p, i) => {
    const h = Math.round((p.value / max) * plot);
    const x = Math.round(i * slot + (slot - barWidth) / 2);
    const y = HEIGHT - BOTTOM - h;
    return html`<g class="bar" data-period="${p.period}" data-value="${p.value}">
    <rect x="${x}" y="${y}" width="${Math.round(barWidth)}" height="${h}" fill="#2f5fb3"><title>${p.period}: ${p.value}</title></rect>
    <text class="value" x="${x + barWidth / 2}" y="${y - 4}" text-anchor="middle" font-size="11">${p.value}</text>
    <text class="period" x="${x + barWidth / 2}" y="${HEIGHT - 6}" text-anchor="middle" font-size="11">${p.period}</text>
  </g>`;
  })}
</svg>`;
}

/** The `count` billing periods ending with `period` (YYYY-MM), oldest first. */
export function lastPeriods(period: string, count: number): string[] {
  const [year, month] = period.split("-").map(Number) as [number, number];
  return Array.from({ length: count }, (_, i) => {
    const d = new Date(Date.UTC(year, month - 1 - (count - 1 - i), 1));
    return d.toISOString().slice(0, 7);
  });
}
