// Nodes: every node's devices as bars split into the slices tasks hold (memory and compute), coloured by tenant;
// a slice links to its job. Health, cordon state and the simulated marker; cordon / uncordon for admins.
import { useContext, useState } from 'preact/hooks';
import { call } from '../api';
import type { DeviceView, NodeView } from '../api';
import { AppContext } from '../state';
import { Link } from '../nav';
import { age, devicesText, gib, simulatedText, slicesByDevice, tenantColor } from '../util';
import type { Slice } from '../util';

function Bar({ kind, device, slices, onPick }: { kind: 'memory' | 'compute'; device: DeviceView; slices: Slice[]; onPick: (s: Slice | null) => void }) {
  const cap = kind === 'memory' ? device.memory_mib : device.compute_milli;
  const allocated = kind === 'memory' ? device.memory_allocated_mib : device.compute_allocated_milli;
  const size = (s: Slice) => (kind === 'memory' ? s.memory_mib : s.compute_milli);
  const shown = slices.reduce((a, s) => a + size(s), 0);
  const others = Math.max(0, allocated - shown);  // held by jobs this token cannot see
  const fmt = (v: number) => (kind === 'memory' ? gib(v) : `${Math.round(v / 10)}% of its cores`);
  const w = (v: number) => `${cap > 0 ? (100 * v) / cap : 0}%`;
  return (
    <div class="bar" data-kind={kind} title={`${kind}: ${fmt(allocated)} of ${fmt(cap)} allocated`}>
      {slices.map((s) => (
        <Link key={`${s.job.id}-${s.replica}`} href={`/jobs/${s.job.id}`} class="slice"
          title={`job ${s.job.id} ${s.job.name} (tenant ${s.job.tenant}, replica ${s.replica}): ${fmt(size(s))} ${kind}`}>
          <span data-job={s.job.id} style={{ width: w(size(s)), background: tenantColor(s.job.tenant) }} class="slice-fill"
            onMouseEnter={() => onPick(s)} onMouseLeave={() => onPick(null)}>
            {size(s) / cap > 0.12 ? `#${s.job.id}` : ''}
          </span>
        </Link>
      ))}
      {others > 0 && <span class="slice-fill others" style={{ width: w(others) }} title={`${fmt(others)} held by other tenants' jobs`} />}
    </div>
  );
}

// What a slice is, in words: shown under the device while the pointer is on the slice.
function SliceDetail({ slice, device }: { slice: Slice; device: DeviceView }) {
  const j = slice.job;
  return (
    <div class="slice-detail" data-testid="slice-detail">
      <i class="swatch" style={{ background: tenantColor(j.tenant) }} />
      <strong>#{j.id} {j.name}</strong> · tenant {j.tenant} · replica {slice.replica} · {j.state} ·{' '}
      {gib(slice.memory_mib)} of {gib(device.memory_mib)} memory · {Math.round(slice.compute_milli / 10)}% of its cores · priority {j.priority}
    </div>
  );
}

function DeviceRow({ node, device, slices }: { node: NodeView; device: DeviceView; slices: Slice[] }) {
  const [picked, setPicked] = useState<Slice | null>(null);
  return (
    <div class="device" data-testid="device" data-uuid={device.uuid}>
      <div class="device-label">
        <strong>GPU {device.index}</strong> {device.model}
        <div class="muted small">{gib(device.memory_mib)} · {device.sharers}/{device.max_sharers} sharers · NUMA {device.numa_node}
          {device.mode !== 'shared' ? ` · ${device.mode}` : ''}</div>
        {!device.healthy && <span class="badge bad">unhealthy</span>}
      </div>
      <div class="device-bars">
        <div class="bar-row"><span class="bar-name">mem</span><Bar kind="memory" device={device} slices={slices} onPick={setPicked} />
          <span class="bar-value">{gib(device.memory_allocated_mib)} / {gib(device.memory_mib)}</span></div>
        <div class="bar-row"><span class="bar-name">cores</span><Bar kind="compute" device={device} slices={slices} onPick={setPicked} />
          <span class="bar-value">{Math.round(device.compute_allocated_milli / 10)}%</span></div>
        {picked && <SliceDetail slice={picked} device={device} />}
      </div>
      <span class="sr-only">{node.name}</span>
    </div>
  );
}

export function Nodes() {
  const { data, me, token, act } = useContext(AppContext);
  if (!data.nodes || !data.jobs) return <p class="muted">Loading…</p>;
  const slices = slicesByDevice(data.jobs);
  const tenants = [...new Set([...slices.values()].flat().map((s) => s.job.tenant))].sort();
  const setCordon = (n: NodeView, cordon: boolean) =>
    act(`${cordon ? 'Cordon' : 'Uncordon'} ${n.name}`, () => call(token, 'POST', `/api/v1/nodes/${encodeURIComponent(n.name)}/${cordon ? 'cordon' : 'uncordon'}`),
      `${n.name} ${cordon ? 'cordoned: nothing new is placed there' : 'uncordoned'}`);
  return (
    <section>
      <h2>Nodes</h2>
      {(tenants.length > 0 || !me.admin) && (
        <p class="legend-row">{tenants.length > 0 && 'Tenants: '}{tenants.map((t) => <span key={t} class="legend"><i class="swatch" style={{ background: tenantColor(t) }} />{t}</span>)}
          {!me.admin && <span class="legend"><i class="swatch others" />other tenants</span>}</p>
      )}
      {data.nodes.length === 0 && <p class="muted">No nodes yet. Start an agent (<code>xpool up</code> runs one for this machine).</p>}
      {data.nodes.map((n) => (
        <div class="card node" key={n.name} data-testid="node" data-node={n.name}>
          <div class="node-head">
            <h3>{n.name}</h3>
            <span class={`badge ${n.ready ? 'ok' : 'bad'}`}>{n.ready ? 'ready' : 'not ready'}</span>
            {n.cordoned && <span class="badge warn">cordoned</span>}
            {simulatedText(n) && <span class="badge sim" title={simulatedText(n)}>simulated</span>}
            <span class="muted small">CPU {devicesText(n.cpu_allocated_milli)}/{devicesText(n.cpu_milli)} · memory {gib(n.memory_allocated_mib)}/{gib(n.memory_mib)}
              {n.last_seen_us ? ` · seen ${age(n.last_seen_us)} ago` : ''}
              {Object.keys(n.labels).length ? ` · ${Object.entries(n.labels).map(([k, v]) => `${k}=${v}`).join(', ')}` : ''}</span>
            <div class="spacer" />
            {me.admin && (n.cordoned
              ? <button onClick={() => setCordon(n, false)}>Uncordon</button>
              : <button onClick={() => setCordon(n, true)}>Cordon</button>)}
          </div>
          <div class="devices">
            {n.devices.map((d) => <DeviceRow key={d.uuid} node={n} device={d} slices={slices.get(`${n.name}/${d.uuid}`) ?? []} />)}
          </div>
        </div>
      ))}
    </section>
  );
}
