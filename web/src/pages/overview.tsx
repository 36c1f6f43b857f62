// Overview: cluster totals, devices by model, allocation vs capacity, jobs by state, queue per tenant, and the
// allocation chart from GET /api/v1/usage/history.
import { useContext } from 'preact/hooks';
import { AppContext } from '../state';
import { UsageChart } from '../chart';
import { Link } from '../nav';
import { ALL_STATES, devicesText, gib, pct, simulatedText, totals } from '../util';

export function Meter({ used, cap, label }: { used: number; cap: number; label: string }) {
  const p = cap > 0 ? Math.min(100, (100 * used) / cap) : 0;
  return (
    <div class="meter" title={label}>
      <div class="meter-fill" style={{ width: `${p}%` }} />
    </div>
  );
}

export function Overview() {
  const { data, me } = useContext(AppContext);
  if (!data.nodes || !data.jobs) return <p class="muted">Loading…</p>;
  const t = totals(data.nodes);
  const byState = new Map<string, number>();
  for (const j of data.jobs) byState.set(j.state, (byState.get(j.state) ?? 0) + 1);
  const queuePerTenant = new Map<string, number>();
  for (const j of data.jobs) if (j.state === 'queued') queuePerTenant.set(j.tenant, (queuePerTenant.get(j.tenant) ?? 0) + 1);
  const ready = data.nodes.filter((n) => n.ready).length;
  const cordoned = data.nodes.filter((n) => n.cordoned).length;
  const simulated = data.nodes.filter((n) => simulatedText(n)).length;
  return (
    <section>
      <h2>Overview</h2>
      <div class="cards">
        <div class="card stat" data-testid="stat-nodes">
          <div class="label">Nodes</div>
          <div class="value">{t.nodes}</div>
          <div class="muted">{ready} ready{cordoned ? ` · ${cordoned} cordoned` : ''}{simulated ? ` · ${simulated} simulated` : ''}</div>
        </div>
        <div class="card stat" data-testid="stat-devices">
          <div class="label">Devices</div>
          <div class="value">{t.devices}</div>
          <ul class="plain">
            {[...t.byModel.entries()].map(([model, m]) => <li key={model}>{m.count} × {model} <span class="muted">({m.vendor}, {gib(m.memory_mib)})</span></li>)}
          </ul>
        </div>
        <div class="card stat" data-testid="stat-memory">
          <div class="label">GPU memory allocated</div>
          <div class="value">{pct(t.memAlloc, t.memCap)}</div>
          <Meter used={t.memAlloc} cap={t.memCap} label="memory" />
          <div class="muted">{gib(t.memAlloc)} of {gib(t.memCap)}</div>
        </div>
        <div class="card stat" data-testid="stat-compute">
          <div class="label">GPU compute allocated</div>
          <div class="value">{pct(t.coreAlloc, t.coreCap)}</div>
          <Meter used={t.coreAlloc} cap={t.coreCap} label="compute" />
          <div class="muted">{devicesText(t.coreAlloc)} of {devicesText(t.coreCap)} devices</div>
        </div>
      </div>
      <div class="cards">
        <div class="card" data-testid="jobs-by-state">
          <h3>Jobs by state {me.admin ? '' : <span class="muted">(yours)</span>}</h3>
          <table class="compact">
            <tbody>
              {ALL_STATES.filter((s) => byState.get(s)).map((s) => (
                <tr key={s}><td><span class={`state st-${s}`}>{s}</span></td><td class="num">{byState.get(s)}</td></tr>
              ))}
              {data.jobs.length === 0 && <tr><td class="muted">No jobs yet.</td></tr>}
            </tbody>
          </table>
        </div>
        <div class="card" data-testid="queue-per-tenant">
          <h3>Queue per tenant</h3>
          {queuePerTenant.size === 0 ? <p class="muted">Nothing is waiting.</p> : (
            <table class="compact"><tbody>
              {[...queuePerTenant.entries()].sort((a, b) => b[1] - a[1]).map(([tenant, n]) => (
                <tr key={tenant}><td>{tenant}</td><td class="num">{n}</td></tr>
              ))}
            </tbody></table>
          )}
          <p><Link href="/queue">Queue order and reasons →</Link></p>
        </div>
      </div>
      <div class="card">
        <h3>Allocation over time</h3>
        {data.history ? <UsageChart points={[...data.history.points, {
          t: '', time_us: Date.now() * 1000, nodes: t.nodes, devices: t.devices,
          devices_in_use: data.nodes.reduce((a, n) => a + n.devices.filter((d) => d.sharers > 0).length, 0),
          device_memory_capacity_mib: t.memCap, device_memory_allocated_mib: t.memAlloc,
          device_compute_capacity_milli: t.coreCap, device_compute_allocated_milli: t.coreAlloc,
          queued_jobs: data.jobs.filter((j) => j.state === 'queued').length }]} intervalS={data.history.interval_s} /> : <p class="muted">No history from the server.</p>}
      </div>
    </section>
  );
}
