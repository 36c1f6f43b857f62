// The job page's log viewer: a replica's output from GET /api/v1/jobs/{id}/logs, tailed from its end and followed
// (only the new bytes each time), scrolled to the end unless the reader scrolled up, searchable, downloadable in
// full. ANSI escapes are stripped and carriage-return progress lines keep only their last state.
import { useContext, useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { ApiError, readLog } from '../api';
import type { Job } from '../api';
import { AppContext } from '../state';

const TAIL_BYTES = 64 * 1024;       // the first read: this much of the end
const CHUNK_BYTES = 256 * 1024;     // each following read
const FOLLOW_MS = 1500;
const KEEP_CHARS = 2 * 1024 * 1024; // the view keeps this much; Download fetches everything the server holds
const DOWNLOAD_MAX_BYTES = 256 * 1024 * 1024;

// CSI (colours, cursor moves), OSC (titles, links) and two-byte escapes.
const ANSI = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]/g;

// `carry` + `chunk` without escapes, and what to carry into the next chunk: an escape cut at the chunk's end.
export function stripAnsi(carry: string, chunk: string): [string, string] {
  let text = (carry + chunk).replace(ANSI, '');
  const esc = text.lastIndexOf('\x1b');
  let next = '';
  if (esc >= 0 && text.length - esc < 64) {
    next = text.slice(esc);
    text = text.slice(0, esc);
  }
  return [text.replace(/\x1b/g, ''), next];
}

// A line rewritten with carriage returns (progress bars) keeps what follows its last CR; a CR at the very end
// waits for the next chunk (it may be half of a CRLF).
function collapseReturns(text: string): string {
  return text.replace(/\r\n/g, '\n').replace(/[^\n]*\r(?=[^\n])/g, '');
}

interface View { first: number; start: number; next: number; done: boolean; trimmed: boolean; loaded: boolean; }
const EMPTY: View = { first: 0, start: 0, next: 0, done: false, trimmed: false, loaded: false };

function Highlighted({ text, query, current }: { text: string; query: string; current: number }) {
  if (!query) return <>{text}</>;
  const parts = [];
  const lower = text.toLowerCase();
  const q = query.toLowerCase();
  let at = 0, n = 0;
  for (let i = lower.indexOf(q); i >= 0; i = lower.indexOf(q, i + q.length)) {
    parts.push(text.slice(at, i));
    parts.push(<mark key={n} class={n === current ? 'current' : ''}>{text.slice(i, i + q.length)}</mark>);
    at = i + q.length;
    n++;
  }
  parts.push(text.slice(at));
  return <>{parts}</>;
}

function countOf(text: string, query: string): number {
  if (!query) return 0;
  const lower = text.toLowerCase(), q = query.toLowerCase();
  let n = 0;
  for (let i = lower.indexOf(q); i >= 0; i = lower.indexOf(q, i + q.length)) n++;
  return n;
}

interface Followed {
  text: string; view: View; error: string; setError: (e: string) => void; loadEarlier: () => Promise<void>;
}

// Reads replica `replica` of job `id`: its tail, then (while `follow`) every new byte until the log is complete.
function useFollowedLog(token: string, id: number, replica: number, follow: boolean): Followed {
  const [text, setText] = useState('');
  const [view, setView] = useState<View>(EMPTY);
  const [error, setError] = useState('');
  const carry = useRef('');
  const buffer = useRef('');        // what `text` shows, kept here so a read appends to the latest
  const pos = useRef<View>(EMPTY);  // the latest view, for the polling loop

  // Switching replica starts over from the new replica's tail.
  useEffect(() => {
    pos.current = EMPTY;
    carry.current = '';
    buffer.current = '';
    setText('');
    setView(EMPTY);
    setError('');
  }, [id, replica]);

  useEffect(() => {
    if (!follow && pos.current.loaded) return undefined;
    let live = true;
    let timer: number | undefined;
    const tick = async () => {
      let again = follow;
      let soon = false;
      try {
        const was = pos.current;
        const c = await readLog(token, id, replica, was.loaded ? was.next : undefined, was.loaded ? CHUNK_BYTES : TAIL_BYTES);
        if (!live) return;
        const [clean, rest] = stripAnsi(carry.current, c.data);
        carry.current = rest;
        const gap = was.loaded && c.offset > was.next ? `\n[… ${c.offset - was.next} bytes no longer held by the server …]\n` : '';
        let trimmed = was.trimmed;
        let all = collapseReturns((was.loaded ? buffer.current : '') + gap + clean);
        if (all.length > KEEP_CHARS) {
          const cut = all.indexOf('\n', all.length - KEEP_CHARS);
          all = all.slice(cut >= 0 ? cut + 1 : all.length - KEEP_CHARS);
          trimmed = true;
        }
        buffer.current = all;
        setText(all);
        const next: View = { first: c.first_offset, start: was.loaded ? was.start : c.offset, next: c.next_offset, done: c.done,
          trimmed, loaded: true };
        pos.current = next;
        setView(next);
        setError('');
        soon = c.next_offset - c.offset >= CHUNK_BYTES;  // more is waiting: read on at once
        again = follow && !c.done;
      } catch (e) {
        if (!live) return;
        setError(e instanceof ApiError && e.status === 404 ? `no log: ${e.message}` : (e as Error).message);
      }
      if (live && again) timer = window.setTimeout(tick, soon ? 0 : FOLLOW_MS);
    };
    tick();
    return () => { live = false; window.clearTimeout(timer); };
  }, [id, replica, follow, token]);

  const loadEarlier = async () => {
    const from = Math.max(pos.current.first, pos.current.start - TAIL_BYTES);
    try {
      const c = await readLog(token, id, replica, from, pos.current.start - from);
      buffer.current = collapseReturns(stripAnsi('', c.data)[0] + buffer.current);
      setText(buffer.current);
      pos.current = { ...pos.current, start: c.offset };
      setView(pos.current);
    } catch (e) {
      setError((e as Error).message);
    }
  };
  return { text, view, error, setError, loadEarlier };
}

