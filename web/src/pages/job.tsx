// A job: state and why it is not running, actions (open an interactive job, suspend, resume, cancel, clone;
// priority for admins), what it asks for, placement per replica and device, events, its log (pages/logs.tsx)
// and spec.
import { useContext, useEffect, useState } from 'preact/hooks';
import { ApiError, call } from '../api';
import type { Job, JobEvent } from '../api';
import { AppContext } from '../state';
import { Link } from '../nav';
import { gib, localTime, tenantColor, whyText } from '../util';
import { resourceText } from './jobs';
import { LogViewer } from './logs';

// An admin's priority form: 0..100 or a name; the server says what is wrong with anything else.
function PriorityForm({ job, onChanged }: { job: Job; onChanged: (j: Job) => void }) {
  const { token, act } = useContext(AppContext);
  const [value, setValue] = useState(String(job.priority));
  useEffect(() => setValue(String(job.priority)), [job.id, job.priority]);
  const save = (e: Event) => {
    e.preventDefault();
    const v = value.trim();
    const priority = /^\d+$/.test(v) ? Number(v) : v;
    act('Change priority', async () => onChanged(await call<Job>(token, 'PATCH', `/api/v1/jobs/${job.id}`, { priority })),
      `Job ${job.id}: priority set to ${v}`);
  };
  return (
    <form class="inline-form" onSubmit={save} data-testid="priority-form">
      <input aria-label="Priority" list="priorities" size={6} value={value} onInput={(e) => setValue((e.target as HTMLInputElement).value)} />
      <datalist id="priorities"><option value="low" /><option value="normal" /><option value="high" /></datalist>
      <button type="submit" disabled={value.trim() === String(job.priority)}>Set</button>
    </form>
  );
}

// An interactive job's task in a new tab (docs/interactive.md): a one-time link from the API, which the proxy
// answers with its session cookie. The tab is opened before the call, while the click still counts as the
// user's (popup blockers), and pointed at the link when it comes.
function OpenButton({ job }: { job: Job }) {
  const { token, act } = useContext(AppContext);
  const open = () => {
    const tab = window.open('about:blank', '_blank');
    act('Open', async () => {
      try {
        const s = await call<{ url: string }>(token, 'POST', `/api/v1/jobs/${job.id}/proxy-session`);
        const url = new URL(s.url, window.location.href).href;
        if (tab) tab.location.href = url; else window.location.href = url;
      } catch (e) {
        tab?.close();
        throw e;
      }
    });
  };
  return (
    <button class="primary" data-testid="open-interactive" onClick={open} disabled={job.state !== 'running'}
      title={job.state === 'running' ? 'Open the task (its port, through the server) in a new tab' : 'Opens while the job runs'}>Open</button>
  );
}

