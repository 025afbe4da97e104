#!/usr/bin/env node
// The disk tier's speed lines (issue 17, docs/KV_OFFLOAD.md), against
// `pagoda serve` runs it starts itself, one with --kv-offload disk and one
// without, on the same chat-like trace:
//   --conversations C, each with a long history (--history words of text),
//   --turns T rounds; in each round every conversation sends its history plus
//   a new user line (greedy, --max-tokens generated), one after another, so
//   with a pool (--kv-memory) smaller than the C histories a conversation's
//   blocks are evicted before it returns (think time = the other C - 1 turns).
//   Meanwhile one background stream generates continuously; its inter-token
//   gaps are recorded during the returning turns.
// Reports, per mode, the median time to first token of the returning turns
// (rounds >= 2), the ratio recompute / disk, the background stream's p50 and
// p99 inter-token gap during the returning turns in each mode (and its p50
// in the two seconds before the trace, alone), and the disk tier's restore bandwidth
// from its metrics (read bytes / read seconds; the files are in the page
// cache here, just written).
// Node >= 20, no dependencies. One JSON object on stdout.
// Usage: node bench/kv_offload_bench.mjs --bin build/bin/pagoda --model M.gguf [--conversations 4] [--turns 3]
//          [--history 600] [--max-tokens 8] [--kv-memory 64MiB] [--memory-kv 1GiB] [--threads 2] [--extra "serve flags"]
// A third run, "memory", uses a pool of --memory-kv that holds every
// conversation: the background stream's gaps there are the baseline for the
// disk tier's (restores and write-backs) effect on running streams.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { parseArgs, quantile, splitMix64 } from './bench_util.mjs';

const args = parseArgs(process.argv.slice(2));
const bin = args.bin ?? 'build/bin/pagoda';
const model = args.model;
const nConv = Number(args.conversations ?? 4);
const turns = Number(args.turns ?? 3);
const historyWords = Number(args.history ?? 600);
const maxTokens = Number(args['max-tokens'] ?? 8);
const kvMemory = args['kv-memory'] ?? '64MiB';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
if (!model) throw new Error('--model is required');

