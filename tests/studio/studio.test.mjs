// Studio end to end in a real browser: a real `xpool up` (simulated 4xA100-80GB node, port 0) and Debian's
// Chromium driven by playwright-core. Signs in, sees the 4 devices, submits a job through the API and watches
// it appear as a slice on its device, opens its page, reads its log, cancels it and sees it leave the device; a
// tenant's token does not show another tenant's jobs. Then the workbench (workbench() below): submit from the
// editor, the log viewer, clone, suspend/resume, priority and quota edits. An interactive job (docs/interactive.md):
// Open shows its task — tests/e2e/interactive/echo_task.py — in a new tab, its WebSocket echo included. Saves a screenshot of each page in
// XPOOL_STUDIO_ARTIFACTS. Exit 0 = pass, 1 = fail, 77 = skipped (no Chromium).
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

const env = process.env;
const bin = env.XPOOL_BIN;
const webDir = env.XPOOL_WEB_DIR;
const nodeModules = env.XPOOL_NODE_MODULES;
const artifacts = env.XPOOL_STUDIO_ARTIFACTS || path.join(tmpdir(), 'studio-artifacts');
const chromium = env.XPOOL_CHROMIUM && !env.XPOOL_CHROMIUM.endsWith('NOTFOUND') ? env.XPOOL_CHROMIUM : '/usr/bin/chromium';

function skip(why) {
  console.log(`SKIP: ${why}`);
  process.exit(77);
}
if (!existsSync(chromium)) skip('no Chromium (Debian package chromium; make deps installs it)');
if (!bin || !existsSync(bin)) throw new Error(`XPOOL_BIN=${bin} does not exist`);
if (!existsSync(path.join(webDir ?? '', 'index.html'))) throw new Error(`Studio is not built in ${webDir}`);
const require = createRequire(path.join(nodeModules, 'noop.js'));
const { chromium: pw } = require('playwright-core');

const started = Date.now();
const step = (what) => console.log(`[${((Date.now() - started) / 1000).toFixed(1)}s] ${what}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const dir = mkdtempSync(path.join(tmpdir(), 'xpool-studio-e2e-'));
// Run as root, `xpool up` runs tasks as their tenant's uid with their directories next to its state dir: they must
// be able to reach them (mkdtemp makes the directory 0700).
chmodSync(dir, 0o755);
mkdirSync(artifacts, { recursive: true });

let server;
let serverLog = '';
let browser;

async function startServer() {
  server = spawn(bin, ['up', '--listen', '127.0.0.1:0', '--state-dir', path.join(dir, 'var'), '--simulate', '4xA100-80GB',
    '--node-name', 'studio-node', '--web-dir', webDir], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  server.stdout.on('data', (d) => { serverLog += d; });
  server.stderr.on('data', (d) => { serverLog += d; });
  for (let i = 0; i < 300; i++) {
    const m = serverLog.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
    if (m) return `http://127.0.0.1:${m[1]}`;
    if (server.exitCode !== null) break;
    await sleep(100);
  }
  throw new Error(`xpool up did not start:\n${serverLog}`);
}

async function api(base, token, method, p, body) {
  const res = await fetch(base + p, {
    method,
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { json = null; }
  return { status: res.status, json, text };
}

async function must(base, token, method, p, body) {
  const r = await api(base, token, method, p, body);
  if (r.status >= 300) throw new Error(`${method} ${p} -> ${r.status} ${r.text}`);
  return r.json;
}

// Polls `cond` (async) until it holds, for up to `ms`.
async function until(cond, what, ms = 10000) {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await sleep(200);
  }
  step(`ok: ${what}`);
}

function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
  step(`ok: ${what}`);
}

