#!/usr/bin/env node
// Load generator for `pagoda serve` (any OpenAI-compatible /v1/completions
// server): for each concurrency level, starts that many streaming requests at
// once, each with a unique token-id prompt of exactly --prompt-tokens tokens
// (BOS included), and reports aggregate generation throughput (generated
// tokens / wall time of the level), mean / max time to first token (send ->
// first streamed text) and the p50 / p95 inter-token latency (gaps between
// streamed text events of one request, pooled over the level).
// --prefix-test instead measures TTFT of a --prefix-tokens prompt with a cold
// cache, then of the same prefix + a few new tokens (cache warm).
// Node >= 18, no dependencies. Prints one JSON object per line to stdout
// (bench/serve_bench.sh turns them into tables) and progress to stderr.
//
// Usage: node bench/serve_load.mjs --url http://127.0.0.1:8000 [--levels 1,4,16,64]
//          [--prompt-tokens 200] [--max-tokens 128] [--reps 1] [--seed 1] [--vocab 32000]
//          [--bos 1] [--warmup 1] [--ignore-eos] [--label NAME] [--json-schema FILE]
//        node bench/serve_load.mjs --url ... --prefix-test [--prefix-tokens 2000] [--suffix-tokens 8]
//        node bench/serve_load.mjs --table < results.jsonl   (markdown tables, medians over reps)

import { parseArgs, splitMix64 } from './bench_util.mjs';

const args = parseArgs(process.argv.slice(2));
const url = args.url ?? 'http://127.0.0.1:8000';
const levels = (args.levels ?? '1,4,16,64').split(',').map(Number);
const promptTokens = Number(args['prompt-tokens'] ?? 200);
const maxTokens = Number(args['max-tokens'] ?? 128);
const reps = Number(args.reps ?? 1);
const vocab = Number(args.vocab ?? 32000);
const bos = Number(args.bos ?? 1);
const warmup = Number(args.warmup ?? 1);
// --json-schema FILE: every request is constrained by response_format
// json_schema (grammar masks in the decoder), for constrained-vs-free runs.
const constraint = args['json-schema']
  ? { type: 'json_schema',
      json_schema: { name: 'bench', schema: JSON.parse((await import('node:fs')).readFileSync(args['json-schema'], 'utf8')) } }
  : null;
const nextRandom = splitMix64(BigInt(Number(args.seed ?? 1)) * 0x9e3779b97f4a7c15n + 1n);



// n token ids, BOS first; ids 0..2 (unk, bos, eos) and the 256 byte tokens
// are avoided so every prompt is ordinary text.
function randomPrompt(n, withBos = true) {
  const ids = withBos ? [bos] : [];
  while (ids.length < n) ids.push(259 + Number(nextRandom() % BigInt(vocab - 259)));
  return ids;
}

// One streaming completion. Returns timings (ms, performance.now clock) and
// the server's usage.
async function streamCompletion(prompt, nGen, constrained = true) {
  const body = {
    prompt,
    max_tokens: nGen,
    temperature: 0,
    stream: true,
    stream_options: { include_usage: true },
  };
  if (args['ignore-eos']) body.ignore_eos = true;
  if (constraint && constrained) body.response_format = constraint;
  const t0 = performance.now();
  const res = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  const times = [];  // arrival of each event carrying text
  let usage = null;
  let finish = null;
  let buf = '';
  const decoder = new TextDecoder();
  for await (const chunk of res.body) {
    const now = performance.now();
    buf += decoder.decode(chunk, { stream: true });
    let sep;
    while ((sep = buf.indexOf('\n\n')) >= 0) {
      const event = buf.slice(0, sep);
      buf = buf.slice(sep + 2);
      for (const line of event.split('\n')) {
        if (!line.startsWith('data:')) continue;
        const data = line.slice(5).trim();
        if (data === '[DONE]') continue;
        const j = JSON.parse(data);
        if (j.error) throw new Error(`stream error: ${JSON.stringify(j.error)}`);
        if (j.usage) usage = j.usage;
        for (const c of j.choices ?? []) {
          if (c.text) times.push(now);
          if (c.finish_reason) finish = c.finish_reason;
        }
      }
    }
  }
  const t1 = performance.now();
  return { t0, t1, times, usage, finish };
}

function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

