// Studio end to end in a real browser: a real `xpool up` (simulated 4xA100-80GB node, port 0) and Debian's
// Chromium driven by playwright-core. Signs in, sees the 4 devices, submits a job through the API and watches
// it appear as a slice on its device, opens its page, reads its log (when the server has the logs route),
// cancels it and sees it leave the device; a tenant's token does not show another tenant's jobs. Saves a
// screenshot of each page in XPOOL_STUDIO_ARTIFACTS. Exit 0 = pass, 1 = fail, 77 = skipped (no Chromium).
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
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

function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
  step(`ok: ${what}`);
}

async function shot(page, name) {
  const file = path.join(artifacts, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  step(`screenshot ${file}`);
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
  const logRoute = await api(base, vision, 'GET', `/api/v1/jobs/${job}/logs`);
  if (logRoute.status === 404 && (logRoute.json?.error?.message ?? '').startsWith('no route')) {
    await page.waitForSelector('[data-testid=log-missing]');
    step('the server has no logs route: the page says so');
  } else {
    await page.waitForFunction(() => document.querySelector('[data-testid=log]')?.textContent.includes('hello-from-studio-e2e'), null, { timeout: 20000 });
    step('ok: the job page shows the job\'s output');
  }
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

  check(foreign.length === 0, `no external requests (${foreign.join(', ')})`);
  check(pageErrors.length === 0, `no page errors (${pageErrors.join('; ')})`);
  const history = await must(base, vision, 'GET', '/api/v1/usage/history');
  check(history.points.length >= 1 && history.interval_s === 10, 'GET /api/v1/usage/history answers');
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
