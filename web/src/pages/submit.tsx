// Submit: a YAML editor checked by the server as you type (POST /api/v1/jobs:validate: the submit's own parser and
// tenant check, errors at line and column, nothing stored), then submitted as written. `/submit?clone=N` starts
// from job N's spec.
import { useContext, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, call, sendSpec } from '../api';
import type { Job, SpecVerdict } from '../api';
import { AppContext } from '../state';
import { Link } from '../nav';
import { toYaml } from '../yaml';

const VALIDATE_MS = 300;
const LINE_PX = 18;  // .editor's line height: the gutter and the error band follow the textarea's lines

const EXAMPLE = `name: my-job
priority: normal        # 0..100, or low / normal / high
replicas: 1
resources:              # per replica
  cpu: 2
  memory: 8Gi
  gpu: 1
  gpumem: 20Gi          # per device; or gpumem-percentage: 50
  gpucores: 50          # percent of each device's compute
command: ["python3", "-c", "print('hello from xpool')"]
env:
  EPOCHS: "10"
`;

// Every field, one line each (model/job_spec.h has the full description).
const FIELDS = `name: train-resnet          # required: 1..63 of [a-z0-9-]
tenant: vision              # optional; must be yours unless you are an admin
priority: high              # 0..100 or low (10) / normal (50) / high (90)
replicas: 2                 # 1..1024, all placed together
resources:                  # per replica; at least one of cpu, memory, gpu, mig
  cpu: 4                    # "500m", 2, 1.5
  memory: 16Gi
  gpu: 1                    # devices per replica, 0..64
  gpumem: 20Gi              # per device; or gpumem-percentage: 1..100
  gpucores: 50              # per device, percent 1..100 (100 = exclusive)
  gpu-type: A100            # or a list; gpu-type-exclude: [T4]; gpu-uuid: ...
  numa-bind: true
  vendor: nvidia
  mig: 1g.10gb              # a MIG instance instead of a device or a share
command: ["python", "train.py"]   # argv list, or one string run by /bin/sh -c
workdir: /data/run1
env: {EPOCHS: "10"}
preemptible: true
checkpoint: {grace: 30, signal: SIGUSR1}
retries: 3                  # 0..10; retry-backoff: 10 (seconds, doubling)
image: docker.io/library/python:3.12`;

// The order a person writes a spec in (the server's canonical form sorts its keys).
const KEY_ORDER = ['name', 'tenant', 'priority', 'replicas', 'resources', 'command', 'workdir', 'image', 'env',
  'preemptible', 'checkpoint', 'retries', 'retry-backoff'];

// Job `job`'s spec as YAML to edit; a job of another tenant (an admin's view) keeps its tenant.
export function cloneText(job: Job, me: string): string {
  const spec = { ...(job.spec as Record<string, unknown>) };
  if (!spec.tenant && job.tenant !== me) spec.tenant = job.tenant;
  return toYaml(spec, KEY_ORDER);
}

// The character index of 1-based `line` and `column` in `text`.
function indexOf(text: string, line: number, column: number): number {
  let i = 0;
  for (let l = 1; l < line; l++) {
    const nl = text.indexOf('\n', i);
    if (nl < 0) return text.length;
    i = nl + 1;
  }
  return Math.min(text.length, i + Math.max(0, column - 1));
}

function Editor({ value, onInput, errorLine, area, onSubmit }: {
  value: string; onInput: (v: string) => void; errorLine: number; area: { current: HTMLTextAreaElement | null };
  onSubmit: () => void;
}) {
  const [scroll, setScroll] = useState(0);
  const count = value.split('\n').length;
  const onKeyDown = (e: KeyboardEvent) => {
    const el = e.target as HTMLTextAreaElement;
    if (e.key === 'Tab' && !e.shiftKey) {
      // YAML indents with spaces only: Tab inserts two.
      e.preventDefault();
      const { selectionStart: a, selectionEnd: b } = el;
      onInput(`${value.slice(0, a)}  ${value.slice(b)}`);
      requestAnimationFrame(() => { el.selectionStart = el.selectionEnd = a + 2; });
    } else if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      onSubmit();
    }
  };
  return (
    <div class="editor">
      <div class="gutter" aria-hidden="true">
        <div style={{ transform: `translateY(${-scroll}px)` }}>
          {Array.from({ length: count }, (_, i) => <div key={i} class={i + 1 === errorLine ? 'err' : ''}>{i + 1}</div>)}
        </div>
      </div>
      <div class="editor-body">
        {errorLine > 0 && <div class="err-band" style={{ top: `${8 + (errorLine - 1) * LINE_PX - scroll}px` }} />}
        <textarea ref={area} data-testid="spec-editor" aria-label="Job spec (YAML)" spellcheck={false} wrap="off"
          autocomplete="off" value={value} onKeyDown={onKeyDown}
          onInput={(e) => onInput((e.target as HTMLTextAreaElement).value)}
          onScroll={(e) => setScroll((e.target as HTMLTextAreaElement).scrollTop)} />
      </div>
    </div>
  );
}

