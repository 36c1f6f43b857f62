// Queue and tenants: the queue in the order the scheduler tries it, with why each job is where it is and what
// it waits for; each tenant's quota use against its limits, which admins edit here.
import { useContext, useState } from 'preact/hooks';
import { call } from '../api';
import type { Job, Quota, Tenant } from '../api';
import { AppContext } from '../state';
import { Link } from '../nav';
import { age, devicesText, gib, isInternalTenant, localTime, queueOrder, tenantColor, tenantUse } from '../util';
import { Meter } from './overview';
import { resourceText } from './jobs';

function positionText(job: Job, index: number, queue: Job[]): string {
  if (index === 0) return 'first in line';
  const ahead = queue.slice(0, index);
  const higher = ahead.filter((j) => j.priority > job.priority).length;
  const same = ahead.length - higher;
  const parts: string[] = [];
  if (higher) parts.push(`${higher} with higher priority`);
  if (same) parts.push(`${same} of priority ${job.priority} submitted earlier`);
  return `behind ${parts.join(' and ')}`;
}

const DIMENSIONS: [keyof Quota & string, string, (v: number) => string][] = [
  ['devices', 'Devices', (v) => String(Math.round(v * 100) / 100)],
  ['device_memory_mib', 'GPU memory', gib],
  ['device_compute_milli', 'GPU compute', (v) => `${devicesText(v)} dev`],
  ['cpu_milli', 'CPU', (v) => `${devicesText(v)} cores`],
  ['memory_mib', 'Memory', gib],
];

// The quota fields as PATCH /api/v1/tenants/{name} takes them: its key, the label, the current limit as the form
// shows it, and what to send for what was typed (blank = unlimited).
const QUOTA_FIELDS: { key: string; from: keyof Quota & string; label: string; hint: string; show: (v: number) => string; send: (s: string) => unknown }[] = [
  { key: 'devices', from: 'devices', label: 'Devices', hint: 'e.g. 8', show: String, send: (s) => (/^\d+$/.test(s) ? Number(s) : s) },
  { key: 'device_memory', from: 'device_memory_mib', label: 'GPU memory', hint: 'e.g. 80Gi',
    show: (v) => (v % 1024 === 0 ? `${v / 1024}Gi` : `${v}Mi`), send: (s) => s },
  { key: 'device_compute_milli', from: 'device_compute_milli', label: 'GPU compute (milli-devices)', hint: 'e.g. 4000',
    show: String, send: (s) => (/^\d+$/.test(s) ? Number(s) : s) },
  { key: 'cpu', from: 'cpu_milli', label: 'CPU', hint: 'e.g. 16 or 500m', show: (v) => (v % 1000 === 0 ? String(v / 1000) : `${v}m`), send: (s) => s },
  { key: 'memory', from: 'memory_mib', label: 'Memory', hint: 'e.g. 64Gi', show: (v) => (v % 1024 === 0 ? `${v / 1024}Gi` : `${v}Mi`), send: (s) => s },
];

function QuotaForm({ tenant, onDone }: { tenant: Tenant; onDone: () => void }) {
  const { token, act } = useContext(AppContext);
  const [values, setValues] = useState<Record<string, string>>(() => Object.fromEntries(QUOTA_FIELDS.map((f) => {
    const v = tenant.quota[f.from];
    return [f.key, v === undefined ? '' : f.show(v)];
  })));
  const save = async (e: Event) => {
    e.preventDefault();
    const quota: Record<string, unknown> = {};
    for (const f of QUOTA_FIELDS) quota[f.key] = values[f.key].trim() === '' ? null : f.send(values[f.key].trim());
    const ok = await act(`Quota of ${tenant.name}`, () => call(token, 'PATCH', `/api/v1/tenants/${encodeURIComponent(tenant.name)}`, { quota }),
      `${tenant.name}: quota saved`);
    if (ok) onDone();
  };
  return (
    <form class="quota-form" onSubmit={save} data-testid="quota-form">
      {QUOTA_FIELDS.map((f) => (
        <label key={f.key}>{f.label}
          <input name={f.key} placeholder={`unlimited (${f.hint})`} value={values[f.key]}
            onInput={(e) => setValues({ ...values, [f.key]: (e.target as HTMLInputElement).value })} />
        </label>
      ))}
      <div class="actions">
        <button class="primary" type="submit">Save quota</button>
        <button type="button" onClick={onDone}>Cancel</button>
      </div>
    </form>
  );
}

