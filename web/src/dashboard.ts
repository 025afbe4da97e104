// Dashboard: polls GET /console/api/stats every second and charts requests
// running and waiting, KV cache usage, prefix-cache hit rate, throughput,
// TTFT and ITL percentiles and errors over the last five minutes; on a
// gateway also each replica (health, circuit, load, routing, predicted vs
// reported cached tokens) and the rollouts, with filters for one model or
// one replica and a view with one line per replica.
import { api } from './api';
import { LiveChart, SeriesSpec } from './chart';
import { append, clear, field, h, input, notice, select, table } from './dom';
import { PollHistory } from './poll_history';
import { Derived, replicasOf, ReplicaView, Scope, StatsAnswer } from './stats';

const POLL_MS = 1000;
const KEEP = 300;        // samples (five minutes)
const WINDOW = 5;        // samples a rate or percentile spans

function fmt(v: number | null | undefined, digits = 1, unit = ''): string {
  return v === null || v === undefined || !Number.isFinite(v) ? '–' : `${v.toFixed(digits)}${unit}`;
}

// A chart and the figures it draws: one line each, or one each per replica.
interface ChartDef { name: string; title: string; unit: string; lines: Array<[string, (d: Derived) => number | null]> }
const CHARTS: ChartDef[] = [
  { name: 'requests', title: 'Requests running / waiting', unit: '',
    lines: [['running', d => d.running], ['waiting', d => d.waiting]] },
  { name: 'kv', title: 'KV cache usage', unit: '%', lines: [['usage', d => d.kvUsagePct]] },
  { name: 'hit-rate', title: `Prefix-cache hit rate (last ${WINDOW} s)`, unit: '%', lines: [['hit rate', d => d.hitRatePct]] },
  { name: 'throughput', title: 'Throughput (tokens/s)', unit: '',
    lines: [['generation', d => d.genTps], ['prompt', d => d.promptTps]] },
  { name: 'ttft', title: `Time to first token (ms, last ${WINDOW} s)`, unit: '',
    lines: [['p50', d => d.ttftP50], ['p95', d => d.ttftP95]] },
  { name: 'itl', title: `Inter-token latency (ms, last ${WINDOW} s)`, unit: '',
    lines: [['p50', d => d.itlP50], ['p95', d => d.itlP95]] },
  { name: 'errors', title: 'Errors per second', unit: '', lines: [['errors', d => d.errorsPerS]] },
];

