// Drives the dashboard in headless chromium (see dashboard_test.sh, which
// starts `shoal up` and sets the environment). Fails with a message and a
// screenshot of the page as it was; writes load figures to metrics.json.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const env = process.env;
const require = createRequire(path.resolve(env.PW_DIR, '..', 'resolve-from-here.js'));
const { chromium } = require('playwright-core');

const NODES = ['node01', 'node02', 'node03'];
const GPUS_PER_NODE = 8;
const base = new URL(env.DASHBOARD_URL);
const origin = base.origin;
const token = decodeURIComponent(base.hash.replace(/^#token=/, ''));
const shot = (name) => path.join(env.ARTIFACTS, name);

let page;
let failed = false;
function ok(what) {
  console.log(`ok   ${what}`);
}
async function check(what, fn) {
  try {
    await fn();
    ok(what);
  } catch (e) {
    failed = true;
    console.log(`FAIL ${what}: ${e.message.split('\n')[0]}`);
    if (page) await page.screenshot({ path: shot(`failure-${what.replace(/[^a-z0-9]+/gi, '-')}.png`), fullPage: true }).catch(() => {});
  }
}
function expect(cond, message) {
  if (!cond) throw new Error(message);
}

function shoal(...args) {
  return execFileSync(env.SHOAL, args, { encoding: 'utf8', env: { ...env }, timeout: 20000 });
}

const browser = await chromium.launch({
  executablePath: env.CHROMIUM,
  headless: true,
  // Root (a CI container) cannot use chromium's sandbox.
  args: process.getuid && process.getuid() === 0 ? ['--no-sandbox'] : [],
});
const errors = [];
try {
  // A laptop's screen.
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  page = await context.newPage();
  page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/status of 40[14]/.test(m.text())) errors.push(`console: ${m.text()}`);
  });

  // ---- first load, measured: every response of the first full render ----
  const responses = [];
  const onResponse = (r) => responses.push(r);
  page.on('response', onResponse);
  const t0 = Date.now();
  await page.goto(env.DASHBOARD_URL, { waitUntil: 'load' });
  await check('the overview shows every node and every GPU tile', async () => {
    await page.waitForFunction((n) => document.querySelectorAll('.gpu-tile').length === n,
      NODES.length * GPUS_PER_NODE, { timeout: 15000 });
    const rendered = Date.now() - t0;
    const names = await page.locator('.node-row').evaluateAll((rows) => rows.map((r) => r.dataset.node));
    expect(JSON.stringify(names) === JSON.stringify(NODES), `nodes ${names}`);
    for (const n of NODES) {
      const tiles = await page.locator(`.node-row[data-node="${n}"] .gpu-tile`).count();
      expect(tiles === GPUS_PER_NODE, `${n} has ${tiles} tiles`);
    }
    // Measure the first load before anything else is fetched.
    page.off('response', onResponse);
    const timing = await page.evaluate(() => {
      const nav = performance.getEntriesByType('navigation')[0];
      return { domContentLoaded: nav.domContentLoadedEventEnd, load: nav.loadEventEnd };
    });
    let bytes = 0;
    let staticBytes = 0;
    const byUrl = [];
    for (const r of responses) {
      const sizes = await r.request().sizes().catch(() => null);
      if (!sizes) continue;
      const total = sizes.responseBodySize + sizes.responseHeadersSize;
      bytes += total;
      const u = new URL(r.url());
      if (!u.pathname.startsWith('/v1/')) staticBytes += total;
      byUrl.push({ url: u.pathname + u.search, status: r.status(), body_bytes: sizes.responseBodySize,
        header_bytes: sizes.responseHeadersSize, encoding: r.headers()['content-encoding'] || 'identity' });
    }
    const metrics = {
      viewport: '1440x900',
      dom_content_loaded_ms: Math.round(timing.domContentLoaded),
      load_event_ms: Math.round(timing.load),
      overview_rendered_ms: rendered,
      requests: byUrl.length,
      bytes_total: bytes,
      bytes_static: staticBytes,
      responses: byUrl,
    };
    writeFileSync(shot('metrics.json'), `${JSON.stringify(metrics, null, 2)}\n`);
    console.log(`     first load: DOMContentLoaded ${metrics.dom_content_loaded_ms} ms, load ${metrics.load_event_ms} ms, ` +
      `overview rendered ${rendered} ms, ${byUrl.length} requests, ${bytes} bytes (${staticBytes} static)`);
  });

  await check('a reload revalidates the files (304) and renders again', async () => {
    const again = [];
    const onAgain = (r) => again.push(r);
    page.on('response', onAgain);
    const t1 = Date.now();
    await page.reload({ waitUntil: 'load' });
    await page.waitForFunction((n) => document.querySelectorAll('.gpu-tile').length === n,
      NODES.length * GPUS_PER_NODE, { timeout: 15000 });
    const rendered = Date.now() - t1;
    page.off('response', onAgain);
    let bytes = 0;
    for (const r of again) {
      const sizes = await r.request().sizes().catch(() => null);
      if (sizes) bytes += sizes.responseBodySize + sizes.responseHeadersSize;
    }
    // The page's subresources (chromium may fetch the document itself anew).
    const statics = again.filter((r) => !/^\/(v1\/|$)/.test(new URL(r.url()).pathname));
    expect(statics.length > 0 && statics.every((r) => r.status() === 304), `statuses ${statics.map((r) => r.status())}`);
    const metricsPath = shot('metrics.json');
    const metrics = JSON.parse(readFileSync(metricsPath, 'utf8'));
    metrics.reload = { overview_rendered_ms: rendered, requests: again.length, bytes_total: bytes };
    writeFileSync(metricsPath, `${JSON.stringify(metrics, null, 2)}\n`);
    console.log(`     reload: overview rendered ${rendered} ms, ${again.length} requests, ${bytes} bytes`);
  });

  await check('the token leaves the address bar and stays in the tab', async () => {
    expect(!page.url().includes('token='), `url ${page.url()}`);
    const stored = await page.evaluate(() => sessionStorage.getItem('shoal.token'));
    expect(stored === token, 'sessionStorage has no token');
  });

  await check('tiles show utilisation numbers from telemetry', async () => {
    // Agents heartbeat every few seconds; the page polls every 3 s.
    await page.waitForFunction(() => [...document.querySelectorAll('.gpu-tile .u')].every((e) => /^\d+$/.test(e.textContent)),
      null, { timeout: 20000 });
    const models = await page.locator('#models').innerText();
    expect(/H100/.test(models), `models table: ${models}`);
  });

  await check('the overview charts each power budget against its cap', async () => {
    await page.waitForSelector('#power-budgets:not([hidden]) .chart canvas', { timeout: 20000 });
    const title = await page.locator('#power-budgets .chart-title').first().textContent();
    expect(title === 'site (cap 20 kW)', `title ${title}`);
  });

  await check('static files need no token; the API does', async () => {
    const statuses = await page.evaluate(async () => [(await fetch('/app.js')).status, (await fetch('/v1/nodes')).status]);
    expect(statuses[0] === 200 && statuses[1] === 401, `statuses ${statuses}`);
  });

  // ---- a job through the CLI ----
  let job = '';
  await check('a job submitted with the CLI', async () => {
    const out = shoal('submit', '--gpus', '2', '--job-name', 'web-test', '--time', '5m',
      '--chdir', env.WORK_DIR, '--wrap', 'echo hello-from-the-web-test; sleep 40');
    job = (out.match(/Submitted job (\d+)/) || [])[1];
    expect(job, `submit said: ${out}`);
  });

  await check("the job's GPUs show its number on the overview", async () => {
    await page.waitForFunction((id) => [...document.querySelectorAll('.gpu-tile .j')].filter((e) => e.textContent === `#${id}`).length === 2,
      job, { timeout: 10000 });
  });
  await page.screenshot({ path: shot('overview.png'), fullPage: true });

  await check('the jobs view lists the job', async () => {
    await page.click('nav a[data-nav="jobs"]');
    await page.waitForSelector(`#queue tr[data-job="${job}"]`, { timeout: 10000 });
    await page.waitForFunction((id) => /running/.test(document.querySelector(`#queue tr[data-job="${id}"]`).textContent),
      job, { timeout: 15000 });
    const row = await page.locator(`#queue tr[data-job="${job}"]`).innerText();
    expect(/web-test/.test(row) && /running/.test(row), `row: ${row}`);
  });
  await page.screenshot({ path: shot('jobs.png'), fullPage: true });

  await check("the job's page shows its GPUs on a chart and its output", async () => {
    await page.click(`#queue tr[data-job="${job}"] a`);
    await page.waitForFunction((id) => document.querySelector('main h1')?.textContent.includes(`Job ${id}`), job, { timeout: 10000 });
    const seriesStatus = await page.evaluate(async (id) => (await fetch(`/v1/jobs/${id}/series`, {
      headers: { Authorization: `Bearer ${sessionStorage.getItem('shoal.token')}` } })).status, job);
    if (seriesStatus === 200) {
      await page.waitForSelector('#job-charts .uplot canvas', { timeout: 25000 });
    } else {
      // A server without series: the page says so instead of breaking.
      await page.waitForSelector('#job-charts .nodata', { timeout: 5000 });
      console.log(`     (GET /v1/jobs/${job}/series answered ${seriesStatus}: "no data yet" shown)`);
    }
    await page.waitForFunction(() => document.querySelector('#log')?.textContent.includes('hello-from-the-web-test'),
      null, { timeout: 15000 });
  });
  await page.screenshot({ path: shot('job.png'), fullPage: true });

  // ---- actions, each asked again before it is sent ----
  const stateOf = (id) => JSON.parse(shoal('show', '--json', id)).state;
  const reasonOf = (id) => JSON.parse(shoal('show', '--json', id)).reason || '';
  const actionsShown = (sel) => page.locator(`${sel} button`).evaluateAll((bs) => bs.map((b) => b.dataset.action).join(','));
  await check("a running job's page offers cancel and requeue, and a dismissed question sends nothing", async () => {
    await page.waitForFunction(() => document.querySelectorAll('#job-actions button').length === 2, null, { timeout: 10000 });
    const shown = await actionsShown('#job-actions');
    expect(shown === 'cancel,requeue', `actions ${shown}`);
    page.once('dialog', (d) => d.dismiss());
    await page.click('#job-actions button[data-action="cancel"]');
    await page.waitForTimeout(1000);
    expect(stateOf(job) === 'running', `state ${stateOf(job)} after a dismissed cancel`);
  });
  await check('cancel, confirmed, cancels the job', async () => {
    page.once('dialog', (d) => d.accept());
    await page.click('#job-actions button[data-action="cancel"]');
    await page.waitForFunction(() => /cancelled/.test(document.querySelector('main h1')?.textContent), null, { timeout: 15000 });
    expect(stateOf(job) === 'cancelled', `state ${stateOf(job)}`);
    const left = await page.locator('#job-actions button').count();
    expect(left === 0, `${left} actions left on a cancelled job`);
  });

  let waiting = '';
  await check('hold and release a pending job', async () => {
    const out = shoal('submit', '--gpus', '1', '--job-name', 'web-later', '--begin', String(Math.floor(Date.now() / 1000) + 3600),
      '--chdir', env.WORK_DIR, '--wrap', 'true');
    waiting = (out.match(/Submitted job (\d+)/) || [])[1];
    expect(waiting, `submit said: ${out}`);
    await page.goto(`${origin}/#/jobs/${waiting}`);
    await page.waitForSelector('#job-actions button[data-action="hold"]', { timeout: 10000 });
    page.once('dialog', (d) => d.accept());
    await page.click('#job-actions button[data-action="hold"]');
    await page.waitForSelector('#job-actions button[data-action="release"]', { timeout: 10000 });
    expect(reasonOf(waiting) === 'held', `reason ${reasonOf(waiting)} after hold`);
    await page.screenshot({ path: shot('job-held.png'), fullPage: true });
    page.once('dialog', (d) => d.accept());
    await page.click('#job-actions button[data-action="release"]');
    await page.waitForSelector('#job-actions button[data-action="hold"]', { timeout: 10000 });
    expect(reasonOf(waiting) !== 'held', 'still held after release');
  });

  await check('the queue sorts by a column, both ways, and shows account, partition and QoS', async () => {
    const later = (shoal('submit', '--gpus', '1', '--job-name', 'web-later-2', '--begin', String(Math.floor(Date.now() / 1000) + 3600),
      '--chdir', env.WORK_DIR, '--wrap', 'true').match(/Submitted job (\d+)/) || [])[1];
    expect(later, 'no job submitted');
    await page.goto(`${origin}/#/jobs`);
    await page.waitForSelector(`#queue tr[data-job="${later}"]`, { timeout: 10000 });
    const heads = await page.locator('#queue thead th').allInnerTexts();
    expect(['Account', 'Partition', 'QoS'].every((c) => heads.some((x) => x.startsWith(c))), `columns ${heads}`);
    const ids = () => page.locator('#queue tbody tr').evaluateAll((rs) => rs.map((r) => Number(r.dataset.job)));
    await page.click('#queue th[data-sort="job"]');
    const up = await ids();
    await page.click('#queue th[data-sort="job"]');
    const down = await ids();
    expect(up.length >= 2 && up.every((x, i) => !i || up[i - 1] < x), `ascending ${up}`);
    expect(JSON.stringify(down) === JSON.stringify([...up].reverse()), `descending ${down}`);
    shoal('cancel', later);
  });

  await check("a finished array is one row, N_[0-5] with its tasks' states, that opens", async () => {
    const array = (shoal('submit', '--array', '0-5', '--gpus', '1', '--job-name', 'web-array', '--chdir', env.WORK_DIR,
      '--wrap', 'test $SLURM_ARRAY_TASK_ID -ne 5').match(/Submitted job array (\d+)/) || [])[1];
    expect(array, 'no array submitted');
    await page.goto(`${origin}/#/jobs`);
    const row = `#finished tr[data-array="${array}"]`;
    await page.waitForFunction((sel) => /5 completed/.test(document.querySelector(sel)?.textContent || '') &&
      /1 failed/.test(document.querySelector(sel)?.textContent || ''), row, { timeout: 30000 });
    const text = await page.locator(row).innerText();
    expect(text.includes(`${array}_[0-5]`) && /6 tasks/.test(text), `row: ${text}`);
    expect(await page.locator('#finished tr.array-task').count() === 0, 'tasks shown before opening');
    await page.click(`${row} button`);
    await page.waitForFunction(() => document.querySelectorAll('#finished tr.array-task').length === 6, null, { timeout: 5000 });
    await page.screenshot({ path: shot('jobs-array.png'), fullPage: true });
  });

  await check('history: finished jobs with GPU-hours, filtered by state, as CSV', async () => {
    await page.click('nav a[data-nav="history"]');
    await page.waitForSelector(`#history tr[data-job="${job}"]`, { timeout: 10000 });
    const total = await page.locator('#history-total').innerText();
    expect(/GPU-hours/.test(total) && /kWh/.test(total), `total: ${total}`);
    await page.selectOption('#history-state', 'failed');
    await page.waitForFunction(() => {
      const rows = [...document.querySelectorAll('#history tbody tr[data-job]')];
      return rows.length > 0 && rows.every((r) => /failed/.test(r.textContent));
    }, null, { timeout: 10000 });
    await page.screenshot({ path: shot('history.png'), fullPage: true });
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#history-csv')]);
    const csv = readFileSync(await download.path(), 'utf8').trim().split(/\r\n/);
    expect(csv[0].startsWith('id,name,user,account,partition,state,gpus,start,end,elapsed_s,gpu_hours'), `header ${csv[0]}`);
    expect(csv.length >= 2 && csv.slice(1).every((l) => l.split(',')[5] === 'failed'), `rows ${csv.slice(1).join(' | ')}`);
  });

  await check('an admin drains a node, with a reason, and resumes it', async () => {
    await page.goto(`${origin}/#/nodes/node03`);
    await page.waitForSelector('#node-actions button[data-action="drain"]', { timeout: 10000 });
    page.once('dialog', (d) => d.accept('web test'));
    await page.click('#node-actions button[data-action="drain"]');
    await page.waitForSelector('#node-actions button[data-action="resume"]', { timeout: 10000 });
    const node = JSON.parse(shoal('nodes', '--json')).nodes.find((n) => n.name === 'node03');
    expect(/drain/.test(node.state) && /web test/.test(JSON.stringify(node)), `node03: ${node.state}`);
    await page.screenshot({ path: shot('node-drained.png'), fullPage: true });
    page.once('dialog', (d) => d.accept());
    await page.click('#node-actions button[data-action="resume"]');
    await page.waitForSelector('#node-actions button[data-action="drain"]', { timeout: 10000 });
    const after = JSON.parse(shoal('nodes', '--json')).nodes.find((n) => n.name === 'node03');
    expect(after.state === 'up', `node03: ${after.state} after resume`);
  });

  await check("a user has the actions on their own job, none on another's, none on nodes", async () => {
    const made = shoal('token', 'create', '--user', 'webbob', '--role', 'user');
    const bob = (made.match(/shoal_[A-Za-z0-9_]+/) || [])[0];
    expect(bob, `token create said: ${made}`);
    const out = execFileSync(env.SHOAL, ['submit', '--gpus', '1', '--job-name', 'bobs', '--hold', '--chdir', env.WORK_DIR,
      '--wrap', 'true'], { encoding: 'utf8', env: { ...env, SHOAL_TOKEN: bob }, timeout: 20000 });
    const bobs = (out.match(/Submitted job (\d+)/) || [])[1];
    expect(bobs, `submit said: ${out}`);
    const runs = (shoal('submit', '--gpus', '1', '--job-name', 'roots', '--chdir', env.WORK_DIR, '--wrap', 'sleep 60')
      .match(/Submitted job (\d+)/) || [])[1];
    expect(runs, 'no job submitted');
    const other = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    try {
      await other.goto(`${origin}/#token=${encodeURIComponent(bob)}`);
      await other.waitForSelector('.gpu-tile', { timeout: 10000 });
      // Another user's running job: "in use" on its tile, not its number.
      await other.waitForFunction(() => [...document.querySelectorAll('.gpu-tile .j')].some((e) => e.textContent === 'in use'),
        null, { timeout: 15000 });
      const numbers = await other.locator('.gpu-tile .j').evaluateAll((es) => es.filter((e) => e.textContent.startsWith('#')).length);
      expect(numbers === 0, `${numbers} tiles show another user's job number`);
      const figures = await other.locator('.figures').innerText();
      expect(/your jobs running/.test(figures) && /GPUs allocated, all users/.test(figures), `figures: ${figures}`);
      await other.screenshot({ path: shot('overview-as-user.png'), fullPage: true });
      await other.goto(`${origin}/#/jobs/${bobs}`);
      await other.waitForFunction(() => document.querySelectorAll('#job-actions button').length === 2, null, { timeout: 10000 });
      const own = await other.locator('#job-actions button').evaluateAll((bs) => bs.map((b) => b.dataset.action).join(','));
      expect(own === 'cancel,release', `actions on bob's own held job: ${own}`);
      await other.goto(`${origin}/#/jobs/${waiting}`);
      await other.waitForFunction(() => /another user/.test(document.getElementById('status')?.textContent), null, { timeout: 10000 });
      const theirs = await other.locator('#job-actions button').count();
      expect(theirs === 0, `${theirs} actions on another user's job`);
      await other.goto(`${origin}/#/nodes/node03`);
      await other.waitForFunction(() => /node03 up/.test(document.querySelector('main h1')?.textContent), null, { timeout: 10000 });
      const onNode = await other.locator('#node-actions button').count();
      expect(onNode === 0, `${onNode} node actions for a user`);
    } finally {
      await other.close();
    }
    shoal('cancel', bobs);
    shoal('cancel', runs);
  });
  if (waiting) shoal('cancel', waiting);

  await check("a node's page has a chart per GPU", async () => {
    await page.goto(`${origin}/#/nodes/node01`);
    await page.waitForFunction((n) => document.querySelectorAll('#gpu-charts > div').length === n, GPUS_PER_NODE,
      { timeout: 10000 });
    const status = await page.evaluate(async () => (await fetch('/v1/nodes/node01/series', {
      headers: { Authorization: `Bearer ${sessionStorage.getItem('shoal.token')}` } })).status);
    if (status === 200) {
      await page.waitForFunction((n) => document.querySelectorAll('#gpu-charts .uplot canvas').length >= n, GPUS_PER_NODE,
        { timeout: 20000 });
      // Power and temperature over time, a line per GPU.
      await page.waitForFunction(() => document.querySelectorAll('#node-power .uplot canvas').length === 2, null,
        { timeout: 20000 });
    }
  });

  await check("a node's page shows each GPU's ECC and XID counts, and the node's acceptance", async () => {
    const posted = await page.evaluate(async () => (await fetch('/v1/nodes/node01/acceptance', {
      method: 'POST',
      headers: { Authorization: `Bearer ${sessionStorage.getItem('shoal.token')}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ passed: true, summary: 'web test: 8 GPUs within 5 % of expected', failures: [] }),
    })).status);
    expect(posted === 200, `acceptance POST: ${posted}`);
    await page.goto(`${origin}/#/nodes/node01`);
    await page.waitForFunction(() => /passed/.test(document.getElementById('acceptance')?.textContent || ''), null,
      { timeout: 10000 });
    const text = await page.locator('#acceptance').innerText();
    expect(/web test: 8 GPUs within 5 % of expected/.test(text), `acceptance: ${text}`);
    const heads = await page.locator('#node-gpus thead').innerText();
    expect(/ECC/.test(heads) && /XID/.test(heads), `GPU table header: ${heads}`);
    await page.waitForFunction(() => document.querySelector('#node-gpus td[data-ecc]')?.textContent === '0 / 0', null,
      { timeout: 15000 });
    const xid = await page.locator('#node-gpus td[data-xid]').first().innerText();
    expect(xid === '0', `XID ${xid}`);
    // node03's GPU 1 was started with faults (shoal up --sim-fault): its row
    // shows them, marked.
    await page.goto(`${origin}/#/nodes/node03`);
    const faulty = '#node-gpus tr[data-gpu="1"]';
    await page.waitForFunction((row) => document.querySelector(`${row} td[data-ecc]`)?.textContent === '14 / 1',
      faulty, { timeout: 15000 });
    const faultyXid = await page.locator(`${faulty} td[data-xid]`).innerText();
    expect(faultyXid === '1 (last 79)', `node03 GPU 1 XID ${faultyXid}`);
    const marked = await page.locator(`${faulty} td.bad`).count();
    expect(marked === 2, `node03 GPU 1: ${marked} cells marked bad, want 2`);
    const clean = await page.locator('#node-gpus tr[data-gpu="0"] td[data-xid]').innerText();
    expect(clean === '0', `node03 GPU 0 XID ${clean}`);
    await page.screenshot({ path: shot('node-faults.png'), fullPage: true });
  });

  await check('a 16-GPU job: its charts show the mean in a min-max band and name the lowest GPU', async () => {
    const big = (shoal('submit', '--gpus', '16', '--job-name', 'web-big', '--time', '5m', '--chdir', env.WORK_DIR,
      '--wrap', 'sleep 40').match(/Submitted job (\d+)/) || [])[1];
    expect(big, 'no job submitted');
    await page.goto(`${origin}/#/jobs/${big}`);
    const seriesStatus = await page.evaluate(async (id) => (await fetch(`/v1/jobs/${id}/series`, {
      headers: { Authorization: `Bearer ${sessionStorage.getItem('shoal.token')}` } })).status, big);
    if (seriesStatus === 200) {
      // 16 GPUs on two nodes of 8: a band per node.
      await page.waitForFunction(() => /16 GPUs: the mean in its min–max band, one band per node \(2\); lowest mean utilisation node0\d\/\d/
        .test(document.getElementById('job-chart-note')?.textContent || ''), null, { timeout: 30000 });
      const legend = await page.locator('#job-charts .u-legend').first().innerText();
      expect(/node0\d max/.test(legend) && /node0\d mean/.test(legend) && /node0\d min/.test(legend), `legend: ${legend}`);
      // On hover, the GPUs lowest in utilisation at that time.
      const over = await page.locator('#job-charts .u-over').first().boundingBox();
      await page.mouse.move(over.x + over.width * 0.95, over.y + over.height / 2);
      await page.waitForFunction(() => /lowest node0\d\/\d+ \d+%, node0\d\/\d+ \d+%, node0\d\/\d+ \d+%/
        .test(document.querySelector('#job-charts .chart-hover')?.textContent || ''), null, { timeout: 10000 });
      await page.screenshot({ path: shot('job-16-gpus.png'), fullPage: true });
    }
    shoal('cancel', big);
  });

  await check('the time range picker asks the server for that range, and is kept for the tab', async () => {
    await page.goto(`${origin}/#/`);
    await page.waitForSelector('#cluster-chart select.range', { timeout: 10000 });
    const [asked] = await Promise.all([
      page.waitForRequest((r) => /\/v1\/cluster\/series\?since=/.test(r.url()) &&
        Math.abs(Date.now() / 1000 - Number(new URL(r.url()).searchParams.get('since')) - 900) < 60, { timeout: 15000 }),
      page.selectOption('#cluster-chart select.range', '900'),
    ]);
    expect(asked, 'no request for the last 15 minutes');
    await page.goto(`${origin}/#/nodes/node01`);
    await page.waitForSelector('select.range', { timeout: 10000 });
    const kept = await page.locator('select.range').first().inputValue();
    expect(kept === '900', `the node page's range is ${kept}`);
    const [week] = await Promise.all([
      page.waitForRequest((r) => /\/v1\/nodes\/node01\/series\?since=/.test(r.url()) &&
        Math.abs(Date.now() / 1000 - Number(new URL(r.url()).searchParams.get('since')) - 7 * 86400) < 60, { timeout: 15000 }),
      page.selectOption('select.range', '604800'),
    ]);
    expect(week, 'no request for the last 7 days');
    // A custom range: from two hours ago to one hour ago, asked with until.
    await page.selectOption('select.range', 'custom');
    await page.waitForSelector('.range-custom:not([hidden]) input.range-to', { timeout: 10000 });
    const [from, to] = await page.evaluate(() => {
      const local = (t) => new Date(t - new Date(t).getTimezoneOffset() * 60000).toISOString().slice(0, 16);
      return [local(Date.now() - 2 * 3600e3), local(Date.now() - 3600e3)];
    });
    await page.fill('input.range-from', from);
    const [custom] = await Promise.all([
      page.waitForRequest((r) => {
        const q = new URL(r.url()).searchParams;
        return /\/series\?/.test(r.url()) && q.has('until') &&
          Math.abs(Date.now() / 1000 - 3600 - Number(q.get('until'))) < 120 &&
          Math.abs(Number(q.get('until')) - Number(q.get('since')) - 3600) < 1;
      }, { timeout: 15000 }),
      page.fill('input.range-to', to),
    ]);
    expect(custom, 'no request for the custom range');
    await page.screenshot({ path: shot('node-custom-range.png'), fullPage: true });
    await page.selectOption('select.range', '21600');
  });
  await page.screenshot({ path: shot('node.png'), fullPage: true });

  await check("the overview counts an array's waiting tasks one by one", async () => {
    const array = (shoal('submit', '--array', '0-9', '--gpus', '1', '--hold', '--job-name', 'web-held', '--chdir', env.WORK_DIR,
      '--wrap', 'true').match(/Submitted job array (\d+)/) || [])[1];
    expect(array, 'no array submitted');
    await page.goto(`${origin}/#/`);
    // Each task counts, as `shoal queue --json` lists them (other checks'
    // jobs may start meanwhile: compare until both agree, for 15 s).
    let shown = '', listed = -1;
    for (const end = Date.now() + 15000; Date.now() < end; await page.waitForTimeout(500)) {
      listed = JSON.parse(shoal('queue', '--json', '--all', '-t', 'pending')).jobs.length;
      shown = await page.locator('.figures').innerText().catch(() => '');
      if (new RegExp(`\\b${listed}\\s+all users' jobs pending`).test(shown)) break;
    }
    expect(listed >= 10 && new RegExp(`\\b${listed}\\s+all users' jobs pending`).test(shown),
      `${listed} pending listed, the figures say: ${shown.replace(/\s+/g, ' ')}`);
    shoal('cancel', array);
  });

  await check('a tab without a token asks for one and refuses a bad one', async () => {
    const fresh = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await fresh.goto(`${origin}/`);
    await fresh.waitForSelector('#login-form', { state: 'visible', timeout: 5000 });
    await fresh.fill('#token-input', 'shoal_000000000000_nottherightsecret');
    await fresh.click('#login-form button');
    await fresh.waitForFunction(() => document.querySelector('#login-error').textContent.length > 0, null, { timeout: 5000 });
    await fresh.fill('#token-input', token);
    await fresh.click('#login-form button');
    await fresh.waitForSelector('.gpu-tile', { timeout: 10000 });
    await fresh.close();
  });

  await check('no script errors', async () => {
    expect(errors.length === 0, errors.join('; '));
  });
} finally {
  await browser.close();
}
console.log(`screenshots and metrics.json in ${env.ARTIFACTS}`);
process.exit(failed ? 1 : 0);