function freePort() {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

const words = ['river', 'lamp', 'garden', 'engine', 'yellow', 'quiet', 'mountain', 'paper', 'window', 'silver',
               'forest', 'music', 'orange', 'little', 'bridge', 'cloud', 'stone', 'letter', 'summer', 'candle'];
function text(seed, n) {
  const next = splitMix64(BigInt(seed) + 1n);
  const out = [];
  for (let i = 0; i < n; ++i) out.push(words[Number(next() % BigInt(words.length))]);
  return out.join(' ');
}

async function startServer(extra, memory = kvMemory) {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const serveArgs = ['serve', '--port', String(port), '-t', String(args.threads ?? 2), '-m', model,
                     '--kv-cache-memory', memory, '--max-running', '8', '--served-model-name', 'm',
                     ...extra, ...(args.extra ? String(args.extra).split(' ') : [])];
  const proc = spawn(bin, serveArgs, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  proc.stderr.on('data', (d) => { log += d; });
  for (let i = 0; ; ++i) {
    try { if ((await fetch(`${base}/health`)).ok) break; } catch {}
    if (i > 600) throw new Error(`server did not start: ${log}`);
    await sleep(100);
  }
  return { base, proc, log: () => log };
}

async function metrics(base) {
  const out = {};
  for (const line of (await (await fetch(`${base}/metrics`)).text()).split('\n')) {
    const m = /^pagoda:(\w+)(?:\{[^}]*\})? (\S+)$/.exec(line);
    if (m) out[m[1]] = Number(m[2]);
  }
  return out;
}

// Streams one completion; returns { ttft, gaps, cached }. Gaps also go to
// `sink` as they happen (a stream aborted half way keeps what it saw).
async function stream(base, prompt, max, signal, sink = null) {
  const t0 = performance.now();
  const r = await fetch(`${base}/v1/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, signal,
    body: JSON.stringify({ model: 'm', prompt, max_tokens: max, temperature: 0, ignore_eos: true, stream: true,
                           stream_options: { include_usage: true } }) });
  if (!r.ok) throw new Error(`HTTP ${r.status}: ${await r.text()}`);
  const dec = new TextDecoder();
  let buf = '', ttft = null, last = null, cached = 0;
  const gaps = [];
  for await (const chunk of r.body) {
    buf += dec.decode(chunk, { stream: true });
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(0, i);
      buf = buf.slice(i + 2);
      if (!ev.startsWith('data: ') || ev === 'data: [DONE]') continue;
      const j = JSON.parse(ev.slice(6));
      if (j.usage) cached = j.usage.prompt_tokens_details?.cached_tokens ?? 0;
      if (j.choices?.length && j.choices[0].text) {
        const now = performance.now();
        if (ttft === null) ttft = (now - t0) / 1000;
        else {
          gaps.push({ t: now, gap: (now - last) / 1000 });
          if (sink) sink.push(gaps[gaps.length - 1]);
        }
        last = now;
      }
    }
  }
  return { ttft, gaps, cached };
}

async function runMode(name, extra, memory = kvMemory) {
  const srv = await startServer(extra, memory);
  try {
    const histories = Array.from({ length: nConv }, (_, c) => text(1000 + c, historyWords));
    // Background streams, one after another until the trace ends (each
    // within the context), aborted at the end.
    const ctl = new AbortController();
    const bgGaps = [];
    const bg = (async () => {
      while (!ctl.signal.aborted) {
        try {
          await stream(srv.base, text(7, 40), 1500, ctl.signal, bgGaps);
        } catch (e) { if (!ctl.signal.aborted) console.error(`background stream: ${e.message}`); return; }
      }
    })();
    // Two seconds of the background stream alone: its undisturbed gaps.
    const tAlone = performance.now();
    await sleep(2000);
    const tTrace = performance.now();
    const windows = [];  // [t0, t1] of returning turns
    const ttfts = [];
    let cachedTokens = 0;
    for (let t = 0; t < turns; ++t) {
      for (let c = 0; c < nConv; ++c) {
        histories[c] += ` user turn ${t}: ${text(50 + 10 * c + t, 12)}.`;
        const t0 = performance.now();
        const r = await stream(srv.base, histories[c], maxTokens);
        if (t > 0) {
          ttfts.push(r.ttft);
          windows.push([t0, performance.now()]);
          cachedTokens += r.cached;
        }
      }
    }
    const m = await metrics(srv.base);
    ctl.abort();
    await bg;
    const inWin = (x) => windows.some(([a, b]) => x.t >= a && x.t <= b);
    const gaps = bgGaps.filter(inWin).map((x) => x.gap);
    const alone = bgGaps.filter((x) => x.t > tAlone + 200 && x.t < tTrace).map((x) => x.gap);
    return {
      mode: name,
      returning_turns: ttfts.length,
      ttft_median_s: quantile(ttfts, 0.5),
      ttft_s: ttfts.map((x) => Number(x.toFixed(3))),
      cached_tokens_returning: cachedTokens,
      background_alone_gap_p50_s: quantile(alone, 0.5),
      background_gap_p50_s: quantile(gaps, 0.5),
      background_gap_p99_s: quantile(gaps, 0.99),
      background_gaps: gaps.length,
      disk_restore_gb_per_s: m.kv_offload_disk_read_seconds_total > 0
        ? m.kv_offload_disk_read_bytes_total / m.kv_offload_disk_read_seconds_total / 1e9 : null,
      disk_read_bytes: m.kv_offload_disk_read_bytes_total ?? 0,
      disk_writes: m.kv_offload_disk_writes_total ?? 0,
      disk_hit_tokens: m.kv_offload_disk_hits_tokens_total ?? 0,
    };
  } finally {
    srv.proc.kill('SIGTERM');
    await new Promise((r) => srv.proc.on('exit', r));
  }
}

const dir = mkdtempSync(join(tmpdir(), 'pagoda-kvoff-bench-'));
try {
  const recompute = await runMode('recompute', []);
  const disk = await runMode('disk', ['--kv-offload', 'disk=8GiB', '--kv-offload-dir', dir]);
  // Tier 0: a pool that holds every conversation, so returning turns find
  // their prefix in memory; the background stream's gaps then show what
  // returning turns cost without restores or write-backs.
  const memory = await runMode('memory', [], args['memory-kv'] ?? '1GiB');
  console.log(JSON.stringify({
    model, conversations: nConv, turns, history_words: historyWords, kv_memory: kvMemory,
    ttft_ratio_recompute_over_disk: recompute.ttft_median_s / disk.ttft_median_s,
    background_gap_p50_ratio_disk_over_recompute: disk.background_gap_p50_s / recompute.background_gap_p50_s,
    background_gap_p50_ratio_disk_over_memory: disk.background_gap_p50_s / memory.background_gap_p50_s,
    background_gap_p99_ratio_disk_over_memory: disk.background_gap_p99_s / memory.background_gap_p99_s,
    recompute, disk, memory,
  }, null, 1));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
