/**
 * The console's usage chart: agent tool calls per UTC day as a small inline SVG bar chart, and the
 * same numbers as a table (pure: data in, markup out — no script). The SVG is one labelled image
 * (title and a one-line summary) whose bars carry their day and count as tooltips; 30 numbers do not
 * fit under 30 bars, so every number is in the table, visually hidden but read by screen readers
 * and by anyone who copies the page.
 */
import { html } from "hono/html";

/** One bar: a UTC day (YYYY-MM-DD) and its count. */
export interface UsagePoint {
  day: string;
  value: number;
}

const WIDTH = 600;
const HEIGHT = 170;
const TOP = 18;
const BOTTOM = 22;
const LEFT = 6;

/** `11-03` for 2026-11-03: short enough for an axis label, unambiguous within a 30-day chart. */
const shortDay = (day: string) => day.slice(5);

/** Axis labels stay inside the chart: the first starts at its bar, the last ends at its bar. */
const anchor = (i: number, count: number) =>
  count > 1 && i === 0 ? "start" : count > 1 && i === count - 1 ? "end" : "middle";

/** What the chart shows, in one sentence (its accessible description). */
function summary(points: readonly UsagePoint[]): string {
  if (points.length === 0) return "No days.";
  const total = points.reduce((sum, p) => sum + p.value, 0);
  const peak = points.reduce((best, p) => (p.value > best.value ? p : best));
  const span = `${points[0]?.day} to ${points.at(-1)?.day} (UTC)`;
  return total === 0
    ? `${span}: none.`
    : `${span}: ${total} in total; the busiest day ${peak.day} with ${peak.value}.`;
}

/**
 * An SVG bar chart of `points` (oldest first), titled `title`, followed by the same points as a
 * visually hidden table (hidden by a wrapper: a table box keeps its content's width whatever its
 * own). Days are labelled at the first, middle and last bar; the largest count
 * marks the top of the scale.
 */
export function usageChart(points: readonly UsagePoint[], title: string) {
  const max = Math.max(1, ...points.map((p) => p.value));
  const slot = (WIDTH - LEFT) / Math.max(1, points.length);
  const barWidth = Math.max(1, Math.min(48, slot * 0.7));
  const plot = HEIGHT - TOP - BOTTOM;
  const labelled = new Set([0, Math.floor((points.length - 1) / 2), points.length - 1]);
  const centre = (i: number) => Math.round(LEFT + i * slot + slot / 2);
  /** Where a day label is anchored: the bar's centre, or its outer edge at either end. */
  const labelX = (i: number) => {
    const side = anchor(i, points.length);
    return side === "start"
      ? Math.round(centre(i) - barWidth / 2)
      : side === "end"
        ? Math.round(centre(i) + barWidth / 2)
        : centre(i);
  };
  return html`<svg id="usage-chart" role="img" aria-labelledby="usage-chart-title usage-chart-desc" viewBox="0 0 ${WIDTH} ${HEIGHT}" width="${WIDTH}" height="${HEIGHT}" xmlns="http://www.w3.org/2000/svg">
  <title id="usage-chart-title">${title}</title>
  <desc id="usage-chart-desc">${summary(points)}</desc>
  <line x1="0" y1="${HEIGHT - BOTTOM}" x2="${WIDTH}" y2="${HEIGHT - BOTTOM}" stroke="#9aa3b5"/>
  <line x1="0" y1="${TOP}" x2="${WIDTH}" y2="${TOP}" stroke="#dde2ec" stroke-dasharray="3 3"/>
  <text class="max" x="${LEFT}" y="${TOP - 5}" font-size="11">${max}</text>
  ${points.map((p, i) => {
    const h = Math.round((p.value / max) * plot);
    const x = Math.round(centre(i) - barWidth / 2);
    const y = HEIGHT - BOTTOM - h;
    return html`<g class="bar" data-day="${p.day}" data-value="${p.value}">
    <rect x="${x}" y="${y}" width="${Math.round(barWidth)}" height="${h}" fill="#2f5fb3"><title>${p.day}: ${p.value}</title></rect>
    ${labelled.has(i) ? html`<text class="day" x="${labelX(i)}" y="${HEIGHT - 6}" text-anchor="${anchor(i, points.length)}" font-size="11">${shortDay(p.day)}</text>` : ""}
  </g>`;
  })}
</svg>
<div class="visually-hidden"><table id="usage-table"><caption>${title}</caption>
<thead><tr><th scope="col">Day (UTC)</th><th scope="col">Count</th></tr></thead>
<tbody>${points.map((p) => html`<tr><th scope="row">${p.day}</th><td>${p.value}</td></tr>`)}</tbody></table></div>`;
}
