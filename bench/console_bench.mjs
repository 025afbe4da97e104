#!/usr/bin/env node
// The web console's speed lines (issue 20), against one `pagoda serve` it
// starts itself on loopback:
//  - size: the embedded console's bytes and gzipped bytes (index.html and
//    every /assets/ file it serves, fetched from the server, gzip -9 here);
//  - first paint: first-contentful-paint of the playground in headless
//    chromium, --loads fresh browser contexts (no cache), median and max;
//  - dashboard CPU: the server's CPU time (utime + stime from /proc) over
//    --seconds idle, then over --seconds with a dashboard page polling
//    /console/api/stats every second, as % of one core;
//  - with --gateway-replicas N: a `pagoda gateway` in front of the server
//    with N replicas (r0.., all the same server, so the server answers N
//    stats requests a poll), the gateway's and the server's CPU idle and with
//    the gateway's dashboard polling with one line per replica.
//
// Needs tests/web/node_modules (npm ci there) and Debian's chromium. One JSON
// object on stdout.
// Usage: node bench/console_bench.mjs --bin build/bin/pagoda --model M.gguf [--loads 10] [--seconds 30]
//          [--gateway-replicas 4]
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

import { parseArgs, quantile } from './bench_util.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const args = parseArgs(process.argv.slice(2));
const bin = args.bin ?? 'build/bin/pagoda';
const model = args.model ?? join(here, '../../shared/testdata/stories260K.gguf');
const loads = Number(args.loads ?? 10);
const seconds = Number(args.seconds ?? 30);
const gatewayReplicas = Number(args['gateway-replicas'] ?? 0);
if (!Number.isInteger(gatewayReplicas) || gatewayReplicas < 0) throw new Error('--gateway-replicas: a whole number >= 0');
const { chromium } = await import(join(here, '../tests/web/node_modules/playwright-core/index.mjs'));

const sleep = (ms) => new Promise(r => setTimeout(r, ms));
const freePort = () => new Promise((resolve) => {
  const s = createServer();
  s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
});
const children = [];
process.on('exit', () => children.forEach(c => c.kill('SIGKILL')));
// `pagoda ARGS...` on a free port (its flag comes from `portArgs`), once /health answers.
async function start(portArgs, argv) {
  const port = await freePort();
  const proc = spawn(bin, [...argv, ...portArgs(port)], { stdio: ['ignore', 'ignore', 'ignore'] });
  children.push(proc);
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 100; ++i) {
    try { if ((await fetch(`${url}/health`)).ok) break; } catch {}
    await sleep(100);
  }
  return { proc, url };
}
const { proc: server, url: base } = await start((p) => ['--port', String(p)], ['serve', '-m', model, '-t', '1']);

// Size.
const html = await (await fetch(`${base}/`)).text();
let bytes = Buffer.byteLength(html), gz = gzipSync(html, { level: 9 }).length;
for (const [, path] of html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)) {
  const body = Buffer.from(await (await fetch(`${base}${path}`)).arrayBuffer());
  bytes += body.length;
  gz += gzipSync(body, { level: 9 }).length;
}

const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true,
                                        args: process.getuid?.() === 0 ? ['--no-sandbox'] : [] });
// First paint, cold (a new context each time: nothing cached).
const fcp = [];
for (let i = 0; i < loads; ++i) {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  await page.goto(`${base}/#/playground`, { waitUntil: 'load' });
  await page.waitForSelector('#pg-send');
  const v = await page.evaluate(() => new Promise((resolve) => {
    const e = performance.getEntriesByName('first-contentful-paint')[0];
    if (e) return resolve(e.startTime);
    new PerformanceObserver((l) => resolve(l.getEntries()[0].startTime)).observe({ type: 'paint', buffered: true });
  }));
  fcp.push(v);
  await ctx.close();
}

// Dashboard CPU: each process's CPU seconds over a window, as % of one core.
const ticks = Number(process.env.CLK_TCK ?? 100);
const cpu = (pid) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / ticks;  // utime, stime
};
const window = async (procs) => {
  const c0 = procs.map(p => cpu(p.pid));
  const t0 = Date.now();
  await sleep(seconds * 1000);
  const dt = (Date.now() - t0) / 1000;
  return procs.map((p, i) => (100 * (cpu(p.pid) - c0[i])) / dt);
};
// Idle, then with the dashboard at `url` open (after `prepare` on its page).
async function overhead(url, procs, prepare = async () => {}) {
  const idle = await window(procs);
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  await page.goto(`${url}/#/dashboard`);
  await page.waitForSelector('[data-testid=chart-requests]');
  await prepare(page);
  const polling = await window(procs);
  const polls = Number(await page.getAttribute('[data-testid=chart-requests]', 'data-points'));
  await ctx.close();
  return procs.map((_, i) => ({ idle: +idle[i].toFixed(3), dashboard_polling: +polling[i].toFixed(3),
                                added: +(polling[i] - idle[i]).toFixed(3), seconds, polls }));
}
const [serveCpu] = await overhead(base, [server]);

let gateway;
if (gatewayReplicas > 0) {
  const config = join(mkdtempSync(join(tmpdir(), 'pagoda-console-bench-')), 'gateway.toml');
  const replicas = Array.from({ length: gatewayReplicas }, (_, i) =>
    `[[models.deployments.replicas]]\nname = "r${i}"\nurl = "${base}"\n`).join('');
  writeFileSync(config, `[[models]]\nname = "stories"\nserved_model_name = "stories260K"\n` +
                        `[[models.deployments]]\nversion = "v1"\n${replicas}`);
  const gw = await start((p) => ['--listen', `127.0.0.1:${p}`], ['gateway', '--config', config]);
  const [gwCpu, serverCpu] = await overhead(gw.url, [gw.proc, server], async (page) => {
    await page.waitForSelector('#dash-split');
    await page.check('#dash-split');  // one line per replica: the page's heaviest view
  });
  gateway = { replicas: gatewayReplicas, gateway_cpu_pct_of_one_core: gwCpu, server_cpu_pct_of_one_core: serverCpu };
}
await browser.close();
children.forEach(c => c.kill('SIGTERM'));

console.log(JSON.stringify({
  console_bytes: bytes, console_gzip_bytes: gz,
  first_contentful_paint_ms: { median: quantile(fcp, 0.5), max: Math.max(...fcp), loads },
  server_cpu_pct_of_one_core: serveCpu,
  ...(gateway ? { gateway } : {}),
}, null, 2));
process.exit(0);
