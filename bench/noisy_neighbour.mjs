#!/usr/bin/env node
// Noisy neighbour and provisioned throughput, in wall-clock time, against
// `pagoda serve --db` (the control plane inside the server, fair scheduling
// on: docs/CONTROL_PLANE.md, docs/SCHEDULING.md). Each phase runs on a fresh
// server it starts, with tenants a, b, c (serverless) and p (provisioned),
// one API key each, made through the admin API (so each phase's /admin/sla
// figures are its own):
//   1. alone:  b and c each send --rate requests/s (open loop, c half an
//              interval after b) for --seconds, streamed.
//   2. noisy:  the same b and c schedule while a sends --flood times their
//              rate (one body per request), past what the engine serves.
//   3. p alone: p keeps --prov-concurrency requests in flight (closed loop)
//              for --prov-seconds.
//  3b. ceiling: p as in 3, at priority 1 throughout (a reservation it never
//              reaches), while a floods: the most a reservation can deliver
//              here; --reserve-fraction of it is the reservation of phase 4.
//   4. p reserved + flood: p's reservation set (PUT /admin/reservations on
//              the running server), then p as in 3 while a floods; p's
//              tokens/s over the phase's last 60 s against its reservation.
//   5. (--compare) the same without a reservation: what fair share alone
//              gives p.
// Requests are /v1/completions with token-id prompts of --prompt-tokens and
// --max-tokens generated (ignore_eos), so every request costs the same.
// TTFT = send -> first streamed choice (client side), and the server's
// p50 from /admin/sla (request arrival -> first token, without this
// process's own delays). Reports b's and c's median TTFT alone and with a
// flooding and their ratio (target <= 1.5), p's achieved / reserved (target
// >= 0.9), and the saturation (a's statuses, the engine's waiting queue
// sampled from /metrics).
// Node >= 20, no dependencies. Progress on stderr, one JSON object on stdout.
//
// Usage: node bench/noisy_neighbour.mjs --bin build/bin/pagoda --model M.gguf [--threads 2]
//          [--max-running 16] [--max-waiting 8192] [--rate 2] [--flood 10] [--seconds 30]
//          [--prompt-tokens 64] [--max-tokens 32] [--vocab 512]
//          [--prov-concurrency 16] [--prov-seconds 120] [--reserve-fraction 0.75] [--compare]
//          [--only noisy|provisioned]   (phases 1-2, or 3-5; default all) [--extra="more serve flags"]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { parseArgs, quantile, splitMix64 } from './bench_util.mjs';

const args = parseArgs(process.argv.slice(2));
const bin = args.bin ?? 'build/bin/pagoda';
const model = args.model;
if (!model) throw new Error('--model is required');
const threads = Number(args.threads ?? 2);
const maxRunning = Number(args['max-running'] ?? 16);
const maxWaiting = Number(args['max-waiting'] ?? 8192);
const rate = Number(args.rate ?? 2);
const flood = Number(args.flood ?? 10);
const seconds = Number(args.seconds ?? 30);
const promptTokens = Number(args['prompt-tokens'] ?? 64);
const maxTokens = Number(args['max-tokens'] ?? 32);
const vocab = Number(args.vocab ?? 512);
const provConcurrency = Number(args['prov-concurrency'] ?? 16);
const provSeconds = Number(args['prov-seconds'] ?? 120);
const reserveFraction = Number(args['reserve-fraction'] ?? 0.75);
const ADMIN = 'noisy-neighbour-bench-admin-key';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (...a) => console.error('[noisy]', ...a);

