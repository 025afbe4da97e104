// The shapes of GET /console/api/stats (docs/CONSOLE.md) and what the
// dashboard derives from two polls: rates, windowed hit rate and percentiles.
import { Hist, histDelta, quantile } from './histogram';

export interface Tier { name: string; hit_tokens: number; blocks: number; bytes: number }
export interface EngineStats {
  requests_running: number; requests_waiting: number; kv_usage: number; kv_capacity_tokens: number;
  prefix_cache_queries: number; prefix_cache_hits: number; prompt_tokens: number; generation_tokens: number;
  requests_finished: number; requests_cancelled: number; requests_failed: number; requests_rejected: number;
  preemptions: number; tiers: Tier[]; ttft_seconds: Hist; itl_seconds: Hist; e2e_seconds: Hist; queue_seconds: Hist;
}
export interface ReplicaView {
  id: string; model: string; deployment: string; version: string; url?: string; role?: string;
  healthy: boolean; circuit: string; eligible: boolean; active_requests: number; ejections: number;
  requests: Record<string, number>; upstream_errors: number;
  cached_tokens?: { predicted: number; reported: number; prompt: number; responses: number };
  engine?: EngineStats | null; engine_error?: string;
}
// As GET /admin/rollouts (gateway/rollout_controller.cc RolloutStatus::ToJson).
export interface Rollout { model: string; state: string; active: boolean; from_version: string; to_version: string;
  step: number; steps: number[]; percent: number; reason: string | null }
export interface StatsAnswer {
  kind: 'serve' | 'gateway'; time_ms: number; model?: string; engine?: EngineStats;
  replicas?: ReplicaView[]; rollouts?: Rollout[]; route_errors?: Record<string, number>;
}

// What a gateway dashboard looks at: one model's replicas, one replica, or
// all ("" = any).
export interface Scope { model: string; replica: string }
export const ALL: Scope = { model: '', replica: '' };

// The replicas in `scope`.
export function replicasOf(a: StatsAnswer, scope: Scope): ReplicaView[] {
  return (a.replicas ?? []).filter(r => (!scope.model || r.model === scope.model) &&
                                        (!scope.replica || r.id === scope.replica));
}

// Every engine in the answer (of the replicas in `scope` on a gateway) as
// one: sums, KV usage weighted by capacity.
export function combinedEngine(a: StatsAnswer, scope: Scope = ALL): EngineStats | null {
  const engines: EngineStats[] = a.engine ? [a.engine]
    : replicasOf(a, scope).map(r => r.engine).filter((e): e is EngineStats => !!e);
  if (engines.length === 0) return null;
  if (engines.length === 1) return engines[0];
  const sum = (f: (e: EngineStats) => number) => engines.reduce((s, e) => s + f(e), 0);
  const hsum = (f: (e: EngineStats) => Hist): Hist => {
    const first = f(engines[0]);
    const out: Hist = { bounds: first.bounds, counts: first.counts.map(() => 0), sum: 0, count: 0 };
    for (const e of engines) {
      const h = f(e);
      if (h.counts.length !== out.counts.length) continue;
      h.counts.forEach((c, i) => { out.counts[i] += c; });
      out.sum += h.sum;
      out.count += h.count;
    }
    return out;
  };
  const capacity = sum(e => e.kv_capacity_tokens);
  const tiers = new Map<string, Tier>();
  for (const e of engines) for (const t of e.tiers) {
    const x = tiers.get(t.name) ?? { name: t.name, hit_tokens: 0, blocks: 0, bytes: 0 };
    x.hit_tokens += t.hit_tokens; x.blocks += t.blocks; x.bytes += t.bytes;
    tiers.set(t.name, x);
  }
  return {
    requests_running: sum(e => e.requests_running), requests_waiting: sum(e => e.requests_waiting),
    kv_usage: capacity ? sum(e => e.kv_usage * e.kv_capacity_tokens) / capacity : 0, kv_capacity_tokens: capacity,
    prefix_cache_queries: sum(e => e.prefix_cache_queries), prefix_cache_hits: sum(e => e.prefix_cache_hits),
    prompt_tokens: sum(e => e.prompt_tokens), generation_tokens: sum(e => e.generation_tokens),
    requests_finished: sum(e => e.requests_finished), requests_cancelled: sum(e => e.requests_cancelled),
    requests_failed: sum(e => e.requests_failed), requests_rejected: sum(e => e.requests_rejected),
    preemptions: sum(e => e.preemptions), tiers: [...tiers.values()],
    ttft_seconds: hsum(e => e.ttft_seconds), itl_seconds: hsum(e => e.itl_seconds),
    e2e_seconds: hsum(e => e.e2e_seconds), queue_seconds: hsum(e => e.queue_seconds),
  };
}

export interface Sample { t: number; engine: EngineStats | null; gatewayErrors: number }

// One poll seen through `scope`: the gateway's own routing errors count only
// when nothing narrows the view (they belong to no replica).
export function sampleOf(a: StatsAnswer, t: number, scope: Scope): Sample {
  const routeErrors = scope.model || scope.replica ? 0 : Object.values(a.route_errors ?? {}).reduce((s, v) => s + v, 0);
  return { t, engine: combinedEngine(a, scope),
           gatewayErrors: routeErrors + replicasOf(a, scope).reduce((s, r) => s + (r.upstream_errors ?? 0), 0) };
}

// What the charts plot at sample `i` of `history` (rates over the window of
// `window` samples before it).
export interface Derived {
  running: number | null; waiting: number | null; kvUsagePct: number | null;
  hitRatePct: number | null; promptTps: number | null; genTps: number | null;
  ttftP50: number | null; ttftP95: number | null; itlP50: number | null; itlP95: number | null;
  errorsPerS: number | null;
}

export function derive(history: Sample[], i: number, window: number): Derived {
  const cur = history[i];
  const prev = history[Math.max(0, i - window)];
  const e = cur.engine;
  const p = prev.engine;
  const dt = (cur.t - prev.t) / 1000;
  const out: Derived = { running: null, waiting: null, kvUsagePct: null, hitRatePct: null, promptTps: null,
    genTps: null, ttftP50: null, ttftP95: null, itlP50: null, itlP95: null, errorsPerS: null };
  if (!e) return out;
  out.running = e.requests_running;
  out.waiting = e.requests_waiting;
  out.kvUsagePct = e.kv_usage * 100;
  if (p && dt > 0 && prev !== cur) {
    const q = e.prefix_cache_queries - p.prefix_cache_queries;
    out.hitRatePct = q > 0 ? (100 * (e.prefix_cache_hits - p.prefix_cache_hits)) / q : null;
    out.promptTps = (e.prompt_tokens - p.prompt_tokens) / dt;
    out.genTps = (e.generation_tokens - p.generation_tokens) / dt;
    const ttft = histDelta(p.ttft_seconds, e.ttft_seconds);
    const itl = histDelta(p.itl_seconds, e.itl_seconds);
    const ms = (v: number | null) => (v === null ? null : v * 1000);
    out.ttftP50 = ms(quantile(ttft, 0.5));
    out.ttftP95 = ms(quantile(ttft, 0.95));
    out.itlP50 = ms(quantile(itl, 0.5));
    out.itlP95 = ms(quantile(itl, 0.95));
    const errs = (x: EngineStats) => x.requests_failed + x.requests_rejected;
    out.errorsPerS = (errs(e) - errs(p) + cur.gatewayErrors - prev.gatewayErrors) / dt;
  }
  return out;
}
