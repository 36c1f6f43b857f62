// Usage: GPU allocation against measured use over a chosen time range, per tenant, and the accounting behind it
// (GPU-hours allocated and used per tenant and per job), from GET /api/v1/usage (the server's durable history).
import { useContext, useEffect, useState } from 'preact/hooks';
import { call } from '../api';
import { AppContext } from '../state';

export interface UsageTotals {
  allocated_gpu_milli_hours: number; used_gpu_milli_hours: number;
  allocated_memory_mib_hours: number; used_memory_mib_hours: number; job_seconds: number; measured_seconds: number;
}
export interface UsageSeriesPoint {
  t: string; time_us: number; allocated_compute_milli: number; used_compute_milli: number;
  allocated_memory_mib: number; used_memory_mib: number;
}
export interface UsageReport {
  since: string; until: string; step_s: number;
  tenants: (UsageTotals & { tenant: string })[];
  jobs?: (UsageTotals & { id: number; name: string; tenant: string })[];
  series: UsageSeriesPoint[];
}

const RANGES: [string, string][] = [['1h', 'Last hour'], ['24h', 'Last 24 hours'], ['7d', 'Last 7 days'], ['30d', 'Last 30 days']];

// 1234 milli → "1.23" (GPU-hours, devices).
const milli = (v: number) => (v / 1000).toFixed(2);
const percent = (part: number, whole: number) => (whole > 0 ? `${Math.round((100 * part) / whole)}%` : '–');

function when(us: number, long: boolean): string {
  const d = new Date(us / 1000);
  return long ? d.toLocaleDateString([], { month: 'short', day: 'numeric' }) + ' ' + d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })
    : d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
}

// Devices allocated vs devices' worth of SM time used, averaged per step; the y axis fits the largest allocation.
export function AllocationVsUseChart({ report }: { report: UsageReport }) {
  const pts = report.series;
  if (pts.length === 0) return <p class="muted" data-testid="usage-empty">No usage recorded in this range yet (the server writes a minute once it has passed).</p>;
  const W = 800, H = 220, L = 48, R = 10, T = 10, B = 24;
  const t0 = pts[0].time_us, t1 = Math.max(pts[pts.length - 1].time_us + report.step_s * 1e6, t0 + 1);
  const top = Math.max(1000, ...pts.map((p) => Math.max(p.allocated_compute_milli, p.used_compute_milli)));
  const x = (t: number) => L + ((t - t0) / (t1 - t0)) * (W - L - R);
  const y = (v: number) => T + (1 - v / top) * (H - T - B);
  const line = (value: (p: UsageSeriesPoint) => number) =>
    pts.flatMap((p) => [`${x(p.time_us).toFixed(1)},${y(value(p)).toFixed(1)}`, `${x(p.time_us + report.step_s * 1e6).toFixed(1)},${y(value(p)).toFixed(1)}`]).join(' ');
  const long = t1 - t0 > 86400e6;
  return (
    <figure class="chart" data-testid="usage-chart">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label="GPU devices allocated and used over time">
        {[0, 0.5, 1].map((f) => (
          <g key={f}>
            <line class="grid" x1={L} x2={W - R} y1={y(top * f)} y2={y(top * f)} />
            <text class="axis" x={L - 6} y={y(top * f) + 4} text-anchor="end">{milli(top * f)}</text>
          </g>
        ))}
        {[0, 1, 2, 3, 4].map((i) => (
          <text key={i} class="axis" x={x(t0 + ((t1 - t0) * i) / 4)} y={H - 6} text-anchor={i === 0 ? 'start' : i === 4 ? 'end' : 'middle'}>{when(t0 + ((t1 - t0) * i) / 4, long)}</text>
        ))}
        <polyline class="line s-core" fill="none" points={line((p) => p.allocated_compute_milli)} />
        <polyline class="line s-mem" fill="none" points={line((p) => p.used_compute_milli)} />
      </svg>
      <figcaption>
        <span class="legend"><i class="swatch s-core" />GPUs allocated</span>
        <span class="legend"><i class="swatch s-mem" />GPUs used (measured SM time)</span>
        <span class="muted"> · averages per {report.step_s >= 3600 ? `${report.step_s / 3600} h` : `${report.step_s / 60} min`}</span>
      </figcaption>
    </figure>
  );
}

