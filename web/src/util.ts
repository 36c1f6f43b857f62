// Formatting and colours shared by the pages.
import type { Job, NodeView } from './api';

export function gib(mib: number): string {
  if (mib === 0) return "0";
  if (mib >= 1024 * 1024) return `${(mib / 1024 / 1024).toFixed(1)} TiB`;
  if (mib >= 1024) return `${(mib / 1024).toFixed(mib % 1024 === 0 ? 0 : 1)} GiB`;
  return `${mib} MiB`;
}

export function pct(part: number, whole: number): string {
  return whole > 0 ? `${Math.round((100 * part) / whole)}%` : '—';
}

export function devicesText(milli: number): string {
  return (milli / 1000).toFixed(milli % 1000 === 0 ? 0 : 2);
}

export function age(us: number, nowMs: number = Date.now()): string {
  if (!us) return '—';
  const s = Math.max(0, Math.round(nowMs / 1000 - us / 1e6));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
}

export function localTime(iso: string): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

// A stable colour per tenant: hue and lightness come from the name, so a tenant keeps its colour on every page.
// FNV-1a spread by the golden ratio: names that differ by a letter land far apart on the wheel (a plain
// multiply-by-31 hash put "admin" and "nlp" 19 degrees apart).
export function tenantColor(name: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  const hue = Math.round(((h * 0.618033988749895) % 1) * 360);
  return `hsl(${hue} 65% ${(h >>> 9) & 1 ? 45 : 56}%)`;
}

// The tenant node tokens belong to (server/api.cc): not a team, so never listed as one.
export const NODE_TENANT = 'xpool-nodes';
export function isInternalTenant(name: string): boolean {
  return name === NODE_TENANT;
}

export const ACTIVE_STATES = ['queued', 'scheduled', 'running', 'suspending', 'suspended'];
export const HOLDING_STATES = ['scheduled', 'running', 'suspending'];
export const ALL_STATES = ['queued', 'scheduled', 'running', 'suspending', 'suspended', 'succeeded', 'failed', 'cancelled'];

export function holds(job: Job): boolean {
  return HOLDING_STATES.includes(job.state) && job.placement.length > 0;
}

// The queue in the order the scheduler tries it: priority (high first), then submit time, then id.
export function queueOrder(jobs: Job[]): Job[] {
  return jobs
    .filter((j) => j.state === 'queued')
    .sort((a, b) => b.priority - a.priority || a.submitted_at_us - b.submitted_at_us || a.id - b.id);
}

// Why a job is not running, in plain words.
export function whyText(job: Job): string {
  switch (job.state) {
    case 'queued':
      return job.reason
        ? `Waiting for devices: ${job.reason}.`
        : 'Waiting for the next scheduling pass (it runs on every submit, release and every second).';
    case 'scheduled':
      return 'Placed; the node agent is starting its tasks.';
    case 'suspending':
      return `Being suspended${job.state_reason ? `: ${job.state_reason}` : ''}; it keeps its devices until its tasks stop.`;
    case 'suspended':
      return `Suspended${job.state_reason ? `: ${job.state_reason}` : ''}. Resume puts it back in the queue at its original position.`;
    case 'running':
      return 'Running.';
    default:
      return `${job.state[0].toUpperCase()}${job.state.slice(1)}${job.state_reason ? `: ${job.state_reason}` : ''}.`;
  }
}

export interface Slice { job: Job; replica: number; memory_mib: number; compute_milli: number; }

// Which visible jobs hold what on each device (key: node/uuid).
export function slicesByDevice(jobs: Job[]): Map<string, Slice[]> {
  const out = new Map<string, Slice[]>();
  for (const job of jobs) {
    if (!holds(job)) continue;
    for (const p of job.placement) {
      for (const g of p.devices) {
        const key = `${p.node}/${g.uuid}`;
        const list = out.get(key) ?? [];
        list.push({ job, replica: p.replica, memory_mib: g.memory_mib, compute_milli: g.compute_milli });
        out.set(key, list);
      }
    }
  }
  return out;
}

export interface Totals {
  nodes: number; devices: number; memCap: number; memAlloc: number; coreCap: number; coreAlloc: number;
  byModel: Map<string, { count: number; vendor: string; memory_mib: number }>;
}

export function totals(nodes: NodeView[]): Totals {
  const t: Totals = { nodes: nodes.length, devices: 0, memCap: 0, memAlloc: 0, coreCap: 0, coreAlloc: 0, byModel: new Map() };
  for (const n of nodes) {
    for (const d of n.devices) {
      t.devices++;
      t.memCap += d.memory_mib;
      t.memAlloc += d.memory_allocated_mib;
      t.coreCap += d.compute_milli;
      t.coreAlloc += d.compute_allocated_milli;
      const m = t.byModel.get(d.model) ?? { count: 0, vendor: d.vendor, memory_mib: d.memory_mib };
      m.count++;
      t.byModel.set(d.model, m);
    }
  }
  return t;
}

// What a tenant's running jobs hold, in the quota's units. `devices` counts GPU compute as the quota does
// (docs/api.md): 1000 milli = 1 device, so a 30% share counts 0.3.
export function tenantUse(jobs: Job[], tenant: string): Record<string, number> {
  const use = { devices: 0, device_memory_mib: 0, device_compute_milli: 0, cpu_milli: 0, memory_mib: 0 };
  for (const j of jobs) {
    if (j.tenant !== tenant || !holds(j)) continue;
    for (const p of j.placement) {
      use.cpu_milli += p.cpu_milli;
      use.memory_mib += p.memory_mib;
      for (const g of p.devices) {
        use.device_memory_mib += g.memory_mib;
        use.device_compute_milli += g.compute_milli;
      }
    }
  }
  use.devices = use.device_compute_milli / 1000;
  return use;
}

// A node is simulated when the server says so (its jobs do not run) or when its devices are the agent's
// simulated ones (uuids "SIM-…": no NVML; jobs run as real processes on devices that are not real).
export function simulatedText(n: NodeView): string {
  if (n.simulated) return 'Simulated node: jobs placed here are marked running but do not run';
  if (n.devices.length > 0 && n.devices.every((d) => d.uuid.startsWith('SIM-'))) {
    return 'Simulated devices (no NVML): jobs run as real processes, but the devices are not real';
  }
  return '';
}
