// Studio's shell: sign-in, navigation, polling, messages, theme. Pages are in pages/.
import { render } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, call, saveToken, savedToken } from './api';
import type { Job, NodeView, Tenant, UsageHistory } from './api';
import { AppContext } from './state';
import { Link, setNavigator } from './nav';
import type { Ctx, Data } from './state';
import { Overview } from './pages/overview';
import { Nodes } from './pages/nodes';
import { Jobs } from './pages/jobs';
import { JobPage } from './pages/job';
import { QueuePage } from './pages/queue';
import { UsagePage } from './pages/usage';
import { SubmitPage } from './pages/submit';
import './style.css';

const POLL_MS = 3000;
const JOB_PAGE = 200;

interface Message { kind: 'error' | 'info'; text: string; }


function useTheme(): [string, () => void] {
  const initial = (() => {
    try {
      return localStorage.getItem('xpool.theme') ?? '';
    } catch {
      return '';
    }
  })() || (matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light');
  const [theme, setTheme] = useState(initial);
  useEffect(() => {
    document.documentElement.dataset.theme = theme;
    try { localStorage.setItem('xpool.theme', theme); } catch { /* not kept */ }
  }, [theme]);
  return [theme, () => setTheme(theme === 'dark' ? 'light' : 'dark')];
}

function SignIn({ onSignedIn, message }: { onSignedIn: (token: string, me: Tenant) => void; message: string }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState(message);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    const t = token.trim();
    if (!t) { setError('Paste a token first.'); return; }
    setBusy(true);
    try {
      const me = await call<Tenant>(t, 'GET', '/api/v1/whoami');
      onSignedIn(t, me);
    } catch (err) {
      setError(err instanceof ApiError && err.status === 401 ? 'That token was not accepted.' : `Sign-in failed: ${(err as Error).message}`);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="signin">
      <form class="card" onSubmit={submit}>
        <h1><span class="logo">◧</span> xpool Studio</h1>
        <p class="muted">Sign in with an xpool API token. It is kept in this browser tab only (session storage).{' '}
          The server writes the admin token to <code>admin.token</code> in its state directory (<code>--state-dir</code>;
          {' '}<code>xpool up</code> uses <code>./var</code>) and prints that path when it starts.</p>
        <label for="token">Token</label>
        <input id="token" name="token" type="password" autocomplete="off" value={token}
          onInput={(e) => setToken((e.target as HTMLInputElement).value)} />
        {error && <div class="msg error" role="alert">{error}</div>}
        <button class="primary" type="submit" disabled={busy}>{busy ? 'Signing in…' : 'Sign in'}</button>
      </form>
    </div>
  );
}

function NotFound() {
  return <section><h2>Page not found</h2><p><Link href="/">Back to the overview</Link></p></section>;
}

function App() {
  const [path, setPath] = useState(location.pathname + location.search);
  const [token, setToken] = useState(savedToken());
  const [me, setMe] = useState<Tenant | null>(null);
  const [signInMessage, setSignInMessage] = useState('');
  const [data, setData] = useState<Data>({ nodes: null, jobs: null, history: null, tenants: null, updated: 0 });
  const [messages, setMessages] = useState<Message[]>([]);
  const [pollError, setPollError] = useState('');
  const [theme, toggleTheme] = useTheme();
  const timer = useRef<number | undefined>(undefined);

  const navigate = useCallback((p: string) => {
    if (p !== location.pathname + location.search) history.pushState(null, '', p);
    setPath(p);
    window.scrollTo(0, 0);
  }, []);
  setNavigator(navigate);
  useEffect(() => {
    const onPop = () => setPath(location.pathname + location.search);
    addEventListener('popstate', onPop);
    return () => removeEventListener('popstate', onPop);
  }, []);

  const signOut = useCallback((why = '') => {
    saveToken('');
    setToken('');
    setMe(null);
    setSignInMessage(why);
    setData({ nodes: null, jobs: null, history: null, tenants: null, updated: 0 });
  }, []);

  // Restore a session from sessionStorage.
  useEffect(() => {
    if (!token || me) return;
    call<Tenant>(token, 'GET', '/api/v1/whoami').then(setMe).catch((e: ApiError) => {
      if (e.status === 401) signOut('Your token is no longer accepted; sign in again.');
      else setPollError(e.message);
    });
  }, [token, me, signOut]);

  const polling = useRef(false);
  const poll = useCallback(async () => {
    if (!token || !me || polling.current) return;  // never two polls at once: a slow server is not piled on
    polling.current = true;
    try {
      await pollOnce();
    } finally {
      polling.current = false;
    }
  }, [token, me]);
  const pollOnce = async () => {
    if (!token || !me) return;
    const errors: string[] = [];
    const get = async <T,>(p: string): Promise<T | null> => {
      try {
        return await call<T>(token, 'GET', p);
      } catch (e) {
        if (e instanceof ApiError && e.status === 401) signOut('Your token is no longer accepted; sign in again.');
        errors.push(`${p}: ${(e as Error).message}`);
        return null;
      }
    };
    // Jobs come in pages, oldest first: up to 2000 of all jobs, plus every active job. Small pages: the server
    // compresses each answer, and that cost grows faster than the page (a 1000-job page can take seconds).
    const listJobs = async (query: string, maxPages: number): Promise<Job[] | null> => {
      const out: Job[] = [];
      let cursor = '';
      for (let i = 0; i < maxPages; i++) {
        const page = await get<{ jobs: Job[]; next_cursor?: string }>(
          `/api/v1/jobs?limit=${JOB_PAGE}${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        if (!page) return null;
        out.push(...page.jobs);
        if (!page.next_cursor) break;
        cursor = page.next_cursor;
      }
      return out;
    };
    const allJobs = async (): Promise<{ jobs: Job[] } | null> => {
      const [all, active] = await Promise.all([listJobs('', 10), listJobs('&state=queued,scheduled,running,suspending,suspended', 50)]);
      if (!all || !active) return null;
      const byId = new Map<number, Job>();
      for (const j of [...all, ...active]) byId.set(j.id, j);
      return { jobs: [...byId.values()].sort((a, b) => a.id - b.id) };
    };
    const [nodes, jobs, hist, tenants] = await Promise.all([
      get<{ nodes: NodeView[] }>('/api/v1/nodes'),
      allJobs(),
      get<UsageHistory>('/api/v1/usage/history'),
      me.admin ? get<{ tenants: Tenant[] }>('/api/v1/tenants') : get<Tenant>(`/api/v1/tenants/${encodeURIComponent(me.name)}`),
    ]);
    setData((old) => ({
      nodes: nodes?.nodes ?? old.nodes,
      jobs: jobs?.jobs ?? old.jobs,
      history: hist ?? old.history,
      tenants: tenants ? ('tenants' in tenants ? tenants.tenants : [tenants as Tenant]) : old.tenants,
      updated: errors.length ? old.updated : Date.now(),
    }));
    setPollError(errors.join(' · '));
  };

  useEffect(() => {
    if (!me) return;
    poll();
    const tick = () => { if (!document.hidden) poll(); };
    timer.current = window.setInterval(tick, POLL_MS);
    return () => window.clearInterval(timer.current);
  }, [me, poll]);

  const act = useCallback(async (what: string, fn: () => Promise<unknown>, done?: string) => {
    try {
      await fn();
      if (done) setMessages((m) => [...m.slice(-3), { kind: 'info', text: done }]);
      poll();
      return true;
    } catch (e) {
      setMessages((m) => [...m.slice(-3), { kind: 'error', text: `${what} failed: ${(e as Error).message}` }]);
      return false;
    }
  }, [poll]);

  if (!token || !me) {
    if (token && !me && !signInMessage) return <div class="signin"><p class="muted">Signing in…{pollError && <span class="msg error" role="alert">{pollError}</span>}</p></div>;
    return <SignIn message={signInMessage} onSignedIn={(t, who) => { saveToken(t); setToken(t); setMe(who); setSignInMessage(''); }} />;
  }

  const ctx: Ctx = { token, me, data, navigate, refresh: poll, act };
  const tabs: [string, string][] = [['/', 'Overview'], ['/nodes', 'Nodes'], ['/jobs', 'Jobs'], ['/queue', 'Queue & tenants'], ['/usage', 'Usage'], ['/submit', 'Submit']];
  const [pathname, search] = [path.split('?')[0], new URLSearchParams(path.split('?')[1] ?? '')];
  const section = pathname === '/' ? '/' : `/${pathname.split('/')[1]}`;
  let page;
  const jobMatch = pathname.match(/^\/jobs\/(\d+)\/?$/);
  const clone = search.get('clone');
  if (pathname === '/' || pathname === '/overview') page = <Overview />;
  else if (pathname === '/nodes') page = <Nodes />;
  else if (pathname === '/jobs') page = <Jobs />;
  else if (jobMatch) page = <JobPage id={Number(jobMatch[1])} />;
  else if (pathname === '/queue') page = <QueuePage />;
  else if (pathname === '/usage') page = <UsagePage />;
  else if (pathname === '/submit') page = <SubmitPage key={clone ?? ''} cloneOf={clone && /^\d+$/.test(clone) ? Number(clone) : null} />;
  else page = <NotFound />;

  return (
    <AppContext.Provider value={ctx}>
      <header class="top">
        <Link href="/" class="brand"><span class="logo">◧</span> xpool Studio</Link>
        <nav>
          {tabs.map(([href, label]) => <Link key={href} href={href} class={section === href ? 'active' : ''}>{label}</Link>)}
        </nav>
        <div class="spacer" />
        <span class="who" title={me.admin ? 'admin: sees every tenant' : 'sees only its own jobs'}>
          {me.name}{me.admin && <span class="badge">admin</span>}
        </span>
        <button class="ghost" onClick={toggleTheme} title="Light / dark" aria-label="Toggle light or dark theme">{theme === 'dark' ? '☀' : '☾'}</button>
        <button class="ghost" onClick={() => signOut('')}>Sign out</button>
      </header>
      <div class="messages">
        {pollError && <div class="msg error" role="alert">Could not refresh: {pollError}</div>}
        {messages.map((m, i) => (
          <div key={i} class={`msg ${m.kind}`} role={m.kind === 'error' ? 'alert' : 'status'}>
            {m.text}<button class="x" aria-label="Dismiss" onClick={() => setMessages(messages.filter((_, j) => j !== i))}>×</button>
          </div>
        ))}
      </div>
      <main>{page}</main>
      <footer class="muted">
        {data.updated ? `Updated ${new Date(data.updated).toLocaleTimeString()} · refreshes every ${POLL_MS / 1000} s` : 'Loading…'}
      </footer>
    </AppContext.Provider>
  );
}

render(<App />, document.getElementById('app')!);
