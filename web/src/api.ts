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

// `contentType`: the body's type (JSON unless said otherwise; a job spec goes as YAML).
export async function raw(token: string, method: string, path: string, body?: string,
  contentType = 'application/json'): Promise<RawResponse> {
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers: { Authorization: `Bearer ${token}`, ...(body !== undefined ? { 'Content-Type': contentType } : {}) },
      body,
      cache: 'no-store',
    });
  } catch (e) {
    throw new ApiError(0, 'UNAVAILABLE', `cannot reach the xpool server (${String(e)})`);
  }
  return { status: res.status, contentType: res.headers.get('Content-Type') ?? '', text: await res.text() };
}

function parsed<T>(method: string, path: string, r: RawResponse): T {
  let value: unknown = undefined;
  try {
    value = r.text ? JSON.parse(r.text) : undefined;
  } catch {
    value = undefined;
  }
  if (r.status >= 400) {
    const err = (value as { error?: { code?: string; message?: string } } | undefined)?.error;
    throw new ApiError(r.status, err?.code ?? `HTTP ${r.status}`, err?.message ?? (r.text.slice(0, 200) || `HTTP ${r.status}`));
  }
  if (value === undefined) throw new ApiError(r.status, 'BAD_RESPONSE', `${method} ${path}: the answer is not JSON`);
  return value as T;
}

export async function call<T>(token: string, method: string, path: string, body?: unknown): Promise<T> {
  return parsed<T>(method, path, await raw(token, method, path, body === undefined ? undefined : JSON.stringify(body)));
}

// A job spec (YAML or JSON text) sent as written: to submit it, or to have it checked (POST /api/v1/jobs:validate:
// the submit's parser and tenant check, nothing stored).
export async function sendSpec<T>(token: string, path: string, text: string): Promise<T> {
  return parsed<T>('POST', path, await raw(token, 'POST', path, text, 'application/yaml'));
}

export interface SpecVerdict {
  valid: boolean;
  tenant?: string;
  spec?: Record<string, unknown>;
  error?: { code: string; message: string; line: number; column: number };
}

// One read of GET /api/v1/jobs/{id}/logs: `data` is the bytes [offset, next_offset) of the replica's output;
// `first_offset` the oldest the server still holds; `done` once the job ended and all of it was read.
export interface LogChunk {
  data: string; offset: number; first_offset: number; next_offset: number; done: boolean; state: string; task_id: string;
}

// `offset` undefined: the last `limit` bytes held (a tail).
export async function readLog(token: string, id: number, replica: number, offset: number | undefined, limit: number): Promise<LogChunk> {
  const q = `replica=${replica}&limit=${limit}${offset === undefined ? '' : `&offset=${offset}`}`;
  return call<LogChunk>(token, 'GET', `/api/v1/jobs/${id}/logs?${q}`);
}
