// The tracking web UI: one page, embedded in the binary (no CDN, no build step). It reads the
// same REST API as MLflow's clients. Routes (in the URL's #fragment): experiments and models,
// an experiment's runs (sortable, filterable), a run (params, metrics with charts, tags,
// artifacts), a comparison of runs with overlaid curves, the model registry.
#include "track/ui.h"

namespace shoal::track {

const char* UiPage() {
  return R"html(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>shoal tracking</title>
<style>
body{font-family:system-ui,sans-serif;margin:0;color:#1d2733;background:#f6f8fa}
header{background:#1f3b57;color:#fff;padding:10px 20px;display:flex;gap:20px;align-items:center}
header a{color:#fff;text-decoration:none;font-weight:600}
main{padding:16px 20px}
table{border-collapse:collapse;background:#fff;margin:8px 0 16px}
th,td{border:1px solid #d8dee4;padding:4px 8px;font-size:13px;text-align:left}
th{background:#eef2f6;cursor:pointer;user-select:none}
h2{font-size:18px;margin:12px 0 6px}h3{font-size:15px;margin:12px 0 4px}
.charts{display:flex;flex-wrap:wrap;gap:12px}
.chart{background:#fff;border:1px solid #d8dee4}
.muted{color:#6a737d}.error{color:#b31d28}
input[type=text]{width:420px;padding:4px}
button{padding:4px 10px}
</style></head><body>
<header><a href="#/">shoal tracking</a><a href="#/">Experiments</a><a href="#/models">Models</a></header>
<main id="main">loading…</main>
<script>
const COLORS = ['#1f77b4','#d62728','#2ca02c','#ff7f0e','#9467bd','#8c564b','#e377c2','#17becf'];
const main = document.getElementById('main');
const esc = s => String(s).replace(/[&<>"']/g, c => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;',"'":'&#39;'}[c]));
const time = ms => ms ? new Date(ms).toISOString().replace('T',' ').slice(0,19) : '-';
const num = v => typeof v === 'number' ? (Math.abs(v) >= 1e4 || (v !== 0 && Math.abs(v) < 1e-3) ? v.toExponential(3) : +v.toFixed(4)) : v;

async function api(path, body) {
  const headers = {'Content-Type': 'application/json'};
  const token = localStorage.getItem('shoal-token');
  if (token) headers['Authorization'] = 'Bearer ' + token;
  const r = await fetch('/api/2.0/mlflow/' + path, body ? {method: 'POST', headers, body: JSON.stringify(body)} : {headers});
  if (r.status === 401) {
    const t = prompt('This server needs a bearer token:');
    if (t) { localStorage.setItem('shoal-token', t); return api(path, body); }
  }
  const j = await r.json();
  if (!r.ok) throw new Error(j.message || r.statusText);
  return j;
}

function table(columns, rows, id) {
  // columns: [{name, get(row) -> value, html(row) -> markup}]; click a header to sort.
  const t = document.createElement('table');
  if (id) t.id = id;
  let key = null, asc = true;
  const draw = () => {
    const sorted = key === null ? rows : [...rows].sort((a, b) => {
      const x = columns[key].get(a), y = columns[key].get(b);
      if (x === y) return 0;
      if (x === undefined || x === '') return 1;
      if (y === undefined || y === '') return -1;
      return (x < y ? -1 : 1) * (asc ? 1 : -1);
    });
    t.innerHTML = '<tr>' + columns.map((c, i) => `<th data-i="${i}">${esc(c.name)}${key === i ? (asc ? ' ▲' : ' ▼') : ''}</th>`).join('') + '</tr>' +
      sorted.map(r => '<tr>' + columns.map(c => `<td>${c.html ? c.html(r) : esc(c.get(r) ?? '')}</td>`).join('') + '</tr>').join('');
    t.querySelectorAll('th').forEach(th => th.onclick = () => { const i = +th.dataset.i; asc = key === i ? !asc : true; key = i; draw(); });
  };
  draw();
  return t;
}

// A line chart of series [{label, points: [[step, value]]}], step on the x axis.
function chart(title, series) {
  const W = 420, H = 240, L = 56, R = 12, T = 24, B = 34;
  const pts = series.flatMap(s => s.points).filter(p => isFinite(p[1]));
  if (!pts.length) return '';
  let [x0, x1] = [Math.min(...pts.map(p => p[0])), Math.max(...pts.map(p => p[0]))];
  let [y0, y1] = [Math.min(...pts.map(p => p[1])), Math.max(...pts.map(p => p[1]))];
  if (x0 === x1) { x0 -= 1; x1 += 1; }
  if (y0 === y1) { y0 -= Math.abs(y0) * 0.1 || 1; y1 += Math.abs(y1) * 0.1 || 1; }
  const X = x => L + (x - x0) / (x1 - x0) * (W - L - R), Y = y => H - B - (y - y0) / (y1 - y0) * (H - T - B);
  let svg = `<svg class="chart" data-metric="${esc(title)}" width="${W}" height="${H}" xmlns="http://www.w3.org/2000/svg">`;
  svg += `<text x="${W / 2}" y="16" text-anchor="middle" font-size="13">${esc(title)}</text>`;
  for (let k = 0; k <= 4; k++) {
    const y = y0 + (y1 - y0) * k / 4, x = x0 + (x1 - x0) * k / 4;
    svg += `<line x1="${L}" x2="${W - R}" y1="${Y(y)}" y2="${Y(y)}" stroke="#eee"/><text x="${L - 4}" y="${Y(y) + 4}" font-size="10" text-anchor="end">${num(y)}</text>`;
    svg += `<text x="${X(x)}" y="${H - B + 14}" font-size="10" text-anchor="middle">${Math.round(x)}</text>`;
  }
  svg += `<text x="${(L + W - R) / 2}" y="${H - 4}" font-size="11" text-anchor="middle">step</text>`;
  series.forEach((s, i) => {
    const p = s.points.filter(q => isFinite(q[1]));
    const d = p.map((q, j) => (j ? 'L' : 'M') + X(q[0]).toFixed(1) + ',' + Y(q[1]).toFixed(1)).join('');
    svg += `<path class="series" data-points="${p.length}" d="${d}" fill="none" stroke="${COLORS[i % COLORS.length]}" stroke-width="1.8"/>`;
    if (p.length === 1) svg += `<circle cx="${X(p[0][0])}" cy="${Y(p[0][1])}" r="3" fill="${COLORS[i % COLORS.length]}"/>`;
    if (series.length > 1) svg += `<text x="${L + 6}" y="${T + 12 + 12 * i}" font-size="10" fill="${COLORS[i % COLORS.length]}">${esc(s.label)}</text>`;
  });
  return svg + '</svg>';
}

async function history(runId, key) {
  const j = await api(`metrics/get-history?run_id=${encodeURIComponent(runId)}&metric_key=${encodeURIComponent(key)}`);
  return (j.metrics || []).map(m => [m.step, typeof m.value === 'number' ? m.value : NaN]);
}

async function experiments() {
  const j = await api('experiments/search', {max_results: 1000});
  main.innerHTML = '<h2>Experiments</h2>';
  main.append(table([
    {name: 'id', get: e => +e.experiment_id},
    {name: 'name', get: e => e.name, html: e => `<a href="#/experiments/${e.experiment_id}">${esc(e.name)}</a>`},
    {name: 'created', get: e => e.creation_time, html: e => time(e.creation_time)},
  ], j.experiments || [], 'experiments'));
}

async function runs(expId) {
  const e = (await api('experiments/get?experiment_id=' + expId)).experiment;
  main.innerHTML = `<h2>Experiment ${esc(e.name)}</h2>
    <p><input type="text" id="filter" placeholder="filter, e.g. metrics.val_loss < 0.3 and params.optimizer.lr = '0.001'">
    <button id="apply">Search</button> <button id="compare">Compare selected</button> <span id="err" class="error"></span></p><div id="runs"></div>`;
  const load = async () => {
    document.getElementById('err').textContent = '';
    let j;
    try { j = await api('runs/search', {experiment_ids: [expId], filter: document.getElementById('filter').value, max_results: 1000}); }
    catch (err) { document.getElementById('err').textContent = err.message; return; }
    const list = j.runs || [];
    const keys = [...new Set(list.flatMap(r => (r.data.metrics || []).map(m => m.key)))].sort();
    const metric = (r, k) => { const m = (r.data.metrics || []).find(m => m.key === k); return m ? m.value : undefined; };
    const cols = [
      {name: '', get: r => '', html: r => `<input type="checkbox" class="pick" value="${r.info.run_id}">`},
      {name: 'run', get: r => r.info.run_name, html: r => `<a href="#/runs/${r.info.run_id}">${esc(r.info.run_name)}</a>`},
      {name: 'status', get: r => r.info.status},
      {name: 'started', get: r => r.info.start_time, html: r => time(r.info.start_time)},
      ...keys.map(k => ({name: k, get: r => metric(r, k), html: r => esc(num(metric(r, k)) ?? '')})),
    ];
    const box = document.getElementById('runs');
    box.innerHTML = '';
    box.append(table(cols, list, 'runs-table'));
  };
  document.getElementById('apply').onclick = load;
  document.getElementById('compare').onclick = () => {
    const ids = [...document.querySelectorAll('.pick:checked')].map(c => c.value);
    if (ids.length) location.hash = '#/compare/' + ids.join(',');
  };
  await load();
}

async function run(runId) {
  const r = (await api('runs/get?run_id=' + runId)).run;
  const kv = list => table([{name: 'key', get: x => x.key}, {name: 'value', get: x => x.value}], list || []);
  main.innerHTML = `<h2>Run ${esc(r.info.run_name)}</h2><p class="muted">${esc(r.info.run_id)} · ${esc(r.info.status)} ·
    started ${time(r.info.start_time)} · <a href="#/experiments/${r.info.experiment_id}">experiment ${esc(r.info.experiment_id)}</a></p>
    <h3>Metrics</h3><div class="charts" id="charts"></div><div id="metrics"></div><h3>Params</h3><div id="params"></div>
    <h3>Tags</h3><div id="tags"></div><h3>Artifacts</h3><div id="artifacts"></div>`;
  document.getElementById('metrics').append(table([{name: 'key', get: m => m.key}, {name: 'latest', get: m => num(m.value)},
    {name: 'step', get: m => m.step}], r.data.metrics || [], 'metrics-table'));
  document.getElementById('params').append(kv(r.data.params));
  document.getElementById('tags').append(kv(r.data.tags));
  const files = [];
  const walk = async path => {
    const j = await api(`artifacts/list?run_id=${runId}&path=${encodeURIComponent(path)}`);
    for (const f of j.files || []) { if (f.is_dir) await walk(f.path); else files.push(f); }
  };
  await walk('');
  document.getElementById('artifacts').append(table([{name: 'path', get: f => f.path}, {name: 'bytes', get: f => f.file_size}], files));
  const charts = document.getElementById('charts');
  for (const m of r.data.metrics || []) {
    charts.insertAdjacentHTML('beforeend', chart(m.key, [{label: r.info.run_name, points: await history(runId, m.key)}]));
  }
}

async function compare(ids) {
  const list = await Promise.all(ids.map(id => api('runs/get?run_id=' + id).then(j => j.run)));
  const keys = [...new Set(list.flatMap(r => (r.data.metrics || []).map(m => m.key)))].sort();
  main.innerHTML = `<h2>Comparing ${list.length} runs</h2><p>${list.map((r, i) =>
    `<span style="color:${COLORS[i % COLORS.length]}">■</span> <a href="#/runs/${r.info.run_id}">${esc(r.info.run_name)}</a>`).join(' &nbsp; ')}</p>
    <div class="charts" id="charts"></div>`;
  const charts = document.getElementById('charts');
  for (const k of keys) {
    const series = await Promise.all(list.map(async r => ({label: r.info.run_name, points: await history(r.info.run_id, k)})));
    charts.insertAdjacentHTML('beforeend', chart(k, series));
  }
}

async function models() {
  const j = await api('registered-models/search?max_results=1000');
  main.innerHTML = '<h2>Registered models</h2><div id="models"></div>';
  const rows = [];
  for (const m of j.registered_models || []) {
    const v = await api('model-versions/search?filter=' + encodeURIComponent(`name='${m.name}'`));
    for (const x of v.model_versions || []) rows.push(x);
  }
  document.getElementById('models').append(table([
    {name: 'model', get: v => v.name}, {name: 'version', get: v => +v.version},
    {name: 'aliases', get: v => (v.aliases || []).join(', ')},
    {name: 'run', get: v => v.run_id, html: v => v.run_id ? `<a href="#/runs/${v.run_id}">${esc(v.run_id.slice(0, 8))}</a>` : ''},
    {name: 'created', get: v => v.creation_timestamp, html: v => time(v.creation_timestamp)},
    {name: 'source', get: v => v.source},
  ], rows, 'models-table'));
}

async function route() {
  const h = location.hash.replace(/^#\/?/, '').split('/');
  try {
    if (h[0] === 'experiments' && h[1]) await runs(h[1]);
    else if (h[0] === 'runs' && h[1]) await run(h[1]);
    else if (h[0] === 'compare' && h[1]) await compare(h[1].split(','));
    else if (h[0] === 'models') await models();
    else await experiments();
    document.body.dataset.ready = '1';
  } catch (err) {
    main.innerHTML = `<p class="error">${esc(err.message)}</p>`;
    document.body.dataset.ready = 'error';
  }
}
window.onhashchange = route;
route();
</script></body></html>
)html";
}

}  // namespace shoal::track