// Saves everything the server holds of the replica's output, from `first`, as written.
async function downloadLog(token: string, id: number, replica: number, first: number): Promise<void> {
  const parts: string[] = [];
  let offset = first, bytes = 0;
  for (;;) {
    const c = await readLog(token, id, replica, offset, 1 << 20);
    if (!c.data || c.next_offset <= offset) break;
    parts.push(c.data);
    bytes += c.next_offset - c.offset;
    offset = c.next_offset;
    if (bytes >= DOWNLOAD_MAX_BYTES) break;
  }
  const url = URL.createObjectURL(new Blob(parts, { type: 'text/plain' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = `job-${id}-replica-${replica}.log`;
  document.body.appendChild(a);
  a.click();
  a.remove();
  window.setTimeout(() => URL.revokeObjectURL(url), 10000);
}

export function LogViewer({ job }: { job: Job }) {
  const { token } = useContext(AppContext);
  const [replica, setReplica] = useState(0);
  const [follow, setFollow] = useState(true);
  const { text, view, error, setError, loadEarlier } = useFollowedLog(token, job.id, replica, follow);
  const [query, setQuery] = useState('');
  const [current, setCurrent] = useState(0);
  const [atEnd, setAtEnd] = useState(true);
  const [downloading, setDownloading] = useState(false);
  const pre = useRef<HTMLPreElement>(null);
  const stick = useRef(true);
  useEffect(() => { stick.current = true; setAtEnd(true); }, [job.id, replica]);

  // Scrolled to the end after new output unless the reader scrolled up.
  useLayoutEffect(() => {
    const el = pre.current;
    if (el && stick.current && !query) el.scrollTop = el.scrollHeight;
  }, [text, query]);

  const matches = countOf(text, query);
  useLayoutEffect(() => {
    const el = pre.current;
    const mark = el?.querySelector('mark.current') as HTMLElement | null;
    if (el && mark) el.scrollTop = Math.max(0, mark.offsetTop - el.clientHeight / 2);
  }, [current, query]);

  const onScroll = () => {
    const el = pre.current;
    if (!el) return;
    stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
    setAtEnd(stick.current);
  };
  const toEnd = () => {
    const el = pre.current;
    if (el) el.scrollTop = el.scrollHeight;
    stick.current = true;
    setAtEnd(true);
  };
  const download = async () => {
    setDownloading(true);
    try {
      await downloadLog(token, job.id, replica, view.first);
    } catch (e) {
      setError(`download: ${(e as Error).message}`);
    } finally {
      setDownloading(false);
    }
  };

  const status = !view.loaded ? 'loading…' : view.done ? 'complete' : follow ? 'following' : 'paused';
  return (
    <div class="card" data-testid="logs">
      <div class="log-head">
        <h3>Log</h3>
        {job.replicas > 1 ? (
          <select aria-label="Replica" value={replica} onChange={(e) => setReplica(Number((e.target as HTMLSelectElement).value))}>
            {Array.from({ length: job.replicas }, (_, i) => <option key={i} value={i}>replica {i}</option>)}
          </select>
        ) : <span class="muted small">replica 0</span>}
        <label class="check"><input type="checkbox" checked={follow} aria-label="Follow"
          onChange={(e) => setFollow((e.target as HTMLInputElement).checked)} /> follow</label>
        <span class="muted small" data-testid="log-status">{status}</span>
        <div class="spacer" />
        <input type="search" placeholder="Search the log" aria-label="Search the log" value={query}
          onInput={(e) => { setQuery((e.target as HTMLInputElement).value); setCurrent(0); }}
          onKeyDown={(e) => { if (e.key === 'Enter' && matches) setCurrent((current + (e.shiftKey ? matches - 1 : 1)) % matches); }} />
        {query && <span class="muted small" data-testid="log-matches">{matches ? `${current + 1} of ${matches}` : 'no match'}</span>}
        <button onClick={download} disabled={downloading || !view.loaded}>{downloading ? 'Downloading…' : 'Download'}</button>
      </div>
      {error && <div class="msg error" role="alert">Log: {error}</div>}
      {view.loaded && view.start > view.first && !view.trimmed && (
        <button class="link" onClick={loadEarlier}>Load earlier output ({Math.round((view.start - view.first) / 1024)} KiB before this)</button>
      )}
      {view.trimmed && <p class="muted small">Earlier output was trimmed from this view; Download has all the server holds.</p>}
      <div class="log-wrap">
        <pre class="log" data-testid="log" ref={pre} onScroll={onScroll}>
          {view.loaded ? (text ? <Highlighted text={text} query={query} current={current} /> : (view.done ? '(no output)' : '(no output yet)')) : 'Loading…'}
        </pre>
        {!atEnd && <button class="to-end" onClick={toEnd}>↓ Latest</button>}
      </div>
    </div>
  );
}