async function shot(page, name) {
  const file = path.join(artifacts, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  step(`screenshot ${file}`);
}

// A TCP port free on 127.0.0.1 now.
function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

// An interactive job running the echo task (an HTML page whose script echoes a message over a WebSocket): its
// page's Open button shows the task in a new tab through the proxy; another tenant gets 404 there.
async function interactive(base, tpage, vision, audio) {
  const python = '/usr/bin/python3';
  if (!existsSync(python)) { step(`skipped the interactive job: no ${python}`); return; }
  const echo = path.join(dir, 'echo_task.py');
  copyFileSync(new URL('../e2e/interactive/echo_task.py', import.meta.url), echo);
  chmodSync(echo, 0o755);
  const port = await freePort();
  const id = (await must(base, vision, 'POST', '/api/v1/jobs', {
    name: 'notebook', kind: 'interactive', interactive: { port, 'idle-timeout': 0 }, resources: { cpu: 1 },
    command: [python, echo] })).id;
  await until(async () => (await api(base, vision, 'GET', `/api/v1/jobs/${id}/proxy/`)).status === 200,
    'the interactive task answers through the proxy', 30000);
  check((await api(base, audio, 'GET', `/api/v1/jobs/${id}/proxy/`)).status === 404, 'another tenant gets 404 from the proxy');
  await tpage.goto(`${base}/jobs/${id}`);
  await tpage.waitForSelector('[data-testid=open-interactive]:not([disabled])');
  const [tab] = await Promise.all([tpage.context().waitForEvent('page'), tpage.click('[data-testid=open-interactive]')]);
  await tab.waitForSelector('#title:has-text("xpool echo task")', { timeout: 15000 });
  const url = new URL(tab.url());
  check(url.pathname === `/api/v1/jobs/${id}/proxy/` && !url.search.includes('xpool-session'),
    `Open shows the task at its proxy path, the one-time code gone: ${tab.url()}`);
  await tab.waitForSelector('#ws:has-text("echo: hello from the page")', { timeout: 15000 });
  check(true, 'the page\'s WebSocket echoes through the proxy');
  await shot(tab, '13-interactive-open');
  await tab.close();
  await must(base, vision, 'POST', `/api/v1/jobs/${id}/cancel`);
}

async function signIn(page, base, token) {
  await page.goto(base + '/');
  await page.fill('#token', token);
  await page.click('button[type=submit]');
  await page.waitForSelector('header.top', { timeout: 10000 });
}

async function main() {
  const base = await startServer();
  step(`xpool up at ${base}`);
  let admin = '';
  for (let i = 0; i < 100 && !admin; i++) {
    const f = path.join(dir, 'var', 'admin.token');
    if (existsSync(f)) admin = readFileSync(f, 'utf8').trim();
    else await sleep(100);
  }
  for (let i = 0; i < 100; i++) {
    const n = await api(base, admin, 'GET', '/api/v1/nodes');
    if (n.json?.nodes?.length === 1) break;
    await sleep(100);
  }
  // The Studio routes never shadow the API, and UI paths fall back to index.html.
  check((await api(base, admin, 'GET', '/api/v1/nope')).status === 404, 'an unknown /api path is a JSON 404, not the UI');
  const spa = await fetch(`${base}/jobs/123`);
  check(spa.status === 200 && spa.headers.get('content-type').startsWith('text/html'), 'UI paths are served index.html');
  const health = await fetch(`${base}/healthz`);
  check((await health.text()) === 'ok\n', '/healthz is not shadowed');

  await must(base, admin, 'POST', '/api/v1/tenants', { name: 'vision' });
  await must(base, admin, 'POST', '/api/v1/tenants', { name: 'audio', quota: { devices: 2, device_memory: '100Gi' } });
  const vision = (await must(base, admin, 'POST', '/api/v1/tenants/vision/tokens', { label: 'studio test' })).token;
  const audio = (await must(base, admin, 'POST', '/api/v1/tenants/audio/tokens', { label: 'studio test' })).token;
  const audioJob = (await must(base, audio, 'POST', '/api/v1/jobs', {
    name: 'audio-train', resources: { gpu: 1, 'gpumem-percentage': 25, gpucores: 30 }, command: 'sleep 300' })).id;
  const neverFits = (await must(base, audio, 'POST', '/api/v1/jobs', {
    name: 'too-big', resources: { gpu: 8 }, command: 'sleep 1' })).id;

  browser = await pw.launch({
    executablePath: chromium,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, colorScheme: 'light' });
  const page = await context.newPage();
  const foreign = [];
  const pageErrors = [];
  page.on('request', (r) => { if (!r.url().startsWith(base) && !r.url().startsWith('data:')) foreign.push(r.url()); });
  page.on('pageerror', (e) => pageErrors.push(String(e)));

  // A wrong token is refused with a message, not a blank page.
  await page.goto(base + '/');
  await page.fill('#token', 'not-a-token');
  await page.click('button[type=submit]');
  await page.waitForSelector('.signin .msg.error');
  check((await page.textContent('.signin .msg.error')).includes('not accepted'), 'a bad token is refused with a message');
  const signinText = await page.textContent('.signin p');
  check(signinText.includes('(session storage). The server') && signinText.includes('state directory'),
    `the sign-in text names the state directory: ${signinText}`);
  await shot(page, '00-signin');

  await signIn(page, base, admin);
  await page.waitForSelector('[data-testid=stat-devices] .value');
  check((await page.textContent('[data-testid=stat-devices] .value')).trim() === '4', 'the overview counts 4 devices');
  check((await page.textContent('[data-testid=stat-devices]')).includes('A100'), 'devices by model');

  await page.click('nav >> text=Nodes');
  await page.waitForSelector('[data-testid=device]');
  check((await page.locator('[data-testid=device]').count()) === 4, 'the nodes page shows 4 devices');
  check((await page.textContent('[data-testid=node]')).includes('simulated'), 'the node is marked simulated');

  // Submit through the API; the job appears as a slice on its device.
  const job = (await must(base, vision, 'POST', '/api/v1/jobs', {
    name: 'studio-e2e', resources: { gpu: 1, 'gpumem-percentage': 50, gpucores: 40 },
    command: 'echo hello-from-studio-e2e; sleep 300' })).id;
  step(`submitted job ${job}`);
  const slice = page.locator(`[data-kind=memory] [data-job="${job}"]`);
  await slice.waitFor({ timeout: 15000 });
  const width = await slice.evaluate((el) => el.style.width);
  check(width === '50%', `job ${job} is a 50% memory slice on its device (width ${width})`);
  check(await page.locator(`[data-kind=memory] [data-job="${audioJob}"]`).count() === 1, 'the admin sees the other tenant\'s slice');
  await shot(page, '02-nodes');

  // Overview again, now with allocation.
  await page.click('nav >> text=Overview');
  await page.waitForSelector('.chart svg, .chart p');
  await shot(page, '01-overview');

  await page.click('nav >> text=Jobs');
  await page.waitForSelector(`[data-testid=jobs-table] tr[data-job="${job}"]`);
  check(await page.locator('[data-testid=jobs-table] tbody tr[data-job]').count() === 3, 'the admin sees all 3 jobs');
  await page.selectOption('select[aria-label=Tenant]', 'audio');
  check(await page.locator('[data-testid=jobs-table] tbody tr[data-job]').count() === 2, 'the tenant filter leaves audio\'s 2 jobs');
  await page.selectOption('select[aria-label=Tenant]', '');
  await shot(page, '03-jobs');

  await page.click('nav >> text=Queue');
  await page.waitForSelector(`[data-testid=queue-table] tr[data-job="${neverFits}"]`);
  const queueRow = await page.textContent(`[data-testid=queue-table] tr[data-job="${neverFits}"]`);
  check(queueRow.includes('first in line'), `the never-fitting job is first in the queue: ${queueRow}`);
  check(await page.locator('[data-testid=tenant]').count() === 3, 'the admin sees 3 tenants with quotas');
  await shot(page, '04-queue');

  // Open the job from its slice.
  await page.click('nav >> text=Nodes');
  await page.locator(`[data-kind=memory] [data-job="${job}"]`).click();
  await page.waitForSelector('[data-testid=job-page]');
  check(page.url().endsWith(`/jobs/${job}`), 'clicking the slice opens the job page');
  await page.waitForFunction(() => document.querySelector('[data-testid=job-state]')?.textContent === 'running', null, { timeout: 15000 });
  check((await page.textContent('[data-testid=placement]')).includes('A100'), 'the placement names its device');
  await page.waitForFunction(() => document.querySelector('[data-testid=log]')?.textContent.includes('hello-from-studio-e2e'), null, { timeout: 20000 });
  step('ok: the job page shows the job\'s output');
  await shot(page, '05-job');

  // Cancel it from its page; it leaves the device.
  await page.click('button.danger:has-text("Cancel")');
  await page.waitForFunction(() => document.querySelector('[data-testid=job-state]')?.textContent === 'cancelled', null, { timeout: 10000 });
  // The state comes from the cancel's answer at once; the timeline follows with the page's next fetch.
  await page.waitForFunction(() => document.querySelector('[data-testid=events]')?.textContent.includes('cancelled'), null, { timeout: 10000 });
  step('ok: the events timeline shows the cancel');
  await shot(page, '06-job-cancelled');
  await page.click('nav >> text=Nodes');
  await page.waitForSelector('[data-testid=device]');
  await page.waitForFunction((id) => !document.querySelector(`[data-kind=memory] [data-job="${id}"]`), job, { timeout: 10000 });
  step(`ok: job ${job} left its device`);

  // Dark theme.
  await page.click('button[aria-label="Toggle light or dark theme"]');
  await page.click('nav >> text=Overview');
  await page.waitForSelector('[data-testid=stat-devices]');
  check(await page.evaluate(() => document.documentElement.dataset.theme) === 'dark', 'dark theme');
  await shot(page, '07-overview-dark');

  // A tenant sees only its own jobs.
  const tctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const tpage = await tctx.newPage();
  tpage.on('request', (r) => { if (!r.url().startsWith(base) && !r.url().startsWith('data:')) foreign.push(r.url()); });
  tpage.on('pageerror', (e) => pageErrors.push(String(e)));
  await signIn(tpage, base, vision);
  await tpage.click('nav >> text=Jobs');
  await tpage.waitForSelector(`[data-testid=jobs-table] tr[data-job="${job}"]`);
  check(await tpage.locator(`[data-testid=jobs-table] tr[data-job="${audioJob}"]`).count() === 0, 'the vision tenant does not see audio\'s job');
  check(await tpage.locator('[data-testid=jobs-table] tbody tr[data-job]').count() === 1, 'the vision tenant sees only its own job');
  await tpage.goto(`${base}/jobs/${audioJob}`);
  await tpage.waitForSelector('.msg.error');
  check((await tpage.textContent('.msg.error')).includes('another tenant'), 'another tenant\'s job page says it is not visible');
  await tpage.click('nav >> text=Nodes');
  await tpage.waitForSelector('[data-testid=device]');
  check(await tpage.locator(`[data-job="${audioJob}"]`).count() === 0, 'the other tenant\'s slice is not shown as a job');
  check(await tpage.locator('.slice-fill.others').count() >= 2, 'the other tenant\'s allocation is shown as "other tenants"');
  check(await tpage.locator('button:has-text("Cordon")').count() === 0, 'a tenant gets no cordon button');
  await shot(tpage, '08-nodes-tenant');
  await tctx.close();

  // Admin: cordon and uncordon from the nodes page.
  await page.click('nav >> text=Nodes');
  await page.click('button:has-text("Cordon")');
  await page.waitForSelector('.badge.warn:has-text("cordoned")');
  check((await must(base, admin, 'GET', '/api/v1/nodes/studio-node')).cordoned === true, 'cordon from the UI reached the server');
  await page.click('button:has-text("Uncordon")');
  await page.waitForFunction(() => !document.querySelector('.badge.warn'));

  const wctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const wpage = await wctx.newPage();
  wpage.on('request', (r) => { if (!r.url().startsWith(base) && !r.url().startsWith('data:')) foreign.push(r.url()); });
  wpage.on('pageerror', (e) => pageErrors.push(String(e)));
  await workbench(page, wpage, base, admin, vision, audio);
  await usage(page, wpage, base, vision);
  await wctx.close();

  check(foreign.length === 0, `no external requests (${foreign.join(', ')})`);
  check(pageErrors.length === 0, `no page errors (${pageErrors.join('; ')})`);
  const history = await must(base, vision, 'GET', '/api/v1/usage/history');
  check(history.points.length >= 1 && history.interval_s === 10, 'GET /api/v1/usage/history answers');
}

// The workbench: submit from the editor (checked as you type; bad YAML submits nothing), the log viewer (tail,
// follow, replicas, ANSI stripped, search, download, auto-scroll), clone, suspend/resume, an admin's priority
// and quota edits, the slice details, and what a tenant may not do.
async function workbench(page, tpage, base, admin, vision, audio) {
  const jobCount = async () => (await must(base, admin, 'GET', '/api/v1/jobs')).jobs.length;
  const editor = '[data-testid=spec-editor]';
  await page.click('nav >> text=Submit');
  await page.waitForSelector('[data-testid=spec-ok]');
  check((await page.inputValue(editor)).includes('name: my-job'), 'the editor starts from an example that the server finds valid');

  // Bad YAML: the error at its line and column, the Submit button off, and nothing is submitted, even by Ctrl+Enter.
  const before = await jobCount();
  await page.fill(editor, 'name: bad-one\ncommand: [python]\nresources:\n  gpu: 1\n  gpucores: 300\n');
  await page.waitForSelector('[data-testid=spec-error]');
  const error = await page.textContent('[data-testid=spec-error]');
  check(error.includes('line 5, column 13') && error.includes('resources.gpucores must be 1..100'), `the error names its place: ${error}`);
  check(await page.isDisabled('[data-testid=submit]'), 'Submit is off while the spec is invalid');
  await page.focus(editor);
  await page.keyboard.press('Control+Enter');
  await page.fill(editor, 'name: broken\nresources: {gpu: 1\ncommand: [x]\n');
  await page.waitForFunction(() => document.querySelector('[data-testid=spec-error]')?.textContent.includes('malformed YAML'));
  check(await page.locator('.editor .gutter .err').count() === 1, 'the error line is marked in the gutter');
  await shot(page, '09-submit-error');
  await page.click('[data-testid=spec-error-position]');
  check(await page.evaluate(() => document.activeElement?.dataset.testid === 'spec-editor'), 'the error\'s position moves the cursor into the editor');
  await sleep(500);
  check(await jobCount() === before, 'bad YAML in the editor submitted nothing');

  // A good spec: two replicas, 70 KiB of filler (more than the first read's tail), coloured output, more output a
  // few seconds later.
  const spec = ['name: wb-logs', 'replicas: 2', 'resources:', '  gpu: 1', '  gpumem-percentage: 25', '  gpucores: 10',
    'command: |', `  i=1; while [ $i -le 900 ]; do echo "filler-$i-${'0'.repeat(70)}"; i=$((i+1)); done`,
    "  printf '\\033[31mred-line\\033[0m\\n'", '  i=1; while [ $i -le 200 ]; do echo line-$i; i=$((i+1)); done',
    '  echo rank-${RANK:-none}', '  sleep 6; echo follow-marker-late; sleep 300', ''].join('\n');
  await page.fill(editor, spec);
  await page.waitForSelector('[data-testid=spec-ok]');
  await page.click('[data-testid=submit]');
  await page.waitForSelector('[data-testid=job-page]');
  const id = Number(page.url().split('/').pop());
  check(id > 0 && (await must(base, admin, 'GET', `/api/v1/jobs/${id}`)).name === 'wb-logs', `the editor submitted job ${id}`);

  // The log follows: output written seconds after the page opened appears without a reload.
  await page.waitForFunction(() => document.querySelector('[data-testid=log]')?.textContent.includes('line-200'), null, { timeout: 20000 });
  check(!(await page.textContent('[data-testid=log]')).includes('follow-marker-late'), 'the late line is not there yet');
  await page.waitForFunction(() => document.querySelector('[data-testid=log]')?.textContent.includes('follow-marker-late'), null, { timeout: 20000 });
  const log = await page.textContent('[data-testid=log]');
  check(log.includes('red-line') && !log.includes('\x1b') && !log.includes('[31m'), 'ANSI colours are stripped');
  check(log.includes('rank-0'), 'replica 0\'s log');
  check(await page.evaluate(() => { const el = document.querySelector('[data-testid=log]'); return el.scrollHeight - el.scrollTop - el.clientHeight < 30; }),
    'the log is scrolled to its end');
  await page.fill('input[aria-label="Search the log"]', 'line-1');
  check((await page.textContent('[data-testid=log-matches]')).trim() === '1 of 111', 'search counts line-1, line-10..19, line-100..199');
  await page.press('input[aria-label="Search the log"]', 'Enter');
  check((await page.textContent('[data-testid=log-matches]')).trim() === '2 of 111', 'Enter goes to the next match');
  await page.fill('input[aria-label="Search the log"]', '');
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('button:has-text("Download")')]);
  const saved = readFileSync(await download.path(), 'utf8');
  check(download.suggestedFilename() === `job-${id}-replica-0.log` && saved.includes('filler-1-0') &&
    saved.includes('line-200') && saved.includes('\x1b[31m'), 'Download saves the whole log as written');
  await page.selectOption('select[aria-label=Replica]', '1');
  await page.waitForFunction(() => document.querySelector('[data-testid=log]')?.textContent.includes('rank-1'), null, { timeout: 20000 });
  check(!(await page.textContent('[data-testid=log]')).includes('rank-0'), 'the replica picker shows replica 1\'s own output');
  // Back to replica 0, whose output is all there now: the first read is its last 64 KiB, the rest on demand.
  await page.selectOption('select[aria-label=Replica]', '0');
  await page.waitForFunction(() => document.querySelector('[data-testid=log]')?.textContent.includes('rank-0'), null, { timeout: 20000 });
  check(!(await page.textContent('[data-testid=log]')).includes('filler-1-0'), 'the first read is the tail, not the oldest lines');
  await page.click('button:has-text("Load earlier")');
  await page.waitForFunction(() => document.querySelector('[data-testid=log]')?.textContent.includes('filler-1-0'));
  step('ok: Load earlier reads the output before the tail');
  await shot(page, '10-job-logs');

  // Suspend and resume from the page.
  await page.click('button:has-text("Suspend")');
  await page.waitForFunction(() => document.querySelector('[data-testid=job-state]')?.textContent === 'suspended', null, { timeout: 30000 });
  step('ok: suspended from the page');
  await page.click('button:has-text("Resume")');
  await page.waitForFunction(() => ['queued', 'scheduled', 'running'].includes(document.querySelector('[data-testid=job-state]')?.textContent), null, { timeout: 15000 });
  step('ok: resumed from the page');

  // An admin sets the priority; a bad one is refused with the server's words and changes nothing.
  await page.fill('[data-testid=priority-form] input', 'high');
  await page.click('[data-testid=priority-form] button');
  await until(async () => (await must(base, admin, 'GET', `/api/v1/jobs/${id}`)).priority === 90, 'the priority form set 90 (high)');
  await page.fill('[data-testid=priority-form] input', '101');
  await page.click('[data-testid=priority-form] button');
  await page.waitForSelector('.messages .msg.error:has-text("priority must be 0..100")');
  check((await must(base, admin, 'GET', `/api/v1/jobs/${id}`)).priority === 90, 'a refused priority changes nothing');

  // Clone: the editor holds the job's spec; submitted, the new job runs the same command.
  await page.click('a:has-text("Clone")');
  await page.waitForSelector('[data-testid=spec-ok]');
  check((await page.inputValue(editor)).includes('name: wb-logs'), 'Clone prefills the editor with the job\'s spec');
  await page.fill(editor, (await page.inputValue(editor)).replace('name: wb-logs', 'name: wb-clone'));
  await page.waitForSelector('[data-testid=spec-ok]');
  await page.click('[data-testid=submit]');
  await page.waitForFunction((old) => /\/jobs\/\d+$/.test(location.pathname) && !location.pathname.endsWith(`/${old}`), id);
  const cloned = await must(base, admin, 'GET', `/api/v1/jobs/${page.url().split('/').pop()}`);
  const original = await must(base, admin, 'GET', `/api/v1/jobs/${id}`);
  check(cloned.name === 'wb-clone' && JSON.stringify(cloned.spec.command) === JSON.stringify(original.spec.command) &&
    cloned.replicas === 2, 'the clone has the original\'s command and replicas');
  await page.click('button.danger:has-text("Cancel")');
  await must(base, admin, 'POST', `/api/v1/jobs/${id}/cancel`);

  // The internal node tenant is no team; an admin edits a quota (a bad value is refused, naming the field).
  await must(base, admin, 'POST', '/api/v1/nodes/other-node/tokens', {});
  await page.click('nav >> text=Queue');
  await page.waitForSelector('[data-testid=tenant][data-tenant=audio]');
  check(await page.locator('[data-tenant="xpool-nodes"]').count() === 0, 'the xpool-nodes tenant is not listed');
  const devicesRow = await page.textContent('[data-tenant=audio] table.quota tbody tr');
  check(devicesRow.startsWith('Devices0.3'), `devices in use count GPU compute as the quota does (30% = 0.3): ${devicesRow}`);
  await page.click('[data-tenant=audio] button:has-text("Edit quota")');
  await page.fill('[data-tenant=audio] input[name=devices]', '3');
  await page.click('[data-tenant=audio] button:has-text("Save quota")');
  await page.waitForFunction(() => !document.querySelector('[data-testid=quota-form]'));
  check((await must(base, admin, 'GET', '/api/v1/tenants/audio')).quota.devices === 3, 'the quota form saved devices=3');
  await page.click('[data-tenant=audio] button:has-text("Edit quota")');
  await page.fill('[data-tenant=audio] input[name=devices]', 'lots');
  await page.click('[data-tenant=audio] button:has-text("Save quota")');
  await page.waitForSelector('.messages .msg.error:has-text("quota.devices")');
  check((await must(base, admin, 'GET', '/api/v1/tenants/audio')).quota.devices === 3, 'a refused quota changes nothing');
  check(await page.evaluate(() => [...document.querySelectorAll('[data-testid=tenant]')].every((c) => c.scrollWidth <= c.clientWidth + 1)),
    'quota tables fit their cards');
  await shot(page, '11-quota-edit');

  // Slice details on hover.
  await page.click('nav >> text=Nodes');
  const slice = page.locator('[data-kind=memory] .slice-fill[data-job]').first();
  await slice.hover();
  await page.waitForSelector('[data-testid=slice-detail]');
  check(/#\d+ .* tenant \w+ · replica \d/.test(await page.textContent('[data-testid=slice-detail]')), 'hovering a slice shows its job, tenant and replica');

  // A tenant: no priority form; submitting as another tenant is refused at the tenant line, and stores nothing.
  await signIn(tpage, base, vision);
  const visionJob = (await must(base, vision, 'POST', '/api/v1/jobs', { name: 'vision-wb', resources: { cpu: 1 }, command: 'sleep 300' })).id;
  await tpage.goto(`${base}/jobs/${visionJob}`);
  await tpage.waitForSelector('[data-testid=job-page]');
  check(await tpage.locator('[data-testid=priority-form]').count() === 0, 'a tenant gets no priority form');
  await tpage.click('nav >> text=Submit');
  await tpage.waitForSelector('[data-testid=spec-ok]');
  await tpage.fill(editor, 'name: sneaky\ntenant: audio\nresources: {cpu: 1}\ncommand: [x]\n');
  await tpage.waitForSelector('[data-testid=spec-error]');
  check((await tpage.textContent('[data-testid=spec-error]')).includes('line 2, column 1'), 'another tenant in the spec is refused at its line');
  check((await must(base, admin, 'GET', '/api/v1/jobs?tenant=audio')).jobs.every((j) => j.name !== 'sneaky'), 'nothing was stored for audio');
  await interactive(base, tpage, vision, audio);
}

