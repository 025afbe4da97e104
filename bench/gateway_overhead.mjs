#!/usr/bin/env node
// What the gateway itself costs, against calling a replica directly.
//
// --mode latency: open-loop load at --rps requests/s for --seconds, one short
//   non-streaming completion each (max_tokens --max-tokens), alternating
//   slices of --slice-s seconds between --direct and --gateway so that both
//   see the same machine state; reports the median and p90 latency of each
//   and the median added latency (gateway - direct).
// --mode streams: holds --streams concurrent streaming completions through
//   --gateway (each --stream-tokens long, restarted as soon as it ends) for
//   --seconds, and reads the gateway's CPU time from /proc/<--gateway-pid>/stat
//   before and after: reports requests/s completed, the gateway's CPU as a
//   fraction of one core, and that per 100 requests/s.
//
// Node >= 18, no dependencies. One JSON object on stdout.
// Usage: node bench/gateway_overhead.mjs --mode latency --direct URL --gateway URL --model M
//          [--rps 100] [--seconds 20] [--slice-s 2] [--max-tokens 2] [--gateway-key KEY]
//        node bench/gateway_overhead.mjs --mode streams --gateway URL --gateway-pid PID --model M
//          [--streams 1000] [--seconds 20] [--stream-tokens 64]
import { readFileSync } from 'node:fs';

import { parseArgs, quantile } from './bench_util.mjs';

const args = parseArgs(process.argv.slice(2));
const mode = args.mode ?? 'latency';
const model = args.model ?? '';
const seconds = Number(args.seconds ?? 20);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// --gateway-key KEY: sent as a bearer key to --gateway only (a gateway with a
// control plane, measured against --direct = the same gateway without one).
async function complete(base, maxTokens, i, key) {
  const t0 = performance.now();
  const res = await fetch(`${base}/v1/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify({ model, prompt: `Once upon a time ${i % 97}`, max_tokens: maxTokens, temperature: 0 }),
  });
  await res.arrayBuffer();
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  return performance.now() - t0;
}

async function latencyMode() {
  const rps = Number(args.rps ?? 100), slice = Number(args['slice-s'] ?? 2) * 1000;
  const maxTokens = Number(args['max-tokens'] ?? 2);
  const targets = { direct: args.direct, gateway: args.gateway };
  const lat = { direct: [], gateway: [] };
  let failures = 0, i = 0;
  const pending = [];
  const end = performance.now() + seconds * 1000;
  const t0 = performance.now();
  while (performance.now() < end) {
    const which = Math.floor((performance.now() - t0) / slice) % 2 === 0 ? 'direct' : 'gateway';
    const due = t0 + (i / rps) * 1000;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    const n = i++;
    pending.push(complete(targets[which], maxTokens, n, which === 'gateway' ? args['gateway-key'] : undefined).then((ms) => lat[which].push(ms), () => ++failures));
  }
  await Promise.all(pending);
  const med = (k) => quantile(lat[k], 0.5), p90 = (k) => quantile(lat[k], 0.9);
  return { mode, rps, seconds, requests: i, failures,
           direct_ms_p50: +med('direct').toFixed(3), direct_ms_p90: +p90('direct').toFixed(3),
           gateway_ms_p50: +med('gateway').toFixed(3), gateway_ms_p90: +p90('gateway').toFixed(3),
           added_ms_p50: +(med('gateway') - med('direct')).toFixed(3), n_direct: lat.direct.length,
           n_gateway: lat.gateway.length };
}

function cpuSeconds(pid) {
  // /proc/PID/stat fields 14 and 15 (utime, stime) in clock ticks (100/s on Linux).
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return (Number(rest[11]) + Number(rest[12])) / 100;
}

async function streamsMode() {
  const n = Number(args.streams ?? 1000), tokens = Number(args['stream-tokens'] ?? 64);
  const pid = Number(args['gateway-pid']);
  let done = 0, failures = 0, open = 0, maxOpen = 0;
  const end = performance.now() + seconds * 1000;
  async function loop(k) {
    while (performance.now() < end) {
      try {
        ++open; maxOpen = Math.max(maxOpen, open);
        const res = await fetch(`${args.gateway}/v1/completions`, {
          method: 'POST', headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model, prompt: `Once upon a time ${k}`, max_tokens: tokens, temperature: 0.8,
                                 seed: k, stream: true }),
        });
        if (!res.ok) throw new Error(`HTTP ${res.status}`);
        for await (const _ of res.body) { /* drain */ }
        ++done;
      } catch {
        ++failures;
        await sleep(50);
      } finally {
        --open;
      }
    }
  }
  const cpu0 = cpuSeconds(pid), w0 = performance.now();
  await Promise.all(Array.from({ length: n }, (_, k) => loop(k)));
  const wall = (performance.now() - w0) / 1000, cpu = cpuSeconds(pid) - cpu0;
  const rps = done / wall;
  return { mode, streams: n, max_open: maxOpen, seconds: +wall.toFixed(1), completed: done, failures,
           rps: +rps.toFixed(1), gateway_core_fraction: +(cpu / wall).toFixed(4),
           core_fraction_per_100_rps: rps > 0 ? +((cpu / wall) / (rps / 100)).toFixed(4) : null };
}

console.log(JSON.stringify(mode === 'streams' ? await streamsMode() : await latencyMode()));