export function QueuePage() {
  const { data, me } = useContext(AppContext);
  const [editing, setEditing] = useState('');
  if (!data.jobs) return <p class="muted">Loading…</p>;
  const queue = queueOrder(data.jobs);
  const held = data.jobs.filter((j) => j.state === 'suspended');
  return (
    <section>
      <h2>Queue</h2>
      <p class="muted">The scheduler tries queued jobs in this order: higher priority first, then the tenant with the smaller fair share (dominant resource), then earlier first submission (a suspended job keeps its place).
        All replicas of a job are placed together or not at all.</p>
      <div class="table-wrap">
        <table class="list" data-testid="queue-table">
          <thead><tr><th>#</th><th>Job</th><th>Tenant</th><th>Priority</th><th>Waiting</th><th>Asks for</th><th>Where and why</th></tr></thead>
          <tbody>
            {queue.map((j, i) => (
              <tr key={j.id} data-job={j.id}>
                <td class="num">{i + 1}</td>
                <td><Link href={`/jobs/${j.id}`}>#{j.id} {j.name}</Link></td>
                <td><i class="swatch" style={{ background: tenantColor(j.tenant) }} />{j.tenant}</td>
                <td class="num">{j.priority}</td>
                <td class="num" title={localTime(j.submitted_at)}>{age(j.submitted_at_us)}</td>
                <td class="small">{resourceText(j)}</td>
                <td class="small"><div>{positionText(j, i, queue)}</div>
                  <div class="reason">{j.reason ? `not placed: ${j.reason}` : 'waiting for the next scheduling pass'}</div></td>
              </tr>
            ))}
            {queue.length === 0 && <tr><td colSpan={7} class="muted">The queue is empty.</td></tr>}
          </tbody>
        </table>
      </div>
      {held.length > 0 && (
        <p class="muted">Held (suspended, not in the queue until resumed): {held.map((j) => <Link key={j.id} href={`/jobs/${j.id}`}>#{j.id} {j.name} </Link>)}</p>
      )}
      <h2>Tenants</h2>
      {!me.admin && <p class="muted">You see your own tenant only.</p>}
      <div class="cards wide">
        {(data.tenants ?? []).filter((t) => !isInternalTenant(t.name)).map((t) => {
          const use = tenantUse(data.jobs!, t.name);
          const queued = queue.filter((j) => j.tenant === t.name).length;
          const guaranteed = t.guaranteed ?? {};
          const hasGuarantee = Object.keys(guaranteed).length > 0;
          return (
            <div class="card tenant" key={t.name} data-testid="tenant" data-tenant={t.name}>
              <h3><i class="swatch" style={{ background: tenantColor(t.name) }} />{t.name} {t.admin && <span class="badge">admin</span>}
                <span class="spacer" />
                {me.admin && editing !== t.name && <button onClick={() => setEditing(t.name)}>Edit quota</button>}</h3>
              <p class="muted small">{queued} queued · created {localTime(t.created_at)}</p>
              {editing === t.name && <QuotaForm tenant={t} onDone={() => setEditing('')} />}
              <table class="compact quota">
                <thead><tr><th>Quota</th><th>In use</th><th>Guaranteed</th><th>Limit</th><th /></tr></thead>
                <tbody>
                  {DIMENSIONS.map(([key, label, fmt]) => {
                    const limit = t.quota[key];
                    const guarantee = guaranteed[key];
                    return (
                      <tr key={key}>
                        <td>{label}</td><td>{fmt(use[key] ?? 0)}</td>
                        <td>{guarantee === undefined ? '—' : fmt(guarantee)}</td>
                        <td>{limit === undefined ? 'unlimited' : fmt(limit)}</td>
                        <td class="meter-cell">{limit !== undefined && <Meter used={use[key] ?? 0} cap={limit} label={label} />}</td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
              <p class="muted small">{hasGuarantee
                ? 'Work within the guarantee may suspend other tenants\' work that runs above theirs, even at equal priority.'
                : 'No guarantee is set: this tenant\'s work waits behind equal-priority work.'}</p>
            </div>
          );
        })}
      </div>
    </section>
  );
}