async function runLevel(n) {
  const prompts = [];
  for (let i = 0; i < n; ++i) prompts.push(randomPrompt(promptTokens));
  const start = performance.now();
  const results = await Promise.all(prompts.map((p) => streamCompletion(p, maxTokens)));
  const wall = (performance.now() - start) / 1000;
  let generated = 0;
  let prompted = 0;
  let short = 0;
  const ttft = [];
  const gaps = [];
  let events = 0;
  for (const r of results) {
    generated += r.usage?.completion_tokens ?? 0;
    prompted += r.usage?.prompt_tokens ?? 0;
    if ((r.usage?.completion_tokens ?? 0) !== maxTokens) ++short;
    ttft.push(((r.times[0] ?? r.t1) - r.t0) / 1000);
    for (let i = 1; i < r.times.length; ++i) gaps.push((r.times[i] - r.times[i - 1]) / 1000);
    events += r.times.length;
  }
  gaps.sort((a, b) => a - b);
  const mean = (a) => a.reduce((x, y) => x + y, 0) / a.length;
  return {
    kind: 'level',
    label: args.label ?? '',
    concurrency: n,
    prompt_tokens: prompted / n,
    completion_tokens: generated,
    requests_short: short,  // completion_tokens != max_tokens (an early stop)
    finish_reasons: [...new Set(results.map((r) => r.finish))].join(','),
    wall_s: wall,
    agg_tok_s: generated / wall,
    ttft_mean_s: mean(ttft),
    ttft_max_s: Math.max(...ttft),
    itl_p50_s: percentile(gaps, 50),
    itl_p95_s: percentile(gaps, 95),
    text_events_per_token: events / generated,
    req_time_mean_s: mean(results.map((r) => (r.t1 - r.t0) / 1000)),
  };
}

async function prefixTest() {
  const nPrefix = Number(args['prefix-tokens'] ?? 2000);
  const nSuffix = Number(args['suffix-tokens'] ?? 8);
  const prefix = randomPrompt(nPrefix);
  const cold = await streamCompletion(prefix, 1);
  const warm = await streamCompletion(prefix.concat(randomPrompt(nSuffix, false)), 1);
  // A third, unrelated prompt of the same length: cold again (the first
  // request's figure includes nothing else, this one checks it).
  const cold2 = await streamCompletion(randomPrompt(nPrefix + nSuffix), 1);
  const t = (r) => ((r.times[0] ?? r.t1) - r.t0) / 1000;
  return {
    kind: 'prefix',
    prefix_tokens: nPrefix,
    suffix_tokens: nSuffix,
    ttft_cold_s: t(cold),
    ttft_warm_s: t(warm),
    ttft_cold2_s: t(cold2),
    cached_tokens_warm: warm.usage?.prompt_tokens_details?.cached_tokens ?? null,
    ratio: t(cold) / t(warm),
  };
}

function median(a) {
  const s = [...a].sort((x, y) => x - y);
  return s[Math.floor((s.length - 1) / 2)];  // lower median for even counts
}

// Reads the JSON lines of earlier runs from stdin and prints markdown tables.
async function table() {
  let text = '';
  for await (const c of process.stdin) text += c;
  const rows = text.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
  const levelRows = rows.filter((r) => r.kind === 'level');
  const f = (x, d) => x.toFixed(d);
  const cell = (rs, key, d, scale = 1) => {
    const v = rs.map((r) => r[key] * scale);
    return v.length > 1 ? `${f(median(v), d)} [${v.map((x) => f(x, d)).join(', ')}]` : f(v[0], d);
  };
  if (levelRows.length) {
    console.log('| streams | aggregate gen tok/s | mean TTFT s | max TTFT s | p50 ITL ms | p95 ITL ms | mean request s | short requests |');
    console.log('|---|---|---|---|---|---|---|---|');
    for (const n of [...new Set(levelRows.map((r) => r.concurrency))]) {
      const rs = levelRows.filter((r) => r.concurrency === n);
      console.log(`| ${n} | ${cell(rs, 'agg_tok_s', 2)} | ${cell(rs, 'ttft_mean_s', 2)} | ${cell(rs, 'ttft_max_s', 2)} | ` +
                  `${cell(rs, 'itl_p50_s', 0, 1000)} | ${cell(rs, 'itl_p95_s', 0, 1000)} | ${cell(rs, 'req_time_mean_s', 1)} | ` +
                  `${rs.map((r) => r.requests_short).join(', ')} |`);
    }
  }
  for (const r of rows.filter((x) => x.kind === 'prefix')) {
    console.log(`\nprefix ${r.prefix_tokens} + ${r.suffix_tokens} tokens: TTFT cold ${f(r.ttft_cold_s, 3)} s, ` +
                `warm ${f(r.ttft_warm_s, 3)} s (cached_tokens ${r.cached_tokens_warm}), ratio ${f(r.ratio, 1)}x; ` +
                `unrelated cold prompt ${f(r.ttft_cold2_s, 3)} s`);
  }
}

async function main() {
  if (args.table) return table();
  // Unconstrained: a schema's shortest document may not fit in 4 tokens (a 400).
  for (let i = 0; i < warmup; ++i) await streamCompletion(randomPrompt(16), 4, false);
  if (args['prefix-test']) {
    console.log(JSON.stringify(await prefixTest()));
    return;
  }
  for (let rep = 0; rep < reps; ++rep) {
    for (const n of levels) {
      const r = await runLevel(n);
      r.rep = rep;
      console.error(`rep ${rep} c=${n}: ${r.agg_tok_s.toFixed(2)} tok/s, TTFT mean ${r.ttft_mean_s.toFixed(2)} s, ` +
                    `ITL p95 ${(r.itl_p95_s * 1000).toFixed(0)} ms, wall ${r.wall_s.toFixed(1)} s, short ${r.requests_short}`);
      console.log(JSON.stringify(r));
    }
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
