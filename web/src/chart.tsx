// A small SVG line chart of allocation over time (no chart library: a few dozen lines keep the bundle small).
import type { UsagePoint } from './api';

interface Series { label: string; cls: string; value: (p: UsagePoint) => number; }

const SERIES: Series[] = [
  { label: 'GPU memory allocated', cls: 's-mem', value: (p) => (p.device_memory_capacity_mib ? (100 * p.device_memory_allocated_mib) / p.device_memory_capacity_mib : 0) },
  { label: 'GPU compute allocated', cls: 's-core', value: (p) => (p.device_compute_capacity_milli ? (100 * p.device_compute_allocated_milli) / p.device_compute_capacity_milli : 0) },
  { label: 'Devices in use', cls: 's-dev', value: (p) => (p.devices ? (100 * p.devices_in_use) / p.devices : 0) },
];

function clock(us: number, seconds = false): string {
  return new Date(us / 1000).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', ...(seconds ? { second: '2-digit' } : {}) });
}

// A step line: each sample's value holds until the next sample (allocation changes at events, not gradually).
function steps(points: UsagePoint[], value: (p: UsagePoint) => number, x: (t: number) => number, y: (v: number) => number): string {
  const out: string[] = [];
  points.forEach((p, i) => {
    if (i > 0) out.push(`${x(p.time_us).toFixed(1)},${y(value(points[i - 1])).toFixed(1)}`);
    out.push(`${x(p.time_us).toFixed(1)},${y(value(p)).toFixed(1)}`);
  });
  return out.join(' ');
}

// `points`: the server's samples, oldest first; the caller may append a live point so the chart ends at "now".
export function UsageChart({ points, intervalS }: { points: UsagePoint[]; intervalS: number }) {
  const W = 800, H = 220, L = 40, R = 10, T = 10, B = 24;
  if (points.length === 0) return <p class="muted">No samples yet: the server records a point every {intervalS} s.</p>;
  const t0 = points[0].time_us;
  const t1 = Math.max(points[points.length - 1].time_us, t0 + intervalS * 1e6);
  const x = (t: number) => L + ((t - t0) / (t1 - t0)) * (W - L - R);
  const y = (v: number) => T + (1 - Math.min(100, Math.max(0, v)) / 100) * (H - T - B);
  const ticks = 4;
  const short = t1 - t0 < 15 * 60e6;  // under 15 minutes: label seconds too
  const last = points[points.length - 1];
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label="Allocation over time, percent of capacity">
        {[0, 25, 50, 75, 100].map((v) => (
          <g key={v}>
            <line class="grid" x1={L} x2={W - R} y1={y(v)} y2={y(v)} />
            <text class="axis" x={L - 6} y={y(v) + 4} text-anchor="end">{v}%</text>
          </g>
        ))}
        {Array.from({ length: ticks + 1 }, (_, i) => t0 + ((t1 - t0) * i) / ticks).map((t, i) => (
          <text key={i} class="axis" x={x(t)} y={H - 6} text-anchor={i === 0 ? 'start' : i === ticks ? 'end' : 'middle'}>{clock(t, short)}</text>
        ))}
        {SERIES.map((s) => (
          <polyline key={s.cls} class={`line ${s.cls}`} fill="none"
            points={steps(points, s.value, x, y)} />
        ))}
      </svg>
      <figcaption>
        {SERIES.map((s) => <span key={s.cls} class="legend"><i class={`swatch ${s.cls}`} />{s.label} ({Math.round(s.value(last))}% now)</span>)}
        <span class="muted"> · a sample every {intervalS} s since {clock(t0, short)}, then now</span>
      </figcaption>
    </figure>
  );
}