// The Usage page: allocation vs measured use with a time-range picker and a tenant selector (admin: any tenant;
// a tenant: only itself), and the accounting API's tenant rules.
async function usage(page, tpage, base, vision) {
  await page.click('nav >> text=Usage');
  await page.waitForSelector('[data-testid=usage-range]');
  await page.waitForSelector('[data-testid=usage-chart], [data-testid=usage-empty]');
  const options = await page.locator('[data-testid=usage-tenant] option').allTextContents();
  check(options[0] === 'All tenants' && options.includes('vision') && options.includes('audio'),
    `the admin may pick any tenant (${options.join(', ')})`);
  const picked = page.waitForResponse((r) => r.url().includes('/api/v1/usage?since=1h') && r.url().includes('tenant=vision'));
  await page.selectOption('[data-testid=usage-range]', '1h');
  await page.selectOption('[data-testid=usage-tenant]', 'vision');
  check((await picked).status() === 200, 'picking a range and a tenant asks the server for that range and tenant');
  await page.waitForSelector('[data-testid=usage-tenants]');
  const shown = await page.locator('[data-testid=usage-tenants] tbody tr td:first-child').allTextContents();
  check(shown.every((t) => t === 'vision' || t.startsWith('Nothing ran')), `only vision's usage is listed (${shown.join(', ')})`);
  await shot(page, '20-usage-admin');

  await tpage.click('nav >> text=Usage');
  await tpage.waitForSelector('[data-testid=usage-tenant]');
  check(await tpage.locator('[data-testid=usage-tenant]').isDisabled(), 'a tenant cannot pick another tenant');
  check(await tpage.inputValue('[data-testid=usage-tenant]') === 'vision', 'a tenant sees its own usage');
  await shot(tpage, '21-usage-tenant');
  check((await api(base, vision, 'GET', '/api/v1/usage?tenant=audio')).status === 404, 'a tenant asking for another tenant\'s usage gets 404');
  check((await api(base, '', 'GET', '/api/v1/usage')).status === 401, 'usage without a token is 401');
}

let code = 0;
try {
  await main();
  step('PASS');
} catch (e) {
  code = 1;
  console.error(`FAIL: ${e.stack ?? e}`);
  console.error(`--- xpool up log ---\n${serverLog}`);
} finally {
  if (browser) await browser.close().catch(() => {});
  if (server && server.exitCode === null) {
    server.kill('SIGTERM');
    for (let i = 0; i < 100 && server.exitCode === null; i++) await sleep(100);
    if (server.exitCode === null) server.kill('SIGKILL');
  }
  rmSync(dir, { recursive: true, force: true });
}
process.exit(code);