function freePort() {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

const nextRandom = splitMix64(0x5eedn);
// Token ids above the specials (0..2); each prompt unique, so no prefix hits.
function prompt() {
  const ids = [1];
  while (ids.length < promptTokens) ids.push(3 + Number(nextRandom() % BigInt(vocab - 3)));
  return ids;
}

async function startServer(dir) {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const serveArgs = ['serve', '-m', model, '--port', String(port), '-t', String(threads), '--served-model-name', 'm',
                     '--max-running', String(maxRunning), '--max-waiting', String(maxWaiting),
                     '--db', `sqlite://${join(dir, 'control.db')}`, '--admin-key-env', 'NOISY_ADMIN_KEY',
                     '--allow-insecure-keys', '--scheduling', 'fair'];
  if (args.extra) serveArgs.push(...String(args.extra).split(' ').filter(Boolean));
  log(`${bin} ${serveArgs.join(' ')}`);
  const proc = spawn(bin, serveArgs, { stdio: ['ignore', 'ignore', 'pipe'],
                                       env: { ...process.env, NOISY_ADMIN_KEY: ADMIN } });
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  for (let i = 0; i < 600; ++i) {
    if (proc.exitCode !== null) throw new Error(`pagoda serve exited: ${stderr}`);
    try { if ((await fetch(`${base}/health`)).ok) return { proc, base }; } catch {}
    await sleep(100);
  }
  proc.kill('SIGKILL');
  throw new Error(`pagoda serve did not become healthy: ${stderr}`);
}

async function admin(base, method, path, body) {
  const r = await fetch(`${base}${path}`, {
    method, headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  if (!r.ok) throw new Error(`${method} ${path}: HTTP ${r.status}: ${text}`);
  return JSON.parse(text);
}

// One completion as `key`: streamed (TTFT measured) or one body (less work
// for this process: the flood and the provisioned tenant). { status, ttft
// (ms), tokens, end (ms) }; an aborted request resolves with status 0.
async function completion(base, key, { signal, stream = true } = {}) {
  const t0 = performance.now();
  const out = { status: 0, ttft: null, tokens: 0, start: t0, end: t0 };
  try {
    const body = { model: 'm', prompt: prompt(), max_tokens: maxTokens, temperature: 0, ignore_eos: true };
    if (stream) Object.assign(body, { stream: true, stream_options: { include_usage: true } });
    const res = await fetch(`${base}/v1/completions`, {
      method: 'POST', signal,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify(body),
    });
    out.status = res.status;
    if (res.status !== 200 || !stream) {
      const text = await res.text();
      if (res.status === 200) out.tokens = JSON.parse(text).usage.completion_tokens;
      out.end = performance.now();
      return out;
    }
    const decoder = new TextDecoder();
    let buf = '';
    for await (const chunk of res.body) {
      buf += decoder.decode(chunk, { stream: true });
      let sep;
      while ((sep = buf.indexOf('\n\n')) >= 0) {
        const event = buf.slice(0, sep);
        buf = buf.slice(sep + 2);
        const data = event.startsWith('data: ') ? event.slice(6) : '';
        if (!data.startsWith('{')) continue;
        const j = JSON.parse(data);
        if (j.usage) out.tokens = j.usage.completion_tokens;
        if (out.ttft === null && j.choices?.length) out.ttft = performance.now() - t0;
      }
    }
  } catch (e) {
    if (e.name !== 'AbortError') throw e;
    out.status = 0;
  }
  out.end = performance.now();
  return out;
}

// Open loop: `perSecond` requests/s as `key` from `offsetMs` for `ms`.
async function openLoop(base, key, perSecond, ms, offsetMs, { signal, stream = true } = {}) {
  const results = [];
  const start = performance.now();
  const interval = 1000 / perSecond;
  const pending = [];
  for (let k = 0; ; ++k) {
    const at = offsetMs + k * interval;
    if (at >= ms) break;
    const wait = start + at - performance.now();
    if (wait > 0) await sleep(wait);
    if (signal?.aborted) break;
    pending.push(completion(base, key, { signal, stream }).then((r) => results.push(r)));
  }
  await Promise.all(pending);
  return results;
}

// Closed loop: `concurrency` requests in flight as `key` for `ms`.
async function closedLoop(base, key, concurrency, ms) {
  const results = [];
  const until = performance.now() + ms;
  const worker = async () => {
    while (performance.now() < until) {
      const r = await completion(base, key, { stream: false });
      results.push(r);
      if (r.status !== 200) await sleep(50);  // a refused request (429: the queue is full) backs off
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return results;
}

// Samples pagoda:num_requests_waiting every 500 ms until `stop.done`.
async function sampleWaiting(base, stop) {
  const xs = [];
  while (!stop.done) {
    try {
      const text = await (await fetch(`${base}/metrics`)).text();
      const m = text.match(/^pagoda:num_requests_waiting\{[^}]*\} (\S+)$/m);
      if (m) xs.push(Number(m[1]));
    } catch {}
    await sleep(500);
  }
  return xs;
}

const ttfts = (rs) => rs.filter((r) => r.status === 200 && r.ttft !== null).map((r) => r.ttft);
const summary = (xs) => ({ n: xs.length, p50_ms: quantile(xs, 0.5), p90_ms: quantile(xs, 0.9) });
const round = (x, d = 3) => (x === null ? null : Number(x.toFixed(d)));
const statuses = (rs) => rs.reduce((m, r) => ({ ...m, [r.status]: (m[r.status] ?? 0) + 1 }), {});

// Completion tokens of requests that ended in the last `windowMs` before `end`, per second.
function tokensPerSecond(rs, end, windowMs) {
  const from = end - windowMs;
  const tokens = rs.filter((r) => r.status === 200 && r.end > from && r.end <= end).reduce((s, r) => s + r.tokens, 0);
  return tokens / (windowMs / 1000);
}

// A fresh server with the four tenants (and p's reservation when > 0),
// for one phase: each phase's SLA figures are its own.
async function withServer(reserve, fn) {
  const dir = mkdtempSync(join(tmpdir(), 'pagoda-noisy-'));
  const { proc, base } = await startServer(dir);
  try {
    const keys = {};
    for (const [id, plan] of [['a', 'serverless'], ['b', 'serverless'], ['c', 'serverless'], ['p', 'provisioned']]) {
      await admin(base, 'POST', '/admin/tenants', { id, name: `tenant ${id}`, plan });
      keys[id] = (await admin(base, 'POST', '/admin/keys', { tenant: id })).key;
    }
    // Set while the server runs: the SLA figures and admission see it at once.
    if (reserve > 0) await admin(base, 'PUT', '/admin/reservations', { tenant: 'p', model: 'm', tokens_per_second: reserve });
    await closedLoop(base, keys.b, 2, 2000);  // warm-up
    return await fn(base, keys);
  } finally {
    proc.kill('SIGTERM');
    await new Promise((r) => { if (proc.exitCode !== null) r(); else proc.on('exit', r); setTimeout(r, 10000); });
    rmSync(dir, { recursive: true, force: true });
  }
}

// The server's own view of a tenant (/admin/sla): TTFT p50 in ms, tokens/s
// over the last minute, its reservation.
async function slaOf(base, tenant) {
  const f = (await admin(base, 'GET', '/admin/sla')).data.find((x) => x.tenant === tenant);
  return f ? { ttft_p50_ms: round(f.ttft_seconds.p50 * 1000, 1), tokens_per_second: round(f.tokens_per_second, 1),
               reserved_tokens_per_second: f.reserved_tokens_per_second } : null;
}

// a's open loop at rate x flood (one body per request) beside `fn`, with
// the engine's waiting queue sampled; a's outstanding requests are
// cancelled when `fn` is done.
async function underFlood(base, keys, ms, fn) {
  const ctl = new AbortController();
  const stop = { done: false };
  const waiting = sampleWaiting(base, stop);
  const aRun = openLoop(base, keys.a, rate * flood, ms, 0, { signal: ctl.signal, stream: false });
  const out = await fn();
  ctl.abort();
  const a = await aRun;
  stop.done = true;
  const w = await waiting;
  return { out, a_statuses: statuses(a), waiting_mean: round(w.reduce((s, x) => s + x, 0) / Math.max(1, w.length), 1) };
}

// b and c at `rate` each for --seconds: client-side TTFT and the server's.
async function bAndC(base, keys) {
  const ms = seconds * 1000;
  const [b, c] = await Promise.all([openLoop(base, keys.b, rate, ms, 0), openLoop(base, keys.c, rate, ms, 500 / rate)]);
  const out = {};
  for (const [t, rs] of [['b', b], ['c', c]]) {
    const s = summary(ttfts(rs));
    out[t] = { n: s.n, p50_ms: round(s.p50_ms, 1), p90_ms: round(s.p90_ms, 1), statuses: statuses(rs),
               server: await slaOf(base, t) };
  }
  return out;
}

// p's closed loop for --prov-seconds: tokens/s over the last 60 s (or the
// whole phase when shorter), and the server's view.
async function provisioned(base, keys) {
  const ms = provSeconds * 1000;
  const t0 = performance.now();
  // The server's view, sampled while p runs (the last sample is within 5 s
  // of the end); how long each read took is reported too.
  let server = null;
  let stop = false;
  const sampler = (async () => {
    while (!stop) {
      await sleep(5000);
      if (stop) break;
      const asked = performance.now();
      const sla = await slaOf(base, 'p');
      server = { ...sla, at_s: round((asked - t0) / 1000, 1), read_ms: round(performance.now() - asked, 1) };
    }
  })();
  const p = await closedLoop(base, keys.p, provConcurrency, ms);
  const end = performance.now();
  stop = true;
  await sampler;
  return { tokens_per_second: round(tokensPerSecond(p, end, Math.min(60000, end - t0)), 1),
           tokens_per_second_whole_phase: round(tokensPerSecond(p, end, end - t0), 1), statuses: statuses(p),
           server };
}

async function noisyNeighbour() {
  log(`phase 1: b and c at ${rate}/s each, alone, ${seconds} s`);
  const alone = await withServer(0, bAndC);
  log(`phase 2: the same with a at ${rate * flood}/s`);
  const noisy = await withServer(0, (base, keys) => underFlood(base, keys, seconds * 1000, () => bAndC(base, keys)));
  const ratio = (t) => round(noisy.out[t].p50_ms / alone[t].p50_ms, 2);
  const serverRatio = (t) => round(noisy.out[t].server.ttft_p50_ms / alone[t].server.ttft_p50_ms, 2);
  return {
    alone, noisy: noisy.out, a_statuses: noisy.a_statuses, waiting_mean: noisy.waiting_mean,
    median_ttft_ratio: { b: ratio('b'), c: ratio('c') },
    server_median_ttft_ratio: { b: serverRatio('b'), c: serverRatio('c') },
    target: 'b and c median TTFT <= 1.5x alone',
  };
}

async function provisionedThroughput() {
  log(`phase 3: p alone, ${provConcurrency} in flight, ${provSeconds} s`);
  const pAlone = await withServer(0, provisioned);
  // What a reservation can deliver at most here: p always at priority 1
  // (a reservation it never reaches) under the same flood.
  log(`phase 3b: p at priority 1 throughout while a floods at ${rate * flood}/s, ${provSeconds} s`);
  const pCeiling = await withServer(1e8, (base, keys) =>
    underFlood(base, keys, provSeconds * 1000, () => provisioned(base, keys)));
  const reserve = Math.max(1, Math.round(pCeiling.out.tokens_per_second * reserveFraction));
  log(`phase 4: p reserved at ${reserve} tokens/s while a floods at ${rate * flood}/s, ${provSeconds} s`);
  const pReserved = await withServer(reserve, (base, keys) =>
    underFlood(base, keys, provSeconds * 1000, () => provisioned(base, keys)));
  let pUnreserved = null;
  if (args.compare) {
    log('phase 5: the same without a reservation');
    pUnreserved = await withServer(0, (base, keys) =>
      underFlood(base, keys, provSeconds * 1000, () => provisioned(base, keys)));
  }
  return {
    alone: pAlone,
    ceiling: { ...pCeiling.out, a_statuses: pCeiling.a_statuses, waiting_mean: pCeiling.waiting_mean },
    reserved_tokens_per_second: reserve,
    with_flood: { ...pReserved.out, a_statuses: pReserved.a_statuses, waiting_mean: pReserved.waiting_mean },
    achieved_over_reserved: round(pReserved.out.tokens_per_second / reserve, 3),
    without_reservation: pUnreserved && { ...pUnreserved.out, a_statuses: pUnreserved.a_statuses,
                                          waiting_mean: pUnreserved.waiting_mean },
    target: 'achieved >= 0.9 x reserved',
  };
}

async function main() {
  const only = args.only ?? 'all';
  if (!['all', 'noisy', 'provisioned'].includes(only)) throw new Error('--only: all, noisy or provisioned');
  const out = {
    config: { model, threads, max_running: maxRunning, max_waiting: maxWaiting, rate, flood, seconds,
              prompt_tokens: promptTokens, max_tokens: maxTokens, prov_concurrency: provConcurrency,
              prov_seconds: provSeconds, reserve_fraction: reserveFraction },
  };
  if (only !== 'provisioned') out.noisy_neighbour = await noisyNeighbour();
  if (only !== 'noisy') out.provisioned = await provisionedThroughput();
  console.log(JSON.stringify(out, null, 1));
}

await main();