export function JobPage({ id }: { id: number }) {
  const { token, data, act, me } = useContext(AppContext);
  const [job, setJob] = useState<Job | null>(null);
  const [events, setEvents] = useState<JobEvent[]>([]);
  const [error, setError] = useState('');
  const [tick, setTick] = useState(0);

  // The job and its events again whenever the app's poll completes (every 3 s) or an action here changed it.
  useEffect(() => {
    let live = true;
    Promise.all([call<Job>(token, 'GET', `/api/v1/jobs/${id}`), call<{ events: JobEvent[] }>(token, 'GET', `/api/v1/jobs/${id}/events`)])
      .then(([j, e]) => { if (live) { setJob(j); setEvents(e.events); setError(''); } })
      .catch((e: ApiError) => { if (live) setError(e.status === 404 ? `Job ${id} does not exist or belongs to another tenant.` : e.message); });
    return () => { live = false; };
  }, [id, token, tick, data.updated]);

  if (error) return <section><h2>Job {id}</h2><div class="msg error" role="alert">{error}</div><p><Link href="/jobs">All jobs</Link></p></section>;
  if (!job) return <p class="muted">Loading job {id}…</p>;
  const devices = new Map<string, { node: string; index: number; model: string }>();
  for (const n of data.nodes ?? []) for (const d of n.devices) devices.set(`${n.name}/${d.uuid}`, { node: n.name, index: d.index, model: d.model });
  const finished = ['succeeded', 'failed', 'cancelled'].includes(job.state);
  const run = (what: string, path: string, done: string) => act(what, async () => {
    const after = await call<Job>(token, 'POST', `/api/v1/jobs/${id}/${path}`);
    setJob({ ...job, ...after, placement: after.placement.length ? after.placement : job.placement });
    setTick((n) => n + 1);
  }, done);
  return (
    <section data-testid="job-page">
      <p class="crumbs"><Link href="/jobs">Jobs</Link> / {id}</p>
      <div class="job-head">
        <h2>{job.name || '(unnamed)'} <span class="muted">#{job.id}</span></h2>
        <span class={`state big st-${job.state}`} data-testid="job-state">{job.state}</span>
        <div class="spacer" />
        {(job.spec as { kind?: string } | null)?.kind === 'interactive' && <OpenButton job={job} />}
        <button onClick={() => run('Suspend', 'suspend', `Job ${id}: suspend requested`)} disabled={job.state !== 'running'}
          title="Only a running job can be suspended (cancel a queued one)">Suspend</button>
        <button onClick={() => run('Resume', 'resume', `Job ${id} resumed`)} disabled={job.state !== 'suspended'}>Resume</button>
        <button class="danger" onClick={() => run('Cancel', 'cancel', `Job ${id} cancelled`)} disabled={finished}>Cancel</button>
        <Link href={`/submit?clone=${id}`} class="button" title="A new job from this job's spec">Clone</Link>
      </div>
      <div class={`why ${job.state}`} data-testid="why">{whyText(job)}</div>
      <div class="cards wide">
        <div class="card">
          <h3>Job</h3>
          <dl class="kv">
            <dt>Tenant</dt><dd><i class="swatch" style={{ background: tenantColor(job.tenant) }} />{job.tenant}</dd>
            <dt>Priority</dt><dd>{me.admin && !finished
              ? <PriorityForm job={job} onChanged={(j) => { setJob({ ...job, ...j, placement: j.placement.length ? j.placement : job.placement }); setTick((n) => n + 1); }} />
              : job.priority}</dd>
            <dt>Asks for</dt><dd>{resourceText(job)}{job.resources.cpu_milli ? ` · CPU ${job.resources.cpu_milli / 1000}` : ''}{job.resources.memory_mib ? ` · ${gib(job.resources.memory_mib)} RAM` : ''}</dd>
            <dt>Replicas</dt><dd>{job.replicas}</dd>
            <dt>Submitted</dt><dd>{localTime(job.submitted_at)}</dd>
            <dt>Updated</dt><dd>{localTime(job.updated_at)}</dd>
            {job.restart_count > 0 && <><dt>Restarts</dt><dd>{job.restart_count}</dd></>}
          </dl>
        </div>
        <div class="card" data-testid="placement">
          <h3>Placement</h3>
          {job.placement.length === 0 ? <p class="muted">Not placed.</p> : (
            <table class="compact">
              <thead><tr><th>Replica</th><th>Node</th><th>Device</th><th>Memory</th><th>Cores</th></tr></thead>
              <tbody>
                {job.placement.flatMap((p) => (p.devices.length ? p.devices : [null]).map((g, i) => {
                  const d = g ? devices.get(`${p.node}/${g.uuid}`) : undefined;
                  return (
                    <tr key={`${p.replica}-${i}`}>
                      <td>{p.replica}</td><td>{p.node}</td>
                      <td>{g ? (d ? `GPU ${d.index} ${d.model}` : g.uuid) : 'no device'}</td>
                      <td>{g ? gib(g.memory_mib) : '—'}</td><td>{g ? `${Math.round(g.compute_milli / 10)}%` : '—'}</td>
                    </tr>
                  );
                }))}
              </tbody>
            </table>
          )}
        </div>
      </div>
      <div class="card">
        <h3>Events</h3>
        <ol class="timeline" data-testid="events">
          {events.map((e) => (
            <li key={e.id}>
              <span class="when">{localTime(e.time)}</span>
              <span class={`state st-${e.to}`}>{e.from ? `${e.from} → ${e.to}` : e.to}</span>
              <span class="reason">{e.reason}</span>
            </li>
          ))}
          {events.length === 0 && <li class="muted">No events.</li>}
        </ol>
      </div>
      <LogViewer job={job} />
      <details class="card">
        <summary><h3 class="inline">Spec</h3></summary>
        <pre class="spec">{JSON.stringify(job.spec, null, 2)}</pre>
      </details>
    </section>
  );
}
