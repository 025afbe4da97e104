#!/usr/bin/env node
// The Batch API's speed lines (issue 16), against one `pagoda serve` it
// starts itself with --data-dir.
//
// --mode throughput: the same --requests chat requests (--max-tokens each,
//   ignore_eos so every request generates exactly that many) sent (a) as 64
//   concurrent non-streaming HTTP requests and (b) as one batch (upload,
//   create, poll until completed), alternated --reps times in one run.
//   Reports each run's completion tokens/s, the medians, batch / streams, the
//   share of the batch's wall time its store commits took
//   (pagoda_batch_commit_seconds_total) and the runner thread's CPU share.
// --mode realtime: time to first token of --probes sequential streaming
//   requests with service_tier "priority" (realtime) on the idle server, then
//   again while a batch of --requests lines runs, then idle again; reports the
//   idle median (before and after) and the busy one, the ratio, and whether
//   the batch completes.
//
// Node >= 20, no dependencies. One JSON object on stdout.
// Usage: node bench/batch_bench.mjs --bin build/bin/pagoda [--model M.gguf] [--mode throughput|realtime]
//          [--requests 256] [--max-tokens 64] [--reps 3] [--threads 2] [--probes 20] [--extra "serve flags"]
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { parseArgs, quantile } from './bench_util.mjs';

