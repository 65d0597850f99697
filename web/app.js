// The Shoal dashboard: a single page over the HTTP API (docs/api.md).
// Every request carries the user's token (Authorization: Bearer); the page
// itself holds no data. Views poll every few seconds while the tab is visible.
'use strict';

(function () {
  const POLL_MS = 3000;
  const TOKEN_KEY = 'shoal.token';
  const LOG_TAIL_BYTES = 64 * 1024;
  // Okabe-Ito: lines told apart by colour-blind readers too.
  const PALETTE = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00', '#000000', '#F0E442'];
  // Viridis, sampled at ten points: perceptually even and colour-blind safe.
  const VIRIDIS = ['#440154', '#482878', '#3e4989', '#31688e', '#26828e',
    '#1f9e89', '#35b779', '#6ece58', '#b5de2b', '#fde725'].map((c) => [1, 3, 5].map((i) => parseInt(c.substr(i, 2), 16)));

  // ---- small helpers -------------------------------------------------------

  // Builds an element; text is always set as text, never parsed as HTML.
  function h(tag, props, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (v == null || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'style') e.style.cssText = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const kid of kids.flat(Infinity)) {
      if (kid == null || kid === false) continue;
      e.append(kid instanceof Node ? kid : String(kid));
    }
    return e;
  }

  const clamp = (x, lo, hi) => Math.min(hi, Math.max(lo, x));
  const nowS = () => Date.now() / 1000;
  const pad2 = (n) => String(n).padStart(2, '0');

  function viridis(t) {
    const x = clamp(t, 0, 1) * (VIRIDIS.length - 1);
    const i = Math.min(Math.floor(x), VIRIDIS.length - 2);
    const f = x - i;
    const c = VIRIDIS[i].map((a, k) => Math.round(a + (VIRIDIS[i + 1][k] - a) * f));
    return `rgb(${c[0]},${c[1]},${c[2]})`;
  }

  function fmtDuration(s) {
    if (!(s >= 0)) return '–';
    s = Math.round(s);
    const d = Math.floor(s / 86400), hh = Math.floor((s % 86400) / 3600), m = Math.floor((s % 3600) / 60);
    if (d) return `${d}d ${hh}h`;
    if (hh) return `${hh}h ${pad2(m)}m`;
    if (m) return `${m}m ${pad2(s % 60)}s`;
    return `${s}s`;
  }
  const fmtTime = (t) => (t ? new Date(t * 1000).toLocaleString() : '–');
  const fmtClock = (t) => new Date(t * 1000).toLocaleTimeString();
  const fmtPct = (v) => (v == null || Number.isNaN(v) ? '–' : `${Math.round(v)}%`);
  const fmtGiB = (mib) => (mib == null ? '–' : `${(mib / 1024).toFixed(mib >= 10240 ? 0 : 1)} GiB`);
  const fmtNum = (v) => (typeof v === 'number' ? (Number.isInteger(v) ? String(v) : v.toFixed(2)) : String(v));

  // "0-3,6" -> [0, 1, 2, 3, 6]
  function parseGpuList(text) {
    const out = [];
    for (const part of String(text || '').split(',')) {
      const m = part.trim().match(/^(\d+)(?:-(\d+))?$/);
      if (!m) continue;
      for (let i = +m[1]; i <= +(m[2] ?? m[1]); i++) out.push(i);
    }
    return out;
  }
  // [0, 1, 2, 3, 6] -> "0-3,6"
  function formatGpuList(list) {
    const parts = [];
    const xs = [...list].sort((a, b) => a - b);
    for (let i = 0; i < xs.length; i++) {
      let j = i;
      while (j + 1 < xs.length && xs[j + 1] === xs[j] + 1) j++;
      parts.push(j > i ? `${xs[i]}-${xs[j]}` : `${xs[i]}`);
      i = j;
    }
    return parts.join(',');
  }

  function badge(word, kind) {
    return h('span', { class: `badge ${kind || word}` }, word);
  }

  // ---- the API -------------------------------------------------------------

  const auth = {
    token: () => sessionStorage.getItem(TOKEN_KEY) || '',
    set: (t) => sessionStorage.setItem(TOKEN_KEY, t),
    clear: () => sessionStorage.removeItem(TOKEN_KEY),
  };

  class AuthError extends Error {}
  class HttpError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  async function request(path, init = {}) {
    const token = auth.token();
    if (!token) throw new AuthError('no token');
    let res;
    try {
      res = await fetch(path, { ...init, headers: { ...(init.headers || {}), Authorization: `Bearer ${token}` }, cache: 'no-store' });
    } catch (e) {
      throw new HttpError(0, 'the server cannot be reached');
    }
    if (res.status === 401) throw new AuthError('the server refused the token');
    if (!res.ok) {
      let detail = `HTTP ${res.status}`;
      try {
        const body = await res.json();
        if (body.detail) detail = body.detail;
      } catch (e) { /* not JSON */ }
      throw new HttpError(res.status, detail);
    }
    return res;
  }
  const getJson = async (path) => (await request(path)).json();
  const postJson = async (path, body) => (await request(path, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body || {}),
  })).json();

  // Whether the signed-in identity is an admin (`me` comes from /v1/whoami).
  const isAdmin = () => Boolean(me && me.role === 'admin');
  // A question before an action: the request's body ({}) if confirmed, else false.
  const confirmed = (question) => () => (window.confirm(question) ? {} : false);

  // A button for one of the API's actions, asked for again before it is
  // sent: `ask()` returns false to stop, or the request's body. The page
  // refreshes after it, whatever the answer; refusals show in the status line.
  function actionButton(name, label, ask, path) {
    const b = h('button', { type: 'button', 'data-action': name }, label);
    b.addEventListener('click', async () => {
      const body = ask();
      if (body === false) return;
      b.disabled = true;
      try {
        await postJson(path, body);
        setStatus(`${label}: done`);
      } catch (e) {
        if (e instanceof AuthError) return showLogin(e.message);
        setStatus(`${label}: ${e.message}`, true);
      } finally {
        b.disabled = false;
        tick();
      }
    });
    return b;
  }

  // What the signed-in identity may do to job j: its owner and admins may
  // cancel it, hold and release it while it waits, requeue it while it runs.
  function jobActions(j) {
    const s = j.spec || {};
    if (!me || (!isAdmin() && me.user !== s.user)) return [];
    const path = (verb) => `/v1/jobs/${encodeURIComponent(j.id)}/${verb}`;
    const out = [];
    if (j.state === 'pending' || j.state === 'running') {
      out.push(actionButton('cancel', 'Cancel', confirmed(`Cancel job ${j.id}? ${j.state === 'running' ? 'Its processes are stopped.' : 'It leaves the queue.'}`), path('cancel')));
    }
    if (j.state === 'pending') {
      out.push(s.hold || j.reason === 'held'
        ? actionButton('release', 'Release', confirmed(`Release job ${j.id}? It may start at once.`), path('release'))
        : actionButton('hold', 'Hold', confirmed(`Hold job ${j.id}? It stays in the queue and does not start.`), path('hold')));
    }
    if (j.state === 'running') {
      out.push(actionButton('requeue', 'Requeue', confirmed(`Requeue job ${j.id}? It is stopped and queued again.`), path('requeue')));
    }
    return out;
  }

  // Drain and resume a node: admins only (the server checks too).
  function nodeActions(n) {
    if (!isAdmin()) return [];
    const path = (verb) => `/v1/nodes/${encodeURIComponent(n.name)}/${verb}`;
    if (n.state === 'up') {
      return [actionButton('drain', 'Drain', () => {
        const reason = window.prompt(`Drain ${n.name}: it finishes what runs and takes nothing new. Why?`, '');
        return reason === null ? false : { reason: reason || 'drained from the dashboard' };
      }, path('drain'))];
    }
    if (n.state === 'draining' || n.state === 'drained') {
      return [actionButton('resume', 'Resume', confirmed(`Resume ${n.name}? It takes jobs again.`), path('resume'))];
    }
    return [];
  }

  // Time series are optional (an older server has none, a new node has no
  // points yet): null stands for "no data yet"; only a refused token fails.
  async function getSeries(path) {
    try {
      return await getJson(path);
    } catch (e) {
      if (e instanceof AuthError) throw e;
      return null;
    }
  }

  function jobGpuCount(j) {
    const alloc = j.allocation || [];
    if (alloc.length) return alloc.reduce((n, a) => n + (a.gpus || []).length, 0);
    const s = j.spec || {};
    if (s.gpus) return s.gpus;
    if (s.gpus_per_node) return s.gpus_per_node * Math.max(1, s.nodes || 1);
    return 0;
  }

  function jobWhere(j) {
    const alloc = j.allocation || [];
    if (alloc.length) {
      return alloc.map((a, i) => [i ? ' ' : '', h('a', { href: `#/nodes/${encodeURIComponent(a.node)}` }, a.node),
        `:${formatGpuList(a.gpus || [])}`]);
    }
    if (j.planned_nodes) return h('span', { class: 'muted' }, `planned: ${j.planned_nodes.join(' ')}`);
    return '';
  }

  function jobTime(j, now) {
    const limit = j.time_limit_s || (j.spec || {}).time_limit_s;
    if (j.state === 'running' && j.start_time) {
      return `${fmtDuration(now - j.start_time)}${limit ? ` / ${fmtDuration(limit)}` : ''}`;
    }
    if (j.state === 'pending') {
      let text = `waiting ${fmtDuration(now - j.submit_time)}`;
      if (j.estimated_start) text += `, starts ≈ ${fmtClock(j.estimated_start)}`;
      return text;
    }
    if (j.start_time && j.end_time) return fmtDuration(j.end_time - j.start_time);
    return '–';
  }

  function jobUtil(j) {
    const e = j.efficiency;
    return e && typeof e.util_mean_pct === 'number' ? fmtPct(e.util_mean_pct) : '';
  }

  function jobReason(j) {
    if (!j.reason || j.reason === 'none') return '';
    return h('span', { title: j.reason_detail || '' }, j.reason,
      j.reason_detail ? h('div', { class: 'muted' }, j.reason_detail) : null);
  }

  // The job's "efficiency" object (util_mean_pct, mem_peak_mib, energy_wh, ...):
  // known names get words, and units come from the names' suffixes.
  const EFFICIENCY_LABELS = {
    util_mean_pct: 'Mean utilisation', util_peak_pct: 'Peak utilisation', mem_mean_mib: 'Mean memory used',
    mem_peak_mib: 'Peak memory used', energy_wh: 'Energy', samples: 'Samples',
    progress_rate: 'Progress (a second)', progress_samples: 'Progress reports',
  };
  function efficiencyLabel(key) {
    return EFFICIENCY_LABELS[key] || key.replace(/_(pct|mib|wh)$/, '').replace(/_/g, ' ');
  }
  function efficiencyValue(key, v) {
    if (typeof v !== 'number') return typeof v === 'object' ? JSON.stringify(v) : String(v);
    if (key.endsWith('_pct')) return fmtPct(v);
    if (key.endsWith('_mib')) return fmtGiB(v);
    if (key.endsWith('_wh')) return v >= 1000 ? `${(v / 1000).toFixed(2)} kWh` : `${v.toFixed(1)} Wh`;
    return fmtNum(v);
  }

  function jobLink(j) {
    return h('a', { href: `#/jobs/${j.id}` }, String(j.id));
  }

  // ---- charts (uPlot) --------------------------------------------------------

  // Aligned columns [xs, ys...] to [xs, max, mean, min] over the ys (or over
  // each group of columns: [xs, max1, mean1, min1, max2, ...]).
  function bandOf(table, groups = [table.length - 1]) {
    const [xs, ...cols] = table;
    const out = [xs];
    let first = 0;
    for (const n of groups) {
      const own = cols.slice(first, first + n);
      first += n;
      const [hi, mean, lo] = [[], [], []];
      for (let i = 0; i < xs.length; i++) {
        const v = own.map((c) => c[i]).filter((x) => x != null);
        hi.push(v.length ? Math.max(...v) : null);
        mean.push(v.length ? v.reduce((a, b) => a + b, 0) / v.length : null);
        lo.push(v.length ? Math.min(...v) : null);
      }
      out.push(hi, mean, lo);
    }
    return out;
  }
  const rgba = (hex, a) => `rgba(${[1, 3, 5].map((i) => parseInt(hex.substr(i, 2), 16)).join(', ')}, ${a})`;
  // Above this many GPUs a job's charts show a band instead of a line each.
  const BAND_ABOVE_GPUS = 8;

  // One uPlot chart in a box that shows "no data yet" until data comes.
  // Series are recreated only when their labels change; otherwise setData.
  // hoverText(i), when set, says what the point under the cursor (the i-th
  // time) hides, in a line below the chart.
  class Chart {
    constructor(parent, { title, yRange, fmt, height }) {
      this.yRange = yRange;
      this.fmt = fmt || fmtNum;
      this.height = height || 190;
      this.box = h('div', { class: 'chart' });
      this.empty = h('div', { class: 'nodata' }, 'no data yet');
      this.box.append(this.empty);
      this.hoverText = null;
      this.hoverLine = h('p', { class: 'muted chart-hover' });
      parent.append(h('div', null, title ? h('p', { class: 'chart-title' }, title) : null, this.box, this.hoverLine));
      this.u = null;
      this.key = '';
      this.xWindow = null;  // [from, to] in Unix seconds, or null: the data's own span
      this.observer = new ResizeObserver(() => {
        if (this.u && this.box.clientWidth > 0) this.u.setSize({ width: this.box.clientWidth, height: this.height });
      });
      this.observer.observe(this.box);
    }

    // labels: one per series; data: [xs, ys...] (uPlot's aligned columns).
    // bands: how many groups of three series (max, mean, min) are drawn as a
    // mean in a shaded min-max band each (for more GPUs than lines can
    // show); 0: a line per series.
    update(labels, data, bands = 0) {
      if (!data || !data[0] || data[0].length === 0 || typeof uPlot === 'undefined') {
        this.clear(typeof uPlot === 'undefined' ? 'charts are unavailable (uPlot did not load)'
          : this.xWindow ? 'no samples in this range' : 'no data yet');
        return;
      }
      const key = `${bands}\u0000${labels.join('\u0000')}`;
      if (this.u && key === this.key) {
        this.u.setData(data);
      } else {
        if (this.u) this.u.destroy();
        this.box.replaceChildren();
        this.key = key;
        this.u = new uPlot(this.options(labels, bands), data, this.box);
      }
      // The time axis: the view's window, else the data's span (a lone
      // point gets a minute either side rather than uPlot's years).
      const xs = data[0];
      let [lo, hi] = [xs[0], xs[xs.length - 1]];
      if (this.xWindow) [lo, hi] = [Math.min(lo, this.xWindow[0]), Math.max(hi, this.xWindow[1])];
      if (hi - lo < 1) [lo, hi] = [lo - 60, hi + 60];
      this.u.setScale('x', { min: lo, max: hi });
    }

    clear(message) {
      if (this.u) this.u.destroy();
      this.u = null;
      this.key = '';
      this.empty.textContent = message;
      if (!this.empty.isConnected) this.box.replaceChildren(this.empty);
    }

    options(labels, bands) {
      const fmt = this.fmt;
      const yRange = this.yRange;
      // In band mode series 3g+1..3g+3 are group g's max, mean and min.
      const colour = (i) => PALETTE[(bands ? Math.floor(i / 3) : i) % PALETTE.length];
      return {
        width: Math.max(240, this.box.clientWidth),
        height: this.height,
        series: [{}, ...labels.map((label, i) => ({
          label,
          stroke: bands && i % 3 !== 1 ? rgba(colour(i), 0.45) : colour(i),
          width: bands && i % 3 !== 1 ? 1 : 1.5,
          spanGaps: true,
          value: (u, v) => (v == null ? '–' : fmt(v)),
        }))],
        bands: Array.from({ length: bands }, (_, g) => ({ series: [3 * g + 1, 3 * g + 3], fill: rgba(colour(3 * g), 0.15) })),
        scales: {
          x: { time: true },
          y: { range: (u, lo, hi) => (yRange ? [yRange[0], Math.max(yRange[1], hi || 0)] : [0, hi > 0 ? hi * 1.1 : 1]) },
        },
        axes: [{}, { size: 56, values: (u, vals) => vals.map((v) => fmt(v)) }],
        hooks: {
          setCursor: [(u) => {
            const i = u.cursor.idx;
            this.hoverLine.textContent = this.hoverText && i != null ? this.hoverText(i) : '';
          }],
        },
      };
    }

    destroy() {
      this.observer.disconnect();
      if (this.u) this.u.destroy();
      this.u = null;
    }
  }

  // Aligns per-GPU point lists on one time axis: tables of [ts, ys] -> [ts, y1, y2, ...].
  function joinSeries(tables) {
    if (!tables.length) return null;
    if (tables.length === 1) return tables[0];
    return uPlot.join(tables);
  }

  // ---- views -----------------------------------------------------------------

  // The time range of the overview's and the nodes' charts, kept for the
  // tab: the last N seconds (following the present), or a custom [from, to].
  // Past 6 hours the server answers with 10-minute means, kept 7 days
  // (docs/api.md, "Telemetry series").
  const RANGES = [[15 * 60, 'last 15 min'], [3600, 'last hour'], [6 * 3600, 'last 6 hours'],
    [24 * 3600, 'last 24 hours'], [7 * 86400, 'last 7 days'], ['custom', 'custom…']];
  const RANGE_KEY = 'shoal.range';
  const CUSTOM_KEY = 'shoal.range.custom';
  let rangeKind = sessionStorage.getItem(RANGE_KEY) === 'custom' ? 'custom' : Number(sessionStorage.getItem(RANGE_KEY)) || 6 * 3600;
  let customRange = (() => {
    try {
      const [from, to] = JSON.parse(sessionStorage.getItem(CUSTOM_KEY));
      if (from < to) return [from, to];
    } catch (e) { /* none kept */ }
    return [Math.floor(nowS() - 86400), Math.floor(nowS())];
  })();
  // The range now: { since, until } in Unix seconds (until null: up to now).
  function timeRange() {
    if (rangeKind === 'custom') return { since: customRange[0], until: customRange[1] };
    return { since: Math.floor(nowS() - rangeKind), until: null };
  }
  const rangeQuery = (r) => `since=${r.since}${r.until != null ? `&until=${r.until}` : ''}`;
  // A datetime-local input's value for Unix seconds, and back (local time).
  const toLocalInput = (t) => {
    const d = new Date(t * 1000);
    return new Date(d.getTime() - d.getTimezoneOffset() * 60000).toISOString().slice(0, 16);
  };
  const fromLocalInput = (v) => Math.floor(new Date(v).getTime() / 1000);
  function rangePicker() {
    const select = h('select', { 'aria-label': 'time range', class: 'range' },
      RANGES.map(([k, label]) => h('option', { value: String(k), selected: k === rangeKind ? '' : null }, label)));
    const from = h('input', { type: 'datetime-local', 'aria-label': 'from', class: 'range-from', value: toLocalInput(customRange[0]) });
    const to = h('input', { type: 'datetime-local', 'aria-label': 'to', class: 'range-to', value: toLocalInput(customRange[1]) });
    const note = h('span', { class: 'muted range-note' });
    const custom = h('span', { class: 'range-custom', hidden: rangeKind === 'custom' ? null : '' }, from, ' – ', to, note);
    select.addEventListener('change', () => {
      rangeKind = select.value === 'custom' ? 'custom' : Number(select.value);
      sessionStorage.setItem(RANGE_KEY, String(rangeKind));
      custom.hidden = rangeKind !== 'custom';
      tick();
    });
    const setCustom = () => {
      const [f, t] = [fromLocalInput(from.value), fromLocalInput(to.value)];
      if (!(f < t)) {
        note.textContent = 'the start must be before the end';
        return;
      }
      note.textContent = '';
      customRange = [f, t];
      sessionStorage.setItem(CUSTOM_KEY, JSON.stringify(customRange));
      tick();
    };
    from.addEventListener('change', setCustom);
    to.addEventListener('change', setCustom);
    return h('span', { class: 'toolbar' }, select, custom);
  }
  // The x axis of a range: from its start, or from the first sample when the
  // server has less (so that minutes of data do not crowd the right edge).
  const rangeWindow = (r, firstT) => [firstT != null ? Math.max(r.since, firstT) : r.since, r.until ?? nowS()];

  // A view builds its page once (mount), then updates it on every poll
  // (refresh). destroy() releases its charts.
  class View {
    constructor() {
      this.charts = [];
    }
    chart(parent, opts) {
      const c = new Chart(parent, opts);
      this.charts.push(c);
      return c;
    }
    destroy() {
      for (const c of this.charts) c.destroy();
    }
  }

  class OverviewView extends View {
    mount(main) {
      this.figures = h('div', { class: 'figures' });
      this.models = h('tbody');
      this.nodes = h('div', { class: 'nodes', id: 'nodes' });
      const chartCard = h('div', { class: 'card', id: 'cluster-chart' },
        h('div', { class: 'toolbar' }, h('h2', { style: 'margin: 0' }, 'Cluster utilisation'), rangePicker()));
      this.clusterChart = this.chart(chartCard, { yRange: [0, 100], fmt: fmtPct, height: 200 });
      // Power budgets (docs/power.md): shown only when the server has some.
      this.powerCard = h('div', { class: 'card', id: 'power-budgets', hidden: true },
        h('h2', null, 'Power budgets'),
        h('p', { class: 'muted' }, 'kW: the draw the scheduler counts (idle nodes, running jobs at their expected power), what the GPUs measured, and the cap.'));
      this.powerCharts = new Map();
      const stops = Array.from({ length: 11 }, (_, i) => `${viridis(i / 10)} ${i * 10}%`).join(',');
      main.append(
        h('h1', null, 'Cluster'),
        h('div', { class: 'card' }, this.figures),
        this.powerCard,
        h('div', { class: 'grid2 even' },
          chartCard,
          h('div', { class: 'card' }, h('h2', null, 'GPUs by model'), h('div', { class: 'table-wrap' },
            h('table', { id: 'models' }, h('thead', null, h('tr', null, h('th', null, 'Model'), h('th', { class: 'num' }, 'Nodes'),
              h('th', { class: 'num' }, 'GPUs'), h('th', { class: 'num' }, 'Allocated'), h('th', { class: 'num' }, 'Unhealthy'),
              h('th', { class: 'num' }, 'Mean util.'), h('th', { class: 'num' }, 'Memory used'))), this.models)))),
        h('div', { class: 'card' },
          h('div', { class: 'toolbar', style: 'justify-content: space-between; margin-bottom: 8px' },
            h('h2', { style: 'margin: 0' }, 'Nodes'),
            h('div', { class: 'scale' }, 'GPU utilisation', h('span', null, '0%'),
              h('span', { class: 'bar', style: `background: linear-gradient(to right, ${stops})` }), h('span', null, '100%'),
              h('span', null, '· number: utilisation % · #N: job · dashed: free · !: unhealthy'))),
          this.nodes));
    }

    async refresh() {
      const admin = isAdmin();
      const range = timeRange();
      // The figures count jobs: no commands or environments, and an array's
      // waiting tasks as one object that lists them (docs/api.md).
      const [nodes, jobs, series, power] = await Promise.all([
        getJson('/v1/nodes'),
        getJson(`/v1/jobs?brief=1&arrays=collapsed${admin ? '&all=1' : ''}`),
        getSeries(`/v1/cluster/series?${rangeQuery(range)}`),
        getSeries(`/v1/power/series?${rangeQuery(range)}`),
      ]);
      this.renderPower(power, range);
      this.renderFigures(nodes.nodes, jobs.jobs);
      this.renderModels(nodes.nodes);
      this.renderNodes(nodes.nodes);
      const pts = (series && series.points) || [];
      this.clusterChart.xWindow = rangeWindow(range, pts.length ? pts[0][0] : null);
      this.clusterChart.update(['Mean GPU utilisation', 'GPUs allocated'],
        pts.length ? [pts.map((p) => p[0]), pts.map((p) => p[1]), pts.map((p) => (p[2] == null ? null : p[2] * 100))] : null);
    }

    // One chart per budget, in kW: expected, GPUs measured, and the cap.
    renderPower(power, range) {
      const budgets = (power && power.budgets) || [];
      this.powerCard.hidden = budgets.length === 0;
      for (const b of budgets) {
        let chart = this.powerCharts.get(b.name);
        if (!chart) {
          chart = this.chart(this.powerCard, { title: `${b.name} (cap ${fmtNum(b.cap_w / 1000)} kW)`, fmt: (v) => `${fmtNum(v)} kW`, height: 160 });
          this.powerCharts.set(b.name, chart);
        }
        const pts = b.points || [];
        chart.xWindow = rangeWindow(range, pts.length ? pts[0][0] : null);
        const kw = (w) => Math.round(w) / 1000;
        chart.update(['Expected (scheduler)', 'GPUs measured', 'Cap'], pts.length
          ? [pts.map((p) => p[0]), pts.map((p) => kw(p[1])), pts.map((p) => kw(p[2])), pts.map(() => kw(b.cap_w))] : null);
      }
    }

    renderFigures(nodes, jobs) {
      let gpus = 0, used = 0, utilSum = 0, utilN = 0;
      for (const n of nodes) {
        gpus += n.gpus.length;
        used += n.gpus_used || 0;
        for (const g of n.gpus) {
          if (g.telemetry) {
            utilSum += g.telemetry.util;
            utilN++;
          }
        }
      }
      const up = nodes.filter((n) => n.state === 'up').length;
      const count = (s) => jobs.reduce((n, j) => n + (j.state !== s ? 0 : j.pending_tasks ? j.pending_tasks.length : 1), 0);
      const fig = (value, label) => h('div', { class: 'figure' }, h('b', null, value), h('span', null, label));
      // The GPU figures are the whole cluster's; a user's job counts are
      // their own (the API lists only those), and say so.
      const whose = isAdmin() ? 'all users\' ' : 'your ';
      this.figures.replaceChildren(
        fig(`${up} / ${nodes.length}`, 'nodes up'),
        fig(`${used} / ${gpus}`, `GPUs allocated, all users (${gpus ? Math.round((100 * used) / gpus) : 0}%)`),
        fig(utilN ? fmtPct(utilSum / utilN) : '–', 'mean GPU utilisation'),
        fig(String(count('running')), `${whose}jobs running`),
        fig(String(count('pending')), `${whose}jobs pending`));
    }

    renderModels(nodes) {
      const byModel = new Map();
      for (const n of nodes) {
        const busy = new Set(n.jobs.flatMap((j) => parseGpuList(j.gpus)));
        for (const g of n.gpus) {
          const m = byModel.get(g.model) || { nodes: new Set(), gpus: 0, used: 0, sick: 0, util: 0, utilN: 0, memUsed: 0, mem: 0 };
          m.nodes.add(n.name);
          m.gpus++;
          if (busy.has(g.index)) m.used++;
          if (g.healthy === false) m.sick++;
          m.mem += g.memory_mib || 0;
          if (g.telemetry) {
            m.util += g.telemetry.util;
            m.utilN++;
            m.memUsed += g.telemetry.fb_used_mib || 0;
          }
          byModel.set(g.model, m);
        }
      }
      this.models.replaceChildren(...[...byModel.entries()].sort().map(([model, m]) => h('tr', null,
        h('td', { class: 'nowrap' }, model), h('td', { class: 'num' }, m.nodes.size), h('td', { class: 'num' }, m.gpus),
        h('td', { class: 'num' }, `${m.used} (${Math.round((100 * m.used) / m.gpus)}%)`), h('td', { class: 'num' }, m.sick),
        h('td', { class: 'num' }, m.utilN ? fmtPct(m.util / m.utilN) : '–'),
        h('td', { class: 'num nowrap' }, m.utilN ? `${Math.round(m.memUsed / 1024)} / ${Math.round(m.mem / 1024)} GiB` : '–'))));
      if (!byModel.size) this.models.replaceChildren(h('tr', null, h('td', { colspan: 7, class: 'muted' }, 'no nodes yet')));
    }

    renderNodes(nodes) {
      if (!nodes.length) {
        this.nodes.replaceChildren(h('div', { class: 'nodata' }, 'No node has registered yet.'));
        return;
      }
      this.nodes.replaceChildren(...nodes.map((n) => {
        const owner = new Map();
        for (const j of n.jobs) for (const i of parseGpuList(j.gpus)) owner.set(i, j);
        const models = [...new Set(n.gpus.map((g) => g.model))];
        const sick = n.gpus.filter((g) => g.healthy === false).length;
        const href = `#/nodes/${encodeURIComponent(n.name)}`;
        return h('div', { class: 'node-row', 'data-node': n.name },
          h('div', null,
            h('div', null, h('a', { class: 'node-name', href }, n.name), ' ', badge(n.state)),
            h('div', { class: 'node-meta' }, `${n.gpus.length} × ${models.join(', ') || 'no GPU'}`),
            h('div', { class: 'node-meta' }, `${n.gpus_used || 0}/${n.gpus.length} allocated`,
              sick ? h('span', { class: 'error' }, ` · ${sick} unhealthy`) : null)),
          h('div', { class: 'tiles' }, n.gpus.map((g) => gpuTile(n, g, owner.get(g.index), href))));
      }));
    }
  }

  function gpuTile(node, g, holder, href) {
    // Another user's job is "in use" to a user; admins see whose it is.
    const job = holder && (!me || isAdmin() || holder.user === me.user) ? holder : null;
    const t = g.telemetry;
    const util = t ? t.util : null;
    const classes = ['gpu-tile'];
    if (!t) classes.push('unknown');
    if (!holder) classes.push('free');
    if (g.healthy === false) classes.push('sick');
    const style = t ? `background:${viridis(util / 100)};color:${util < 55 ? '#fff' : '#111'}` : '';
    const tip = [`${node.name} GPU ${g.index} · ${g.model}`,
      t ? `utilisation ${fmtPct(util)} · memory ${fmtGiB(t.fb_used_mib)} of ${fmtGiB(g.memory_mib)} · ${Math.round(t.power_w)} W · ${Math.round(t.temp_c)} °C`
        : 'no telemetry yet',
      job ? `job ${job.job} (${job.user})` : holder ? 'in use by another user' : 'free',
      g.healthy === false ? `UNHEALTHY: ${g.health_reason || 'reported by the agent'}` : 'healthy'].join('\n');
    return h('a', { class: classes.join(' '), href, style, title: tip, 'data-gpu': g.index, 'aria-label': tip },
      h('span', { class: 'u' }, t ? Math.round(util) : '–'),
      h('span', { class: 'j' }, job ? `#${job.job}` : holder ? 'in use' : 'free'));
  }

  // A field of a job's spec, '' when it has none.
  const specField = (j, k) => (j.spec || {})[k] || '';

  // The queue's columns: header, sort key (null: not sortable), cell.
  const QUEUE_COLUMNS = [
    ['Job', (j) => j.id, (j) => jobLink(j)],
    ['Name', (j) => specField(j, 'name'), (j) => specField(j, 'name')],
    ['User', (j) => specField(j, 'user'), (j) => specField(j, 'user')],
    ['Account', (j) => specField(j, 'account'), (j) => specField(j, 'account') || '–'],
    ['Partition', (j) => specField(j, 'partition'), (j) => specField(j, 'partition') || '–'],
    ['QoS', (j) => specField(j, 'qos'), (j) => specField(j, 'qos') || '–'],
    ['State', (j) => j.state, (j) => [badge(j.state), j.idle ? [' ', badge('idle')] : null]],
    ['Reason', (j) => jobReason(j), (j) => jobReason(j)],
    ['GPUs', (j) => jobGpuCount(j), (j) => jobGpuCount(j)],
    ['Where', null, (j) => jobWhere(j)],
    ['Time', (j) => (j.state === 'running' ? j.start_time : j.estimated_start || j.submit_time) || 0, (j, now) => jobTime(j, now)],
    ['Util.', (j) => (j.efficiency || {}).util_mean_pct ?? -1, (j) => jobUtil(j)],
  ];

  // Finished array tasks as one row per array (`21_[0-49]`, counts by
  // state), in the order of their first task; single jobs as they are.
  function groupArrays(jobs) {
    const out = [];
    const byArray = new Map();
    for (const j of jobs) {
      if (j.array_job_id == null || j.array_task_id == null) {
        out.push({ job: j });
        continue;
      }
      let g = byArray.get(j.array_job_id);
      if (!g) {
        g = { array: j.array_job_id, tasks: [] };
        byArray.set(j.array_job_id, g);
        out.push(g);
      }
      g.tasks.push(j);
    }
    return out.map((g) => (g.tasks && g.tasks.length === 1 ? { job: g.tasks[0] } : g));
  }

  class JobsView extends View {
    mount(main) {
      this.filter = h('input', { type: 'search', placeholder: 'filter: id, name, user, account, partition, state', 'aria-label': 'filter jobs' });
      this.filter.addEventListener('input', () => this.render());
      this.count = h('span', { class: 'muted' });
      this.queue = h('tbody');
      this.finished = h('tbody');
      this.sort = { column: null, down: false };
      this.open = new Set();  // arrays shown task by task
      const numeric = (c) => /GPUs|Exit|Util/.test(c);
      const queueHead = h('thead', null, h('tr', null, QUEUE_COLUMNS.map(([name, key], i) => {
        if (!key) return h('th', null, name);
        const th = h('th', { class: `sortable${numeric(name) ? ' num' : ''}`, 'data-sort': name.toLowerCase(), title: `sort by ${name.toLowerCase()}` }, name);
        th.addEventListener('click', () => {
          this.sort = { column: i, down: this.sort.column === i ? !this.sort.down : false };
          this.render();
        });
        return th;
      })));
      this.queueHead = queueHead;
      const head = (...cols) => h('thead', null, h('tr', null, cols.map((c) => h('th', { class: numeric(c) ? 'num' : null }, c))));
      main.append(
        h('h1', null, 'Jobs'),
        h('div', { class: 'card' },
          h('div', { class: 'toolbar', style: 'margin-bottom: 8px' }, h('h2', { style: 'margin: 0' }, 'Queue'), this.filter, this.count),
          h('table', { id: 'queue' }, queueHead, this.queue)),
        h('div', { class: 'card' }, h('h2', null, 'Recently finished'),
          h('table', { id: 'finished' }, head('Job', 'Name', 'User', 'State', 'GPUs', 'Ended', 'Ran', 'Util.', 'Exit'), this.finished)));
    }

    async refresh() {
      const admin = isAdmin();
      const [queue, history] = await Promise.all([
        getJson(`/v1/jobs${admin ? '?all=1' : ''}`),
        getJson(`/v1/history?limit=200${admin ? '&all=1' : ''}`).catch((e) => {
          if (e instanceof AuthError) throw e;
          return { jobs: [] };
        }),
      ]);
      const order = { running: 0, pending: 1 };
      this.jobs = queue.jobs.slice().sort((a, b) => (order[a.state] ?? 2) - (order[b.state] ?? 2) || a.id - b.id);
      this.history = history.jobs;
      this.render();
    }

    render() {
      if (!this.jobs) return;
      const words = this.filter.value.trim().toLowerCase().split(/\s+/).filter(Boolean);
      const match = (j) => {
        const s = j.spec || {};
        const text = `${j.id} ${s.name || ''} ${s.user || ''} ${s.account || ''} ${s.partition || ''} ${s.qos || ''} ${j.state} ${j.reason || ''}`.toLowerCase();
        return words.every((w) => text.includes(w));
      };
      const now = nowS();
      const shown = this.jobs.filter(match);
      if (this.sort.column != null) {
        const key = QUEUE_COLUMNS[this.sort.column][1];
        const sign = this.sort.down ? -1 : 1;
        shown.sort((a, b) => {
          const x = key(a), y = key(b);
          return sign * (typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y))) || a.id - b.id;
        });
      }
      for (const [i, th] of [...this.queueHead.querySelectorAll('th')].entries()) {
        th.classList.toggle('sorted', this.sort.column === i);
        th.classList.toggle('down', this.sort.column === i && this.sort.down);
      }
      this.count.textContent = `${shown.length} of ${this.jobs.length} jobs`;
      this.queue.replaceChildren(...shown.map((j) => h('tr', { 'data-job': j.id },
        QUEUE_COLUMNS.map(([name, , cell]) => h('td', { class: /GPUs|Util/.test(name) ? 'num' : null }, cell(j, now))))));
      if (!shown.length) {
        this.queue.replaceChildren(h('tr', null, h('td', { colspan: QUEUE_COLUMNS.length, class: 'muted' },
          this.jobs.length ? 'no job matches the filter' : 'The queue is empty.')));
      }
      const finishedRow = (j, cls) => h('tr', { 'data-job': j.id, class: cls || null },
        h('td', null, jobLink(j)), h('td', null, (j.spec || {}).name || ''), h('td', null, (j.spec || {}).user || ''),
        h('td', null, badge(j.state)), h('td', { class: 'num' }, jobGpuCount(j)), h('td', null, fmtTime(j.end_time)),
        h('td', null, jobTime(j, now)), h('td', { class: 'num' }, jobUtil(j)), h('td', { class: 'num' }, j.exit_signal ? `signal ${j.exit_signal}` : j.exit_code ?? ''));
      const rows = [];
      for (const g of groupArrays(this.history.filter(match)).slice(0, 25)) {
        if (g.job) {
          rows.push(finishedRow(g.job));
          continue;
        }
        const ids = g.tasks.map((t) => t.array_task_id).sort((a, b) => a - b);
        const counts = new Map();
        for (const t of g.tasks) counts.set(t.state, (counts.get(t.state) || 0) + 1);
        const open = this.open.has(g.array);
        const toggle = h('button', { type: 'button', class: 'link', 'aria-expanded': String(open) },
          `${open ? '▾' : '▸'} ${g.array}_[${formatGpuList(ids)}]`);
        toggle.addEventListener('click', () => {
          if (this.open.has(g.array)) this.open.delete(g.array);
          else this.open.add(g.array);
          this.render();
        });
        const first = g.tasks[0];
        rows.push(h('tr', { 'data-array': g.array, class: 'array-row' },
          h('td', null, toggle), h('td', null, (first.spec || {}).name || ''), h('td', null, (first.spec || {}).user || ''),
          h('td', null, [...counts.entries()].flatMap(([st, n], i) => [i ? ' ' : '', badge(`${n} ${st}`, st)])),
          h('td', { class: 'num' }, g.tasks.reduce((n, t) => n + jobGpuCount(t), 0)),
          h('td', null, fmtTime(Math.max(...g.tasks.map((t) => t.end_time || 0)))),
          h('td', { class: 'muted' }, `${g.tasks.length} tasks`), h('td'), h('td')));
        if (open) for (const t of [...g.tasks].sort((a, b) => a.array_task_id - b.array_task_id)) rows.push(finishedRow(t, 'array-task'));
      }
      this.finished.replaceChildren(...rows);
      if (!rows.length) this.finished.replaceChildren(h('tr', null, h('td', { colspan: 9, class: 'muted' }, 'none')));
    }
  }

  // Finished jobs, as sacct users look at them: what each cost (GPU-hours,
  // energy) and how well it used its GPUs, filtered, and as CSV.
  const HISTORY_COLUMNS = [
    ['id', 'Job', (j) => j.id],
    ['name', 'Name', (j) => specField(j, 'name')],
    ['user', 'User', (j) => specField(j, 'user')],
    ['account', 'Account', (j) => specField(j, 'account')],
    ['partition', 'Partition', (j) => specField(j, 'partition')],
    ['state', 'State', (j) => j.state],
    ['gpus', 'GPUs', (j) => jobGpuCount(j)],
    ['start', 'Started', (j) => (j.start_time ? new Date(j.start_time * 1000).toISOString() : '')],
    ['end', 'Ended', (j) => (j.end_time ? new Date(j.end_time * 1000).toISOString() : '')],
    ['elapsed_s', 'Ran (s)', (j) => (j.start_time && j.end_time ? Math.round(j.end_time - j.start_time) : '')],
    ['gpu_hours', 'GPU-hours', (j) => ((j.gpu_seconds || 0) / 3600).toFixed(3)],
    ['util_mean_pct', 'GPU util. %', (j) => ((j.efficiency || {}).util_mean_pct != null ? Math.round(j.efficiency.util_mean_pct) : '')],
    ['energy_kwh', 'Energy kWh', (j) => ((j.efficiency || {}).energy_wh != null ? (j.efficiency.energy_wh / 1000).toFixed(3) : '')],
    ['exit', 'Exit', (j) => (j.exit_signal ? `signal ${j.exit_signal}` : j.exit_code ?? '')],
  ];

  function csvOf(rows) {
    // A leading = + - @ is kept from being read as a formula by a spreadsheet.
    const cell = (v) => {
      let t = String(v ?? '');
      if (/^[=+\-@]/.test(t)) t = `'${t}`;
      return /[",\n\r']/.test(t) ? `"${t.replace(/"/g, '""')}"` : t;
    };
    return [HISTORY_COLUMNS.map((c) => c[0]).join(','), ...rows.map((j) => HISTORY_COLUMNS.map((c) => cell(c[2](j))).join(','))]
      .join('\r\n') + '\r\n';
  }

  class HistoryView extends View {
    mount(main) {
      this.days = h('select', { 'aria-label': 'period', id: 'history-days' },
        [['1', 'last 24 hours'], ['7', 'last 7 days'], ['30', 'last 30 days'], ['0', 'all']].map(([v, t]) =>
          h('option', { value: v, selected: v === '7' ? '' : null }, t)));
      this.state = h('select', { 'aria-label': 'state', id: 'history-state' },
        ['', 'completed', 'failed', 'cancelled', 'timeout', 'node_fail', 'preempted'].map((v) => h('option', { value: v }, v || 'any state')));
      this.filter = h('input', { type: 'search', placeholder: 'filter: id, name, user, account', 'aria-label': 'filter history', id: 'history-filter' });
      this.csv = h('button', { type: 'button', id: 'history-csv' }, 'Download CSV');
      this.total = h('span', { class: 'muted', id: 'history-total' });
      this.rows = h('tbody');
      for (const e of [this.days, this.state]) e.addEventListener('change', () => tick());
      this.filter.addEventListener('input', () => this.render());
      this.csv.addEventListener('click', () => {
        const blob = new Blob([csvOf(this.shown || [])], { type: 'text/csv' });
        const a = h('a', { href: URL.createObjectURL(blob), download: 'shoal-history.csv' });
        document.body.append(a);
        a.click();
        a.remove();
        setTimeout(() => URL.revokeObjectURL(a.href), 1000);
      });
      main.append(h('h1', null, 'History'),
        h('div', { class: 'card' },
          h('div', { class: 'toolbar', style: 'margin-bottom: 8px' }, this.days, this.state, this.filter, this.csv, this.total),
          h('table', { id: 'history' }, h('thead', null, h('tr', null, HISTORY_COLUMNS.map(([, name]) =>
            h('th', { class: /GPU|Energy|Ran|Exit/.test(name) ? 'num' : null }, name)))), this.rows)));
    }

    async refresh() {
      const admin = isAdmin();
      const days = Number(this.days.value);
      const q = [`limit=10000`, admin ? 'all=1' : '', this.state.value ? `state=${this.state.value}` : '',
        days ? `since=${Math.floor(nowS() - days * 86400)}` : ''].filter(Boolean).join('&');
      this.jobs = (await getJson(`/v1/history?${q}`)).jobs;
      this.render();
    }

    render() {
      if (!this.jobs) return;
      const words = this.filter.value.trim().toLowerCase().split(/\s+/).filter(Boolean);
      this.shown = this.jobs.filter((j) => {
        const s = j.spec || {};
        const text = `${j.id} ${s.name || ''} ${s.user || ''} ${s.account || ''} ${s.partition || ''}`.toLowerCase();
        return words.every((w) => text.includes(w));
      });
      const gpuHours = this.shown.reduce((n, j) => n + (j.gpu_seconds || 0) / 3600, 0);
      const kwh = this.shown.reduce((n, j) => n + ((j.efficiency || {}).energy_wh || 0) / 1000, 0);
      this.total.textContent = `${this.shown.length} job${this.shown.length === 1 ? '' : 's'} · ${gpuHours.toFixed(2)} GPU-hours · ${kwh.toFixed(2)} kWh`;
      const shownRows = this.shown.slice(0, 500);
      this.rows.replaceChildren(...shownRows.map((j) => h('tr', { 'data-job': j.id },
        HISTORY_COLUMNS.map(([key, name, value]) => {
          if (key === 'id') return h('td', null, jobLink(j));
          if (key === 'state') return h('td', null, badge(j.state));
          if (key === 'start' || key === 'end') return h('td', { class: 'nowrap' }, fmtTime(key === 'start' ? j.start_time : j.end_time));
          return h('td', { class: /GPU|Energy|Ran|Exit/.test(name) ? 'num' : null }, value(j));
        }))));
      if (this.shown.length > shownRows.length) {
        this.rows.append(h('tr', null, h('td', { colspan: HISTORY_COLUMNS.length, class: 'muted' },
          `${this.shown.length - shownRows.length} more: narrow the filter, or download the CSV`)));
      }
      if (!this.shown.length) {
        this.rows.replaceChildren(h('tr', null, h('td', { colspan: HISTORY_COLUMNS.length, class: 'muted' }, 'no finished job matches')));
      }
    }
  }

  class JobView extends View {
    constructor(id) {
      super();
      this.id = id;
      this.stream = 'stdout';
      this.resetLog();
    }

    resetLog() {
      this.logOffset = null;
      this.logText = '';
      this.decoder = new TextDecoder();
    }

    mount(main) {
      this.title = h('h1', null, `Job ${this.id}`);
      this.fields = h('dl', { class: 'fields' });
      this.efficiency = h('div');
      const charts = h('div', { class: 'charts wide' });
      this.utilChart = this.chart(charts, { title: 'GPU utilisation (%)', yRange: [0, 100], fmt: fmtPct });
      this.memChart = this.chart(charts, { title: 'GPU memory used (GiB)', fmt: (v) => `${fmtNum(+v.toFixed(1))}` });
      const select = h('select', { 'aria-label': 'output stream' }, h('option', { value: 'stdout' }, 'stdout'),
        h('option', { value: 'stderr' }, 'stderr'));
      select.addEventListener('change', () => {
        this.stream = select.value;
        this.resetLog();
        this.log.textContent = '';
        tick();
      });
      this.logNote = h('span', { class: 'muted' });
      this.log = h('pre', { class: 'log', id: 'log' });
      this.actions = h('div', { class: 'toolbar actions', id: 'job-actions' });
      this.chartNote = h('p', { class: 'muted', id: 'job-chart-note' });
      main.append(this.title, this.actions,
        h('div', { class: 'grid2' },
          h('div', { class: 'card' }, this.fields),
          h('div', { class: 'card' }, h('h2', null, 'Efficiency'), this.efficiency)),
        h('div', { class: 'card', id: 'job-charts' }, h('h2', null, 'GPUs over time'), this.chartNote, charts),
        h('div', { class: 'card' }, h('div', { class: 'toolbar' }, h('h2', { style: 'margin: 0' }, 'Output (tail)'), select, this.logNote),
          this.log));
    }

    async refresh() {
      const [job, series] = await Promise.all([
        getJson(`/v1/jobs/${encodeURIComponent(this.id)}`),
        getSeries(`/v1/jobs/${encodeURIComponent(this.id)}/series`),
      ]);
      this.renderJob(job);
      const gpus = (series && series.gpus) || [];
      const withPoints = gpus.filter((g) => g.points && g.points.length);
      const labels = withPoints.map((g) => `${g.node}/${g.index}`);
      const span = job.start_time ? [job.start_time, job.end_time || nowS()] : null;
      this.utilChart.xWindow = span;
      this.memChart.xWindow = span;
      const util = joinSeries(withPoints.map((g) => [g.points.map((p) => p[0]), g.points.map((p) => p[1])]));
      const mem = joinSeries(withPoints.map((g) => [g.points.map((p) => p[0]), g.points.map((p) => p[2] / 1024)]));
      if (withPoints.length > BAND_ABOVE_GPUS) {
        this.drawBands(withPoints, labels, util, mem);
      } else {
        this.utilChart.update(labels, util);
        this.memChart.update(labels, mem);
        this.utilChart.hoverText = this.memChart.hoverText = null;
        this.chartNote.textContent = '';
      }
      await this.refreshLog(job);
    }

    // Many GPUs: the mean in its min-max band, one band per node when the job
    // spans up to 8 nodes (one band for all beyond), the GPU that lags most
    // named, and on hover the three GPUs lowest in utilisation (highest in
    // memory) at that time.
    drawBands(withPoints, labels, util, mem) {
      const nodes = [...new Set(withPoints.map((g) => g.node))];
      const perNode = nodes.length > 1 && nodes.length <= PALETTE.length;
      const groups = perNode ? nodes.map((n) => withPoints.filter((g) => g.node === n).length) : [withPoints.length];
      const names = perNode ? nodes.flatMap((n) => [`${n} max`, `${n} mean`, `${n} min`]) : ['max', 'mean', 'min'];
      // Columns grouped by node, in the order of `nodes` (the API lists a
      // node's GPUs together, so the order holds).
      this.utilChart.update(names, util && bandOf(util, groups), groups.length);
      this.memChart.update(names, mem && bandOf(mem, groups), groups.length);
      const extremes = (table, lowest, fmt) => (i) => {
        if (!table) return '';
        const at = labels.map((l, k) => [l, table[k + 1][i]]).filter(([, v]) => v != null);
        at.sort((a, b) => (lowest ? a[1] - b[1] : b[1] - a[1]));
        return `${fmtClock(table[0][i])}: ${lowest ? 'lowest' : 'highest'} ` +
          at.slice(0, 3).map(([l, v]) => `${l} ${fmt(v)}`).join(', ');
      };
      this.utilChart.hoverText = extremes(util, true, fmtPct);
      this.memChart.hoverText = extremes(mem, false, (v) => `${fmtNum(+v.toFixed(1))} GiB`);
      const means = withPoints.map((g) => [g, g.points.reduce((a, p) => a + p[1], 0) / g.points.length]);
      const [worst, worstMean] = means.reduce((a, b) => (b[1] < a[1] ? b : a));
      this.chartNote.textContent = `${withPoints.length} GPUs: the mean in its min–max band` +
        `${perNode ? `, one band per node (${nodes.length})` : ''}; ` +
        `lowest mean utilisation ${worst.node}/${worst.index} (${fmtPct(worstMean)}); hover for the worst GPUs at a time`;
    }

    renderJob(j) {
      const s = j.spec || {};
      this.title.replaceChildren(`Job ${j.id}${s.name ? ` · ${s.name}` : ''} `, badge(j.state), ...(j.idle ? [' ', badge('idle')] : []));
      this.actions.replaceChildren(...jobActions(j));
      document.title = `Job ${j.id} · Shoal`;
      const now = nowS();
      const rows = [
        ['User', s.user], ['Account', s.account || '–'], ['Partition', s.partition || '–'],
        ['State', j.state + (j.ending_as ? ` (ending as ${j.ending_as})` : '')],
        ['Reason', jobReason(j) || '–'],
        ['GPUs', `${jobGpuCount(j)}${s.nodes ? ` on ${s.nodes} node${s.nodes > 1 ? 's' : ''}` : ''}`],
        ['Where', jobWhere(j) || '–'],
        ['Submitted', fmtTime(j.submit_time)], ['Started', fmtTime(j.start_time)],
        ['Ended', fmtTime(j.end_time)], ['Time', jobTime(j, now)],
        ['Time limit', fmtDuration(j.time_limit_s || s.time_limit_s)],
        ['GPU time', j.gpu_seconds != null ? `${(j.gpu_seconds / 3600).toFixed(2)} GPU·h` : '–'],
        ['Exit', j.end_time ? (j.exit_signal ? `signal ${j.exit_signal}` : String(j.exit_code ?? '')) : '–'],
        ['Command', h('code', null, s.command || '')],
      ];
      // Under a speed-aware policy: the speed it is placed by on each GPU model, and whence.
      if (j.speeds && j.speeds.by_model) {
        const by = Object.entries(j.speeds.by_model).map(([m, v]) => `${m} ${fmtNum(v)}`).join(', ');
        rows.push(['Speeds', `${j.speeds.source}: ${by}`]);
      }
      this.fields.replaceChildren(...rows.flatMap(([k, v]) => [h('dt', null, k), h('dd', null, v ?? '–')]));
      const eff = j.efficiency;
      if (eff && typeof eff === 'object' && Object.keys(eff).length) {
        this.efficiency.replaceChildren(h('dl', { class: 'fields' },
          Object.entries(eff).flatMap(([k, v]) => [h('dt', null, efficiencyLabel(k)), h('dd', null, efficiencyValue(k, v))])));
      } else {
        this.efficiency.replaceChildren(h('div', { class: 'nodata' }, 'no data yet'));
      }
    }

    // Follows the job's output from its first node: the first read asks
    // only for the size, then the last LOG_TAIL_BYTES, then what is new.
    async refreshLog(job) {
      if (!job.start_time) {
        this.logNote.textContent = 'the job has not started';
        return;
      }
      const base = `/v1/jobs/${encodeURIComponent(this.id)}/log?stream=${this.stream}`;
      try {
        if (this.logOffset == null) {
          const probe = await request(`${base}&offset=${2 ** 50}`);
          const size = Number(probe.headers.get('X-Shoal-Size')) || 0;
          this.logOffset = Math.max(0, size - LOG_TAIL_BYTES);
          this.logText = this.logOffset > 0 ? '[… earlier output not shown]\n' : '';
        }
        const res = await request(`${base}&offset=${this.logOffset}`);
        const bytes = await res.arrayBuffer();
        this.logOffset += bytes.byteLength;
        if (bytes.byteLength) {
          const atBottom = this.log.scrollTop + this.log.clientHeight >= this.log.scrollHeight - 4;
          this.logText = (this.logText + this.decoder.decode(bytes, { stream: true })).slice(-LOG_TAIL_BYTES);
          this.log.textContent = this.logText;
          if (atBottom) this.log.scrollTop = this.log.scrollHeight;
        }
        const node = res.headers.get('X-Shoal-Node');
        this.logNote.textContent = `${this.logOffset} bytes${node ? ` · from ${node}` : ''}`;
        if (!this.logText) this.log.textContent = '';
      } catch (e) {
        if (e instanceof AuthError) throw e;
        this.logNote.textContent = `output unavailable: ${e.message}`;
      }
    }
  }

  // A node's last acceptance run (shoal bench --cluster): the verdict, when,
  // the summary, what failed and the job that ran it.
  function acceptanceOf(a) {
    if (!a) return 'never run (shoal bench --cluster)';
    return h('span', { id: 'acceptance' }, badge(a.passed ? 'passed' : 'failed', a.passed ? 'completed' : 'failed'),
      ` ${fmtTime(a.time)}`, a.job ? [' · job ', h('a', { href: `#/jobs/${a.job}` }, String(a.job))] : null,
      a.summary ? h('div', null, a.summary) : null,
      (a.failures || []).length ? h('ul', { class: 'failures' }, a.failures.map((f) => h('li', null, f))) : null);
  }

  class NodeView extends View {
    constructor(name) {
      super();
      this.name = name;
      this.gpuCharts = new Map();
    }

    mount(main) {
      this.title = h('h1', null, `Node ${this.name}`);
      this.actions = h('div', { class: 'toolbar actions', id: 'node-actions' });
      this.fields = h('dl', { class: 'fields' });
      this.gpus = h('tbody');
      this.chartGrid = h('div', { class: 'charts', id: 'gpu-charts' });
      const heat = h('div', { class: 'charts wide', id: 'node-power' });
      this.powerChart = this.chart(heat, { title: 'Power (W), per GPU', fmt: (v) => `${Math.round(v)} W` });
      this.tempChart = this.chart(heat, { title: 'Temperature (°C), per GPU', fmt: (v) => `${Math.round(v)} °C` });
      main.append(this.title, this.actions,
        h('div', { class: 'grid2' },
          h('div', { class: 'card' }, h('h2', null, 'GPUs now'),
            h('table', { id: 'node-gpus' }, h('thead', null, h('tr', null, ['GPU', 'Model', 'Health', 'Util.', 'Memory', 'Power',
              'Temp.', h('span', { title: 'ECC errors since the driver loaded: corrected / uncorrected' }, 'ECC'),
              h('span', { title: 'XID errors the driver reported, and the last one' }, 'XID'), 'Job']
              .map((c) => h('th', null, c)))), this.gpus)),
          h('div', { class: 'card' }, this.fields)),
        h('div', { class: 'card' }, h('div', { class: 'toolbar' },
          h('h2', { style: 'margin: 0' }, 'Per GPU: utilisation and memory used (%)'), rangePicker()), this.chartGrid),
        h('div', { class: 'card' }, h('h2', null, 'Power and temperature'), heat));
    }

    async refresh() {
      const path = `/v1/nodes/${encodeURIComponent(this.name)}`;
      const range = timeRange();
      const [n, series] = await Promise.all([getJson(path), getSeries(`${path}/series?${rangeQuery(range)}`)]);
      document.title = `${n.name} · Shoal`;
      this.title.replaceChildren(`Node ${n.name} `, badge(n.state));
      this.actions.replaceChildren(...nodeActions(n));
      const owner = new Map();
      for (const j of n.jobs) for (const i of parseGpuList(j.gpus)) owner.set(i, j);
      this.fields.replaceChildren(...[
        ['State', n.state], ['Address', n.address], ['Place', n.place || '–'],
        ['Labels', (n.labels || []).join(', ') || '–'], ['Partitions', (n.partitions || []).join(', ') || '–'],
        ['CPUs', n.cpus], ['Memory', fmtGiB(n.memory_mib)], ['Last heartbeat', fmtTime(n.last_seen)],
        ['Acceptance', acceptanceOf(n.acceptance)],
        ['Jobs', n.jobs.length ? n.jobs.map((j, i) => [i ? ', ' : '', h('a', { href: `#/jobs/${j.job}` }, String(j.job)),
          ` (${j.user}, GPUs ${j.gpus})`]) : 'none'],
      ].flatMap(([k, v]) => [h('dt', null, k), h('dd', null, v ?? '–')]));
      this.gpus.replaceChildren(...n.gpus.map((g) => {
        const t = g.telemetry;
        const job = owner.get(g.index);
        return h('tr', { 'data-gpu': g.index },
          h('td', null, g.index), h('td', null, g.model),
          h('td', null, g.healthy === false ? h('span', { title: g.health_reason || '' }, badge('unhealthy', 'sick')) : 'ok'),
          h('td', { class: 'num' }, t ? fmtPct(t.util) : '–'),
          h('td', { class: 'num' }, t ? `${fmtGiB(t.fb_used_mib)} / ${fmtGiB(g.memory_mib)}` : '–'),
          h('td', { class: 'num' }, t ? `${Math.round(t.power_w)} W` : '–'),
          h('td', { class: 'num' }, t ? `${Math.round(t.temp_c)} °C` : '–'),
          h('td', { class: `num${t && t.ecc_uncorrected > 0 ? ' bad' : ''}`, 'data-ecc': '' },
            t && t.ecc_corrected != null ? `${t.ecc_corrected} / ${t.ecc_uncorrected}` : '–'),
          h('td', { class: `num${t && t.xid_errors > 0 ? ' bad' : ''}`, 'data-xid': '' },
            t && t.xid_errors != null ? (t.xid_errors > 0 ? `${t.xid_errors} (last ${t.last_xid})` : '0') : '–'),
          h('td', null, job ? h('a', { href: `#/jobs/${job.job}` }, `${job.job}`) : ''));
      }));
      const byIndex = new Map(((series && series.gpus) || []).map((g) => [g.index, g.points || []]));
      const withPoints = [...byIndex.entries()].filter(([, p]) => p.length);
      const span = rangeWindow(range, withPoints.length ? Math.min(...withPoints.map(([, p]) => p[0][0])) : null);
      const labels = withPoints.map(([i]) => `GPU ${i}`);
      for (const [c, k] of [[this.powerChart, 3], [this.tempChart, 4]]) {
        c.xWindow = span;
        c.update(labels, withPoints.length ? joinSeries(withPoints.map(([, p]) => [p.map((x) => x[0]), p.map((x) => x[k])])) : null);
      }
      for (const g of n.gpus) {
        let c = this.gpuCharts.get(g.index);
        if (!c) {
          c = this.chart(this.chartGrid, { title: `GPU ${g.index} · ${g.model}`, yRange: [0, 100], fmt: fmtPct, height: 150 });
          this.gpuCharts.set(g.index, c);
        }
        c.xWindow = span;
        const pts = byIndex.get(g.index) || [];
        const mem = g.memory_mib || 1;
        c.update(['utilisation', 'memory used'],
          pts.length ? [pts.map((p) => p[0]), pts.map((p) => p[1]), pts.map((p) => (100 * p[2]) / mem)] : null);
      }
    }
  }

  // ---- the page ----------------------------------------------------------------

  const main = document.getElementById('main');
  const login = document.getElementById('login');
  const statusLine = document.getElementById('status');
  let me = null;        // {user, role} of the token
  let current = null;   // the mounted view
  let timer = null;
  let busy = false;
  let again = false;

  function setStatus(text, error) {
    statusLine.textContent = text;
    statusLine.classList.toggle('error', Boolean(error));
  }

  // `/#token=...` (the link `shoal up` prints): keep the token for this tab
  // and drop it from the address bar and the history.
  function takeTokenFromFragment() {
    const m = location.hash.match(/^#token=([^&]*)/);
    if (!m) return false;
    auth.set(decodeURIComponent(m[1]));
    me = null;
    history.replaceState(null, '', `${location.pathname}${location.search}#/`);
    return true;
  }

  function route() {
    const parts = location.hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
    if (parts[0] === 'jobs' && parts[1]) return { nav: 'jobs', view: new JobView(parts[1]) };
    if (parts[0] === 'jobs') return { nav: 'jobs', view: new JobsView() };
    if (parts[0] === 'history') return { nav: 'history', view: new HistoryView() };
    if (parts[0] === 'nodes' && parts[1]) return { nav: 'overview', view: new NodeView(parts[1]) };
    return { nav: 'overview', view: new OverviewView() };
  }

  function showLogin(message) {
    if (current) current.destroy();
    current = null;
    main.replaceChildren();
    login.hidden = false;
    document.getElementById('signout').hidden = true;
    document.getElementById('who').textContent = '';
    document.getElementById('login-error').textContent = message || '';
    document.getElementById('token-input').focus();
    setStatus('');
  }

  async function show() {
    if (!auth.token()) return showLogin('');
    if (!me) {
      try {
        me = await getJson('/v1/whoami');
      } catch (e) {
        if (e instanceof AuthError) {
          auth.clear();
          return showLogin('The server refused this token.');
        }
        setStatus(`cannot reach the server: ${e.message}`, true);
        clearTimeout(timer);
        timer = setTimeout(show, POLL_MS);
        return undefined;
      }
    }
    login.hidden = true;
    document.getElementById('signout').hidden = false;
    document.getElementById('who').textContent = `${me.user} (${me.role})`;
    if (current) current.destroy();
    main.replaceChildren();
    const r = route();
    for (const a of document.querySelectorAll('nav a')) a.classList.toggle('active', a.dataset.nav === r.nav);
    document.title = 'Shoal';
    current = r.view;
    current.mount(main);
    return tick();
  }

  // One poll of the current view; the next is due POLL_MS after it ends.
  async function tick() {
    clearTimeout(timer);
    if (busy) {
      again = true;
      return;
    }
    const view = current;
    if (!view) return;
    if (document.hidden) {
      timer = setTimeout(tick, POLL_MS);
      return;
    }
    busy = true;
    try {
      await view.refresh();
      if (view === current) setStatus(`updated ${new Date().toLocaleTimeString()}`);
    } catch (e) {
      if (e instanceof AuthError) {
        busy = false;
        auth.clear();
        me = null;
        showLogin('The server refused the token; sign in again.');
        return;
      }
      if (view === current) setStatus(e.message, true);
    }
    busy = false;
    timer = setTimeout(tick, again ? 0 : POLL_MS);
    again = false;
  }

  document.getElementById('login-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const input = document.getElementById('token-input');
    auth.set(input.value.trim());
    input.value = '';
    me = null;
    show();
  });
  document.getElementById('signout').addEventListener('click', () => {
    auth.clear();
    me = null;
    showLogin('');
  });
  window.addEventListener('hashchange', () => {
    takeTokenFromFragment();
    show();
  });
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden) tick();
  });

  takeTokenFromFragment();
  show();
})();
