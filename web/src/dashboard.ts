// Dashboard: polls GET /console/api/stats every second and charts requests
// running and waiting, KV cache usage, prefix-cache hit rate, throughput,
// TTFT and ITL percentiles and errors over the last five minutes; on a
// gateway also each replica (health, circuit, load, routing, predicted vs
// reported cached tokens) and the rollouts.
import { api } from './api';
import { LiveChart } from './chart';
import { append, clear, field, h, notice, select, table } from './dom';
import { combinedEngine, derive, Derived, replicasOf, ReplicaView, Sample, StatsAnswer } from './stats';

const POLL_MS = 1000;
const KEEP = 300;        // samples (five minutes)
const WINDOW = 5;        // samples a rate or percentile spans

function fmt(v: number | null | undefined, digits = 1, unit = ''): string {
  return v === null || v === undefined || !Number.isFinite(v) ? '–' : `${v.toFixed(digits)}${unit}`;
}

export function dashboardPage(root: HTMLElement): () => void {
  const history: Sample[] = [];
  const derived: Derived[] = [];
  const status = h('div', { class: 'page-status', 'data-testid': 'dash-status' });
  const tiles = h('div', { class: 'tiles' });
  const charts = {
    requests: new LiveChart('requests', 'Requests running / waiting', '', ['running', 'waiting']),
    kv: new LiveChart('kv', 'KV cache usage', '%', ['usage']),
    hit: new LiveChart('hit-rate', `Prefix-cache hit rate (last ${WINDOW} s)`, '%', ['hit rate']),
    tps: new LiveChart('throughput', 'Throughput (tokens/s)', '', ['generation', 'prompt']),
    ttft: new LiveChart('ttft', `Time to first token (ms, last ${WINDOW} s)`, '', ['p50', 'p95']),
    itl: new LiveChart('itl', `Inter-token latency (ms, last ${WINDOW} s)`, '', ['p50', 'p95']),
    errors: new LiveChart('errors', 'Errors per second', '', ['errors']),
  };
  const gatewayBox = h('div', { class: 'gateway-views' });
  // On a gateway: the charts and tiles of one model's replicas, or of all.
  const modelFilter = select([['', 'all models']], { id: 'dash-model', 'aria-label': 'Model' });
  const filterRow = h('div', { class: 'row', hidden: true }, field('Model', modelFilter));
  modelFilter.addEventListener('change', () => { history.length = 0; derived.length = 0; void poll(); });
  append(root, h('h1', { class: 'page-title' }, 'Dashboard'), status, filterRow, tiles,
         h('div', { class: 'charts' }, ...Object.values(charts).map(c => c.el)), gatewayBox);

  function tile(id: string, label: string, value: string, raw: number | null | undefined, sub?: string) {
    return h('div', { class: 'tile', 'data-testid': `tile-${id}`, 'data-value': raw ?? '' },
      h('span', { class: 'tile-label' }, label), h('span', { class: 'tile-value' }, value),
      sub ? h('span', { class: 'tile-sub' }, sub) : null);
  }

  function render(a: StatsAnswer) {
    const e = history[history.length - 1].engine;
    const d = derived[derived.length - 1];
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
    const x = history.map(s => s.t / 1000);
    const col = (f: (v: Derived) => number | null) => derived.map(f);
    charts.requests.update(x, [col(v => v.running), col(v => v.waiting)]);
    charts.kv.update(x, [col(v => v.kvUsagePct)]);
    charts.hit.update(x, [col(v => v.hitRatePct)]);
    charts.tps.update(x, [col(v => v.genTps), col(v => v.promptTps)]);
    charts.ttft.update(x, [col(v => v.ttftP50), col(v => v.ttftP95)]);
    charts.itl.update(x, [col(v => v.itlP50), col(v => v.itlP95)]);
    charts.errors.update(x, [col(v => v.errorsPerS)]);
    renderGateway(a);
  }

  function renderGateway(a: StatsAnswer) {
    clear(gatewayBox);
    if (a.kind === 'serve') {
      append(gatewayBox, h('p', { class: 'muted' }, `pagoda serve · model ${a.model ?? ''}`));
      return;
    }
    const rows = replicasOf(a, modelFilter.value).map((r: ReplicaView) => [
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

  function syncModels(a: StatsAnswer) {
    if (a.kind !== 'gateway') return;
    filterRow.hidden = false;
    const models = [...new Set((a.replicas ?? []).map(r => r.model))].sort();
    const have = [...modelFilter.options].map(o => o.value).filter(Boolean);
    if (have.join('\n') === models.join('\n')) return;
    const current = modelFilter.value;
    clear(modelFilter);
    for (const [v, t] of [['', 'all models'], ...models.map(m => [m, m])]) modelFilter.appendChild(h('option', { value: v }, t));
    modelFilter.value = models.includes(current) ? current : '';
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
      syncModels(a);
      const model = modelFilter.value;
      const gatewayErrors = (model ? 0 : Object.values(a.route_errors ?? {}).reduce((s, v) => s + v, 0)) +
        replicasOf(a, model).reduce((s, r) => s + (r.upstream_errors ?? 0), 0);
      history.push({ t: a.time_ms || Date.now(), engine: combinedEngine(a, model), gatewayErrors });
      if (history.length > KEEP) history.shift();
      derived.length = 0;
      for (let i = 0; i < history.length; ++i) derived.push(derive(history, i, WINDOW));
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
  return () => { stopped = true; window.clearInterval(timer); Object.values(charts).forEach(c => c.destroy()); };
}