const args = parseArgs(process.argv.slice(2));
const bin = args.bin ?? 'build/bin/pagoda';
const mode = args.mode ?? 'throughput';
const nRequests = Number(args.requests ?? 256);
const maxTokens = Number(args['max-tokens'] ?? 64);
const reps = Number(args.reps ?? 3);
const probes = Number(args.probes ?? 20);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function freePort() {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

const dir = mkdtempSync(join(tmpdir(), 'pagoda-batch-bench-'));
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const serveArgs = ['serve', '--port', String(port), '-t', String(args.threads ?? 2), '--data-dir', join(dir, 'data'),
                   '--batch-in-flight', '64', '--max-running', '64', '--served-model-name', 'm',
                   ...(args.model ? ['-m', args.model] : []), ...(args.extra ? String(args.extra).split(' ') : [])];
const server = spawn(bin, serveArgs, { stdio: ['ignore', 'ignore', 'pipe'] });
let serverLog = '';
server.stderr.on('data', (d) => { serverLog += d; });
process.on('exit', () => { server.kill('SIGKILL'); rmSync(dir, { recursive: true, force: true }); });
for (let i = 0; ; ++i) {
  try { if ((await fetch(`${base}/health`)).ok) break; } catch {}
  if (i > 600) throw new Error(`server did not start: ${serverLog}`);
  await sleep(100);
}

const body = (i, extra = {}) => ({
  model: 'm', messages: [{ role: 'user', content: `Tell me story number ${i} about a lighthouse.` }],
  max_tokens: maxTokens, temperature: 0, ignore_eos: true, ...extra,
});

async function metric(name) {
  const text = await (await fetch(`${base}/metrics`)).text();
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

async function streams64() {
  let next = 0, tokens = 0;
  const t0 = performance.now();
  const worker = async () => {
    while (next < nRequests) {
      const i = next++;
      const r = await fetch(`${base}/v1/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body(i)) });
      const j = await r.json();
      if (!r.ok) throw new Error(`HTTP ${r.status}: ${JSON.stringify(j)}`);
      tokens += j.usage.completion_tokens;
    }
  };
  await Promise.all(Array.from({ length: 64 }, worker));
  return { tokens, seconds: (performance.now() - t0) / 1000 };
}

async function createBatch(n, tag) {
  const lines = [];
  for (let i = 0; i < n; ++i) {
    lines.push(JSON.stringify({ custom_id: `${tag}-${i}`, method: 'POST', url: '/v1/chat/completions', body: body(i) }));
  }
  const form = new FormData();
  form.append('purpose', 'batch');
  form.append('file', new Blob([lines.join('\n')]), `${tag}.jsonl`);
  const f = await (await fetch(`${base}/v1/files`, { method: 'POST', body: form })).json();
  if (!f.id) throw new Error(`upload failed: ${JSON.stringify(f)}`);
  const t0 = performance.now();
  const b = await (await fetch(`${base}/v1/batches`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ input_file_id: f.id, endpoint: '/v1/chat/completions', completion_window: '24h' }) })).json();
  if (!b.id) throw new Error(`create failed: ${JSON.stringify(b)}`);
  return { id: b.id, t0 };
}

async function waitBatch(id) {
  for (;;) {
    const b = await (await fetch(`${base}/v1/batches/${id}`)).json();
    if (['completed', 'failed', 'expired', 'cancelled'].includes(b.status)) return b;
    await sleep(20);
  }
}

// CPU seconds of the server's batch runner thread (dispatch, commits, and the
// in-process request handling it does for each line) from /proc.
function runnerCpuSeconds() {
  for (const t of readdirSync(`/proc/${server.pid}/task`)) {
    try {
      if (readFileSync(`/proc/${server.pid}/task/${t}/comm`, 'utf8').trim() !== 'pagoda-batch') continue;
      const f = readFileSync(`/proc/${server.pid}/task/${t}/stat`, 'utf8');
      const fields = f.slice(f.lastIndexOf(')') + 2).split(' ');
      return (Number(fields[11]) + Number(fields[12])) / 100;  // utime + stime, in clock ticks
    } catch {}
  }
  return 0;
}

async function batchRun(tag) {
  const cpu0 = runnerCpuSeconds();
  const commit0 = await metric('pagoda_batch_commit_seconds_total');
  const commits0 = await metric('pagoda_batch_commits_total');
  const { id, t0 } = await createBatch(nRequests, tag);
  const b = await waitBatch(id);
  const seconds = (performance.now() - t0) / 1000;
  if (b.status !== 'completed' || b.request_counts.completed !== nRequests) {
    throw new Error(`batch ${b.status}: ${JSON.stringify(b.request_counts)}`);
  }
  const out = await (await fetch(`${base}/v1/files/${b.output_file_id}/content`)).text();
  let tokens = 0;
  for (const line of out.split('\n').filter(Boolean)) tokens += JSON.parse(line).response.body.usage.completion_tokens;
  const commitSeconds = (await metric('pagoda_batch_commit_seconds_total')) - commit0;
  const commits = (await metric('pagoda_batch_commits_total')) - commits0;
  return { tokens, seconds, commit_seconds: commitSeconds, commits, runner_cpu_seconds: runnerCpuSeconds() - cpu0 };
}

async function ttft(i) {
  const t0 = performance.now();
  const r = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body(1000 + i, { stream: true, max_tokens: 8, service_tier: 'priority' })) });
  const reader = r.body.getReader();
  const dec = new TextDecoder();
  let first = null, buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    if (first === null && /"content":"[^"]/.test(buf)) first = performance.now() - t0;
  }
  return first;
}

const result = { mode, requests: nRequests, max_tokens: maxTokens, args: serveArgs.join(' ') };
if (mode === 'throughput') {
  await streams64();  // warm-up
  const s = [], b = [], share = [], runner = [];
  for (let r = 0; r < reps; ++r) {
    const x = await streams64();
    s.push(x.tokens / x.seconds);
    const y = await batchRun(`run${r}`);
    b.push(y.tokens / y.seconds);
    share.push(y.commit_seconds / y.seconds);
    result[`run${r}`] = { streams_tok_s: x.tokens / x.seconds, batch_tok_s: y.tokens / y.seconds, batch_commits: y.commits,
                          commit_share: y.commit_seconds / y.seconds,
                          runner_cpu_share: y.runner_cpu_seconds / y.seconds };
    runner.push(y.runner_cpu_seconds / y.seconds);
  }
  result.streams_tok_s_median = quantile(s, 0.5);
  result.batch_tok_s_median = quantile(b, 0.5);
  result.batch_over_streams = result.batch_tok_s_median / result.streams_tok_s_median;
  result.commit_share_median = quantile(share, 0.5);
  // The runner thread's CPU over the batch's wall time, as a share of the
  // machine's cores the engine uses (-t): an upper bound on what dispatch and
  // commits take from throughput (it includes parsing and tokenizing each
  // line, which HTTP requests do on the I/O threads).
  result.runner_cpu_share_of_one_core_median = quantile(runner, 0.5);
} else {
  for (let i = 0; i < 3; ++i) await ttft(i);  // warm-up
  const idle = [];
  for (let i = 0; i < probes; ++i) idle.push(await ttft(i));
  const { id, t0 } = await createBatch(nRequests, 'bg');
  while ((await metric('pagoda_batch_lines_in_flight')) < 32) await sleep(20);
  const busy = [];
  for (let i = 0; i < probes; ++i) { busy.push(await ttft(probes + i)); await sleep(50); }
  const inFlightAfter = await metric('pagoda_batch_lines_in_flight');
  const b = await waitBatch(id);
  // Idle again after the batch: the idle figure is the median of both sides.
  for (let i = 0; i < probes; ++i) idle.push(await ttft(2 * probes + i));
  result.steps_interrupted = await metric('pagoda:num_steps_interrupted_total');
  result.idle_ttft_ms_median = quantile(idle, 0.5);
  result.busy_ttft_ms_median = quantile(busy, 0.5);
  result.ratio = result.busy_ttft_ms_median / result.idle_ttft_ms_median;
  result.batch_lines_in_flight_during_probes = inFlightAfter;
  result.batch_status = b.status;
  result.batch_completed = b.request_counts.completed;
  result.batch_seconds = (performance.now() - t0) / 1000;
}
console.log(JSON.stringify(result, null, 1));
server.kill('SIGTERM');
process.exit(0);
