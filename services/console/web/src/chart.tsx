// A hand-drawn SVG line chart of metric series: a few hundred bytes of code instead of a charting library. Each
// chart has a caption (colours come from console.css: the CSP allows no inline styles) with each series' total (counters) or latest value (gauges), which screen readers read.

import type { Schemas } from "@ferry-mq/sdk";

export interface ChartSeries {
  label: string;
  series: Schemas["MetricSeries"] | undefined;
}

const W = 560;
const H = 160;
const PAD = { left: 44, right: 8, top: 8, bottom: 22 };

function fmt(v: number): string {
  if (v >= 1e6) return `${(v / 1e6).toFixed(1)}M`;
  if (v >= 1e3) return `${(v / 1e3).toFixed(1)}k`;
  return Number.isInteger(v) ? String(v) : v.toFixed(1);
}

function hhmm(iso: string): string {
  const d = new Date(iso);
  return `${String(d.getHours()).padStart(2, "0")}:${String(d.getMinutes()).padStart(2, "0")}`;
}

export function Chart({ title, lines, unit }: { title: string; lines: ChartSeries[]; unit: string }) {
  const all = lines.flatMap((l) => l.series?.points ?? []);
  const n = Math.max(...lines.map((l) => l.series?.points.length ?? 0), 0);
  const max = Math.max(1, ...all.map((p) => p.value));
  const x = (i: number) => PAD.left + (n <= 1 ? 0 : (i * (W - PAD.left - PAD.right)) / (n - 1));
  const y = (v: number) => H - PAD.bottom - (v / max) * (H - PAD.top - PAD.bottom);
  const first = lines.find((l) => l.series?.points.length)?.series?.points;
  const summary = lines.map((l) => {
    const pts = l.series?.points ?? [];
    const value = l.series?.kind === "GAUGE" ? (pts[pts.length - 1]?.value ?? 0) : pts.reduce((s, p) => s + p.value, 0);
    return { label: l.label, value, gauge: l.series?.kind === "GAUGE" };
  });
  return (
    <figure class="chart">
      <figcaption>
        <span class="chart-title">{title}</span>
        <span class="chart-legend">
          {summary.map((s, i) => (
            <span key={s.label} class="legend-item" data-series={s.label} data-value={s.value}>
              <span class={`swatch c${i}`} aria-hidden="true" />
              {s.label} {fmt(s.value)}
              {s.gauge ? " now" : ""}
            </span>
          ))}
        </span>
      </figcaption>
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={`${title} (${unit}), ${summary.map((s) => `${s.label} ${s.value}`).join(", ")}`}>
        {[0, 0.5, 1].map((f) => (
          <g key={f}>
            <line class="grid-line" x1={PAD.left} x2={W - PAD.right} y1={y(max * f)} y2={y(max * f)} />
            <text class="axis" x={PAD.left - 4} y={y(max * f) + 4} text-anchor="end">
              {fmt(max * f)}
            </text>
          </g>
        ))}
        {first && first.length > 0 && (
          <>
            <text class="axis" x={PAD.left} y={H - 6}>{hhmm(first[0]!.timestamp)}</text>
            <text class="axis" x={W - PAD.right} y={H - 6} text-anchor="end">{hhmm(first[first.length - 1]!.timestamp)}</text>
          </>
        )}
        {lines.map((l, i) =>
          l.series && l.series.points.length > 0 ? (
            <polyline key={l.label} class={`series c${i}`} fill="none" stroke-width={2}
              points={l.series.points.map((p, i) => `${x(i).toFixed(1)},${y(p.value).toFixed(1)}`).join(" ")} />
          ) : null,
        )}
      </svg>
    </figure>
  );
}