export function UsagePage() {
  const { token, me, data } = useContext(AppContext);
  const [range, setRange] = useState('24h');
  const [tenant, setTenant] = useState(me.admin ? '' : me.name);
  const [report, setReport] = useState<UsageReport | null>(null);
  const [error, setError] = useState('');
  useEffect(() => {
    let live = true;
    const q = `/api/v1/usage?since=${range}&by=job${tenant ? `&tenant=${encodeURIComponent(tenant)}` : ''}`;
    call<UsageReport>(token, 'GET', q).then((r) => { if (live) { setReport(r); setError(''); } })
      .catch((e) => { if (live) setError((e as Error).message); });
    return () => { live = false; };
  }, [token, range, tenant, data.updated]);
  const tenants = me.admin ? (data.tenants ?? []).map((t) => t.name).filter((n) => n !== 'xpool-nodes') : [me.name];
  return (
    <section>
      <h2>Usage</h2>
      <div class="toolbar">
        <label>Range{' '}
          <select data-testid="usage-range" value={range} onChange={(e) => setRange((e.target as HTMLSelectElement).value)}>
            {RANGES.map(([v, label]) => <option key={v} value={v}>{label}</option>)}
          </select>
        </label>{' '}
        <label>Tenant{' '}
          <select data-testid="usage-tenant" value={tenant} disabled={!me.admin} onChange={(e) => setTenant((e.target as HTMLSelectElement).value)}>
            {me.admin && <option value="">All tenants</option>}
            {tenants.map((t) => <option key={t} value={t}>{t}</option>)}
          </select>
        </label>
      </div>
      {error && <p class="msg error" role="alert">{error}</p>}
      {!report ? <p class="muted">Loading…</p> : (
        <>
          <div class="card"><h3>Allocation vs use</h3><AllocationVsUseChart report={report} /></div>
          <div class="card" data-testid="usage-tenants">
            <h3>GPU-hours per tenant</h3>
            <table class="compact">
              <thead><tr><th>Tenant</th><th class="num">Allocated</th><th class="num">Used</th><th class="num">Used / allocated</th><th class="num">Measured</th></tr></thead>
              <tbody>
                {report.tenants.map((t) => (
                  <tr key={t.tenant}><td>{t.tenant}</td><td class="num">{milli(t.allocated_gpu_milli_hours)}</td><td class="num">{milli(t.used_gpu_milli_hours)}</td>
                    <td class="num">{percent(t.used_gpu_milli_hours, t.allocated_gpu_milli_hours)}</td><td class="num">{percent(t.measured_seconds, t.job_seconds)}</td></tr>
                ))}
                {report.tenants.length === 0 && <tr><td class="muted" colSpan={5}>Nothing ran in this range.</td></tr>}
              </tbody>
            </table>
          </div>
          <div class="card" data-testid="usage-jobs">
            <h3>GPU-hours per job</h3>
            <table class="compact">
              <thead><tr><th>Job</th><th>Tenant</th><th class="num">Allocated</th><th class="num">Used</th><th class="num">Memory used (GiB-h)</th></tr></thead>
              <tbody>
                {(report.jobs ?? []).map((j) => (
                  <tr key={j.id}><td>{j.id} {j.name}</td><td>{j.tenant}</td><td class="num">{milli(j.allocated_gpu_milli_hours)}</td>
                    <td class="num">{milli(j.used_gpu_milli_hours)}</td><td class="num">{(j.used_memory_mib_hours / 1024).toFixed(2)}</td></tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
    </section>
  );
}
