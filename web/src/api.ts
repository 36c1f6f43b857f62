// The REST API client: every request carries the signed-in token; every error becomes an ApiError with the
// server's message (or a plain description of a network failure), never an exception the UI does not show.

export interface Quota {
  devices?: number;
  device_memory_mib?: number;
  device_compute_milli?: number;
  cpu_milli?: number;
  memory_mib?: number;
  [key: string]: number | undefined;
}
export interface Tenant { id: number; name: string; admin: boolean; quota: Quota; guaranteed?: Quota; created_at: string; }
export interface DeviceView {
  index: number; uuid: string; model: string; vendor: string; memory_mib: number; compute_milli: number;
  memory_allocated_mib: number; compute_allocated_milli: number; sharers: number; max_sharers: number;
  numa_node: number; mode: string; healthy: boolean;
}
export interface NodeView {
  name: string; labels: Record<string, string>; ready: boolean; cordoned: boolean; simulated: boolean;
  cpu_milli: number; memory_mib: number; cpu_allocated_milli: number; memory_allocated_mib: number;
  last_seen_us: number; devices: DeviceView[];
}
export interface Grant { uuid: string; memory_mib: number; compute_milli: number; }
export interface Placement { replica: number; node: string; cpu_milli: number; memory_mib: number; devices: Grant[]; }
export interface Job {
  id: number; name: string; tenant: string; state: string; priority: number; replicas: number;
  submitted_at_us: number; submitted_at: string; updated_at: string; restart_count: number; reason: string;
  state_reason: string; resources: Record<string, number>; spec: unknown; placement: Placement[];
}
export interface JobEvent { id: number; time: string; time_us: number; kind: string; reason: string; from: string | null; to: string; }
export interface UsagePoint {
  t: string; time_us: number; nodes: number; devices: number; devices_in_use: number;
  device_memory_capacity_mib: number; device_memory_allocated_mib: number;
  device_compute_capacity_milli: number; device_compute_allocated_milli: number; queued_jobs: number;
}
export interface UsageHistory { interval_s: number; capacity: number; points: UsagePoint[]; }

export class ApiError extends Error {
  constructor(public status: number, public code: string, message: string) {
    super(message);
  }
}

const TOKEN_KEY = 'xpool.token';

export function savedToken(): string {
  try {
    return sessionStorage.getItem(TOKEN_KEY) ?? '';
  } catch {
    return '';
  }
}

export function saveToken(token: string): void {
  try {
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    // Storage disabled: the token lives only in this page.
  }
}

export interface RawResponse { status: number; contentType: string; text: string; }

export async function raw(token: string, method: string, path: string, body?: string): Promise<RawResponse> {
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers: { Authorization: `Bearer ${token}`, ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}) },
      body,
      cache: 'no-store',
    });
  } catch (e) {
    throw new ApiError(0, 'UNAVAILABLE', `cannot reach the xpool server (${String(e)})`);
  }
  return { status: res.status, contentType: res.headers.get('Content-Type') ?? '', text: await res.text() };
}

export async function call<T>(token: string, method: string, path: string, body?: unknown): Promise<T> {
  const r = await raw(token, method, path, body === undefined ? undefined : JSON.stringify(body));
  let parsed: unknown = undefined;
  try {
    parsed = r.text ? JSON.parse(r.text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (r.status >= 400) {
    const err = (parsed as { error?: { code?: string; message?: string } } | undefined)?.error;
    throw new ApiError(r.status, err?.code ?? `HTTP ${r.status}`, err?.message ?? (r.text.slice(0, 200) || `HTTP ${r.status}`));
  }
  if (parsed === undefined) throw new ApiError(r.status, 'BAD_RESPONSE', `${method} ${path}: the answer is not JSON`);
  return parsed as T;
}

// A job's log tail, from GET /api/v1/jobs/{id}/logs in whichever shape the server answers (plain text, or JSON
// with the text in `data`, `text`, `log` or `lines`). null when the server has no such route.
export async function jobLog(token: string, id: number): Promise<string | null> {
  const r = await raw(token, 'GET', `/api/v1/jobs/${id}/logs`);
  if (r.status === 404) {
    let message = '';
    try {
      message = JSON.parse(r.text)?.error?.message ?? '';
    } catch {
      message = '';
    }
    // "no route": the server has no logs route. Otherwise the server holds no output for the job yet.
    if (message.startsWith('no route') || message.startsWith('method ') || message === '') return null;
    return '';
  }
  if (r.status >= 400) {
    let message = r.text;
    try {
      message = JSON.parse(r.text)?.error?.message ?? r.text;
    } catch {
      // plain text error
    }
    throw new ApiError(r.status, `HTTP ${r.status}`, message);
  }
  if (r.contentType.includes('json')) {
    try {
      const j = JSON.parse(r.text);
      if (typeof j === 'string') return j;
      for (const key of ['data', 'text', 'log', 'output']) if (typeof j?.[key] === 'string') return j[key];
      if (Array.isArray(j?.lines)) return j.lines.join('\n');
      if (Array.isArray(j?.replicas)) {
        return j.replicas.map((x: { replica?: number; data?: string; text?: string }) =>
          `--- replica ${x.replica ?? '?'} ---\n${x.data ?? x.text ?? ''}`).join('\n');
      }
      return r.text;
    } catch {
      return r.text;
    }
  }
  return r.text;
}
