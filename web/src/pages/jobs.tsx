// Jobs: a filterable (text, tenant, state) and sortable (id, name, tenant, state, priority, age) list.
import { useContext, useState } from 'preact/hooks';
import type { Job } from '../api';
import { AppContext } from '../state';
import { Link, go } from '../nav';
import { ALL_STATES, age, tenantColor } from '../util';

type Key = 'id' | 'name' | 'tenant' | 'state' | 'priority' | 'age';

const COLUMNS: [Key, string][] = [['id', 'ID'], ['name', 'Name'], ['tenant', 'Tenant'], ['state', 'State'], ['priority', 'Priority'], ['age', 'Age']];

function compare(a: Job, b: Job, key: Key): number {
  switch (key) {
    case 'id': return a.id - b.id;
    case 'name': return a.name.localeCompare(b.name);
    case 'tenant': return a.tenant.localeCompare(b.tenant);
    case 'state': return ALL_STATES.indexOf(a.state) - ALL_STATES.indexOf(b.state);
    case 'priority': return a.priority - b.priority;
    case 'age': return b.submitted_at_us - a.submitted_at_us;
  }
}

export function Jobs() {
  const { data, me } = useContext(AppContext);
  const [text, setText] = useState('');
  const [tenant, setTenant] = useState('');
  const [state, setState] = useState('');
  const [sort, setSort] = useState<{ key: Key; desc: boolean }>({ key: 'id', desc: true });
  if (!data.jobs) return <p class="muted">Loading…</p>;
  const tenants = [...new Set(data.jobs.map((j) => j.tenant))].sort();
  const q = text.trim().toLowerCase();
  const rows = data.jobs
    .filter((j) => (!tenant || j.tenant === tenant) && (!state || j.state === state) &&
      (!q || j.name.toLowerCase().includes(q) || String(j.id) === q || j.reason.toLowerCase().includes(q)))
    .sort((a, b) => (sort.desc ? -1 : 1) * compare(a, b, sort.key) || b.id - a.id);
  const header = (key: Key, label: string) => (
    <th key={key} class={['id', 'priority', 'age'].includes(key) ? 'num' : ''} aria-sort={sort.key === key ? (sort.desc ? 'descending' : 'ascending') : 'none'}>
      <button class="th" onClick={() => setSort({ key, desc: sort.key === key ? !sort.desc : key !== 'name' && key !== 'tenant' })}>
        {label}{sort.key === key ? (sort.desc ? ' ▼' : ' ▲') : ''}
      </button>
    </th>
  );
  return (
    <section>
      <h2>Jobs {!me.admin && <span class="muted small">(tenant {me.name})</span>}</h2>
      <div class="filters">
        <input type="search" placeholder="Search name, id or reason" value={text} aria-label="Search"
          onInput={(e) => setText((e.target as HTMLInputElement).value)} />
        <select aria-label="Tenant" value={tenant} onChange={(e) => setTenant((e.target as HTMLSelectElement).value)}>
          <option value="">all tenants</option>
          {tenants.map((t) => <option key={t} value={t}>{t}</option>)}
        </select>
        <select aria-label="State" value={state} onChange={(e) => setState((e.target as HTMLSelectElement).value)}>
          <option value="">all states</option>
          {ALL_STATES.map((s) => <option key={s} value={s}>{s}</option>)}
        </select>
        <span class="muted">{rows.length} of {data.jobs.length}</span>
      </div>
      <div class="table-wrap">
        <table class="list" data-testid="jobs-table">
          <thead><tr>{COLUMNS.map(([k, l]) => header(k, l))}<th>Resources</th><th>Why / where</th></tr></thead>
          <tbody>
            {rows.map((j) => (
              <tr key={j.id} data-job={j.id} class="clickable" onClick={(e) => { if (!(e.target as HTMLElement).closest('a')) go(`/jobs/${j.id}`); }}>
                <td class="num"><Link href={`/jobs/${j.id}`}>{j.id}</Link></td>
                <td><Link href={`/jobs/${j.id}`}>{j.name || '(unnamed)'}</Link></td>
                <td><i class="swatch" style={{ background: tenantColor(j.tenant) }} />{j.tenant}</td>
                <td><span class={`state st-${j.state}`}>{j.state}</span></td>
                <td class="num">{j.priority}</td>
                <td class="num" title={j.submitted_at}>{age(j.submitted_at_us)}</td>
                <td class="small">{resourceText(j)}</td>
                <td class="small reason">{j.state === 'queued' ? j.reason || 'waiting for the next pass' : placementText(j) || j.state_reason}</td>
              </tr>
            ))}
            {rows.length === 0 && <tr><td colSpan={8} class="muted">No jobs match.</td></tr>}
          </tbody>
        </table>
      </div>
    </section>
  );
}

export function resourceText(j: Job): string {
  const r = j.resources ?? {};
  const parts: string[] = [];
  if (r.gpu) parts.push(`${r.gpu} GPU${r.gpu > 1 ? 's' : ''}`);
  if (r.gpumem_mib) parts.push(`${r.gpumem_mib >= 1024 ? `${(r.gpumem_mib / 1024).toFixed(0)} GiB` : `${r.gpumem_mib} MiB`}`);
  if (r.gpumem_percent) parts.push(`${r.gpumem_percent}% mem`);
  if (r.gpucores) parts.push(`${r.gpucores}% cores`);
  if (j.replicas > 1) parts.push(`×${j.replicas}`);
  return parts.join(' · ') || 'CPU only';
}

export function placementText(j: Job): string {
  return [...new Set(j.placement.map((p) => p.node))].join(', ');
}