export function dashboardPage(root: HTMLElement): () => void {
  const history = new PollHistory(KEEP, WINDOW);
  const status = h('div', { class: 'page-status', 'data-testid': 'dash-status' });
  const tiles = h('div', { class: 'tiles' });
  const charts = CHARTS.map(c => new LiveChart(c.name, c.title, c.unit, c.lines.map(([label]) => label)));
  const gatewayBox = h('div', { class: 'gateway-views' });
  // On a gateway: the charts, tiles and rows of one model's replicas, of one
  // replica, or of all; and the charts with one line per replica.
  const modelFilter = select([['', 'all models']], { id: 'dash-model', 'aria-label': 'Model' });
  const replicaFilter = select([['', 'all replicas']], { id: 'dash-replica', 'aria-label': 'Replica' });
  const split = input({ type: 'checkbox', id: 'dash-split' });
  const filterRow = h('div', { class: 'row', hidden: true }, field('Model', modelFilter), field('Replica', replicaFilter),
    h('label', { class: 'check' }, split, ' One line per replica'));
  const scope = (): Scope => ({ model: modelFilter.value, replica: replicaFilter.value });
  const rerender = () => { const a = history.latest; if (a) { syncReplicas(a); render(a); } };
  for (const control of [modelFilter, replicaFilter, split]) control.addEventListener('change', rerender);
  append(root, h('h1', { class: 'page-title' }, 'Dashboard'), status, filterRow, tiles,
         h('div', { class: 'charts' }, ...charts.map(c => c.el)), gatewayBox);

  function tile(id: string, label: string, value: string, raw: number | null | undefined, sub?: string) {
    return h('div', { class: 'tile', 'data-testid': `tile-${id}`, 'data-value': raw ?? '' },
      h('span', { class: 'tile-label' }, label), h('span', { class: 'tile-value' }, value),
      sub ? h('span', { class: 'tile-sub' }, sub) : null);
  }

  function render(a: StatsAnswer) {
    const view = history.series(scope());
    const e = view.samples[view.samples.length - 1].engine;
    const d = view.derived[view.derived.length - 1];
    clear(tiles);
    const lifetime = e && e.prefix_cache_queries > 0 ? (100 * e.prefix_cache_hits) / e.prefix_cache_queries : null;
    append(tiles,
      tile('running', 'Running', fmt(d.running, 0), d.running),
      tile('waiting', 'Waiting', fmt(d.waiting, 0), d.waiting),
      tile('kv', 'KV cache', fmt(d.kvUsagePct, 1, '%'), d.kvUsagePct,
           e ? `of ${e.kv_capacity_tokens.toLocaleString()} tokens` : undefined),
      tile('hit-rate', 'Prefix hit rate', fmt(d.hitRatePct, 1, '%'), d.hitRatePct, `lifetime ${fmt(lifetime, 1, '%')}`),
      tile('hit-rate-lifetime', 'Prefix hits (lifetime)', fmt(lifetime, 1, '%'), lifetime,
           e ? `${e.prefix_cache_hits.toLocaleString()} of ${e.prefix_cache_queries.toLocaleString()} tokens` : undefined),
      tile('tier-hits', 'Tier hits', e ? e.tiers.reduce((s, t) => s + t.hit_tokens, 0).toLocaleString() : '–',
           e ? e.tiers.reduce((s, t) => s + t.hit_tokens, 0) : null,
           e && e.tiers.length ? e.tiers.map(t => `${t.name} ${t.hit_tokens}`).join(', ') : 'tokens restored (no tier)'),
      tile('throughput', 'Generation', fmt(d.genTps, 1, ' tok/s'), d.genTps),
      tile('ttft', 'TTFT p50', fmt(d.ttftP50, 0, ' ms'), d.ttftP50),
      tile('errors', 'Errors', e ? String(e.requests_failed + e.requests_rejected) : '–',
           e ? e.requests_failed + e.requests_rejected : null,
           e ? `${e.requests_cancelled} cancelled, ${e.preemptions} preemptions` : undefined));
    // One line per figure, or (split) per replica in the scope and figure:
    // a colour per replica, the second figure of a pair dashed.
    const x = history.times();
    const perReplica = split.checked && a.kind === 'gateway';
    const views: Array<[string, Derived[]]> = perReplica
      ? replicasOf(a, scope()).map(r => [r.id, history.series({ model: '', replica: r.id }).derived])
      : [['', view.derived]];
    CHARTS.forEach((def, i) => {
      const series: SeriesSpec[] = views.flatMap(([id], k) => def.lines.map(([label], j) =>
        (perReplica ? { label: `${id} ${label}`, color: k, dashed: j > 0 } : { label, color: j })));
      charts[i].update(x, views.flatMap(([, ds]) => def.lines.map(([, f]) => ds.map(f))), series);
    });
    renderGateway(a);
  }

  function renderGateway(a: StatsAnswer) {
    clear(gatewayBox);
    if (a.kind === 'serve') {
      append(gatewayBox, h('p', { class: 'muted' }, `pagoda serve · model ${a.model ?? ''}`));
      return;
    }
    const rows = replicasOf(a, scope()).map((r: ReplicaView) => [
      r.id, r.model, r.deployment,
      h('span', { class: r.healthy ? 'ok' : 'bad' }, r.healthy ? 'healthy' : 'unhealthy'),
      h('span', { class: r.circuit === 'closed' ? 'ok' : 'bad' }, r.circuit),
      String(r.active_requests),
      Object.entries(r.requests ?? {}).map(([k, v]) => `${k} ${v}`).join(', ') || '0',
      String(r.upstream_errors ?? 0),
      r.cached_tokens ? `${r.cached_tokens.predicted} / ${r.cached_tokens.reported}` : '–',
      r.engine ? `${r.engine.requests_running} / ${r.engine.requests_waiting}` : (r.engine_error ?? '–'),
      r.engine ? fmt(r.engine.kv_usage * 100, 1, '%') : '–',
      r.engine && r.engine.prefix_cache_queries
        ? fmt((100 * r.engine.prefix_cache_hits) / r.engine.prefix_cache_queries, 1, '%') : '–',
    ]);
    append(gatewayBox, h('h2', {}, 'Replicas and routing'),
      h('div', { class: 'table-wrap' }, table(['replica', 'model', 'deployment', 'health', 'circuit', 'active',
        'routed (by status)', 'upstream errors', 'cached tokens predicted / reported', 'running / waiting',
        'KV usage', 'prefix hits'], rows, { 'data-testid': 'replicas' })));
    const ro = (a.rollouts ?? []).map(r => [r.model, r.state, r.from_version, r.to_version,
      h('span', {}, h('progress', { max: 100, value: r.percent, 'aria-label': `${r.model} rollout progress` }),
        ` ${r.percent}% (step ${Math.min(r.step + 1, r.steps.length)} of ${r.steps.length})`),
      r.reason ?? '']);
    append(gatewayBox, h('h2', {}, 'Rollouts'),
      ro.length ? h('div', { class: 'table-wrap' }, table(['model', 'state', 'from', 'to', 'new version traffic', 'reason'],
                                                         ro, { 'data-testid': 'rollouts' }))
                : h('p', { class: 'muted' }, 'No rollout.'));
  }

  // Sets `filter`'s options to `values` (after its "all" option), keeping
  // the choice while it is still offered.
  function setOptions(filter: HTMLSelectElement, all: string, values: Array<[string, string]>) {
    const have = [...filter.options].map(o => o.value).filter(Boolean);
    if (have.join('\n') === values.map(([v]) => v).join('\n')) return;
    const current = filter.value;
    clear(filter);
    for (const [v, t] of [['', all], ...values]) filter.appendChild(h('option', { value: v }, t));
    filter.value = values.some(([v]) => v === current) ? current : '';
  }

  function syncFilters(a: StatsAnswer) {
    if (a.kind !== 'gateway') return;
    filterRow.hidden = false;
    const models = [...new Set((a.replicas ?? []).map(r => r.model))].sort();
    setOptions(modelFilter, 'all models', models.map(m => [m, m]));
    syncReplicas(a);
  }

  // The replica filter offers the replicas of the model picked.
  function syncReplicas(a: StatsAnswer) {
    const replicas = replicasOf(a, { model: modelFilter.value, replica: '' }).map(r => r.id).sort();
    setOptions(replicaFilter, 'all replicas', replicas.map(id => [id, id]));
  }

  let busy = false;
  let stopped = false;
  async function poll() {
    if (busy || stopped || document.hidden) return;
    busy = true;
    try {
      const a = await api.get<StatsAnswer>('/console/api/stats');
      if (stopped) return;
      clear(status);
      history.push(a);
      syncFilters(a);
      render(a);
    } catch (e) {
      clear(status);
      status.appendChild(notice('error', `Stats: ${(e as Error).message.replace(/\.$/, '')}; retrying every second.`));
    } finally {
      busy = false;
    }
  }
  void poll();
  const timer = window.setInterval(() => void poll(), POLL_MS);
  return () => { stopped = true; window.clearInterval(timer); charts.forEach(c => c.destroy()); };
}