export function SubmitPage({ cloneOf }: { cloneOf: number | null }) {
  const { token, me, navigate, act } = useContext(AppContext);
  const [text, setText] = useState(cloneOf === null ? EXAMPLE : '');
  const [loading, setLoading] = useState(cloneOf !== null);
  const [loadError, setLoadError] = useState('');
  const [verdict, setVerdict] = useState<SpecVerdict | null>(null);
  const [checked, setChecked] = useState('');  // the text `verdict` is about
  const [checkError, setCheckError] = useState('');
  const [busy, setBusy] = useState(false);
  const area = useRef<HTMLTextAreaElement | null>(null);
  const seq = useRef(0);

  useEffect(() => {
    if (cloneOf === null) return;
    setLoading(true);
    call<Job>(token, 'GET', `/api/v1/jobs/${cloneOf}`)
      .then((job) => { setText(cloneText(job, me.name)); setLoadError(''); })
      .catch((e: ApiError) => setLoadError(e.status === 404 ? `Job ${cloneOf} does not exist or belongs to another tenant.` : e.message))
      .finally(() => setLoading(false));
  }, [cloneOf, token, me.name]);

  // Checked by the server a moment after each edit; only the latest answer counts.
  useEffect(() => {
    if (loading) return undefined;
    const n = ++seq.current;
    const timer = window.setTimeout(async () => {
      try {
        const v = await sendSpec<SpecVerdict>(token, '/api/v1/jobs:validate', text);
        if (n === seq.current) { setVerdict(v); setChecked(text); setCheckError(''); }
      } catch (e) {
        if (n === seq.current) { setVerdict(null); setChecked(''); setCheckError((e as Error).message); }
      }
    }, VALIDATE_MS);
    return () => window.clearTimeout(timer);
  }, [text, token, loading]);

  const current = checked === text ? verdict : null;  // null while the latest edit is being checked
  const canSubmit = current !== null && current.valid && !busy;
  const submit = async () => {
    if (!canSubmit) return;  // an invalid or unchecked spec is never sent
    setBusy(true);
    let id = 0;
    const ok = await act('Submit', async () => {
      id = (await sendSpec<{ id: number }>(token, '/api/v1/jobs', text)).id;
    }, 'Job submitted');
    setBusy(false);
    if (ok) navigate(`/jobs/${id}`);
  };
  const goTo = (line: number, column: number) => {
    const el = area.current;
    if (!el) return;
    const i = indexOf(text, line, column);
    el.focus();
    el.setSelectionRange(i, i);
    el.scrollTop = Math.max(0, (line - 3) * LINE_PX);
  };

  const error = current && !current.valid ? current.error : undefined;
  const spec = current && current.valid ? current.spec ?? {} : null;
  return (
    <section data-testid="submit-page">
      <h2>{cloneOf === null ? 'Submit a job' : <>Clone job <Link href={`/jobs/${cloneOf}`}>#{cloneOf}</Link></>}</h2>
      <p class="muted">The server checks the spec as you type, with the same parser and tenant check as the submit;
        nothing is stored until you submit (Ctrl+Enter).</p>
      {loadError && <div class="msg error" role="alert">{loadError}</div>}
      {loading ? <p class="muted">Loading job {cloneOf}…</p> : (
        <>
          <Editor value={text} onInput={setText} errorLine={error?.line ?? 0} area={area} onSubmit={submit} />
          <div class="verdict" aria-live="polite">
            {checkError && <div class="msg error" role="alert">Could not check the spec: {checkError}</div>}
            {!checkError && !current && <div class="msg pending" data-testid="spec-checking">Checking…</div>}
            {error && (
              <div class="msg error" data-testid="spec-error">
                <button class="link" onClick={() => goTo(error.line, error.column)} data-testid="spec-error-position">
                  line {error.line}, column {error.column}</button>
                <span>{error.message}</span>
              </div>
            )}
            {spec && (
              <div class="msg info" data-testid="spec-ok">
                Valid: {String(spec.name)}, tenant {current?.tenant}, priority {String(spec.priority)}, {String(spec.replicas)} replica(s).
              </div>
            )}
          </div>
          <div class="actions">
            <button class="primary" onClick={submit} disabled={!canSubmit} data-testid="submit">{busy ? 'Submitting…' : 'Submit'}</button>
            <button onClick={() => setText(EXAMPLE)}>Reset to the example</button>
          </div>
          <details class="card">
            <summary><h3 class="inline">Fields</h3></summary>
            <pre class="spec">{FIELDS}</pre>
          </details>
        </>
      )}
    </section>
  );
}
