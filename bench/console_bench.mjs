#!/usr/bin/env node
// The web console's speed lines (issue 20), against one `pagoda serve` it
// starts itself on loopback:
//  - size: the embedded console's bytes and gzipped bytes (index.html and
//    every /assets/ file it serves, fetched from the server, gzip -9 here);
//  - first paint: first-contentful-paint of the playground in headless
//    chromium, --loads fresh browser contexts (no cache), median and max;
//  - dashboard CPU: the server's CPU time (utime + stime from /proc) over
//    --seconds idle, then over --seconds with a dashboard page polling
//    /console/api/stats every second, as % of one core.
//
// Needs tests/web/node_modules (npm ci there) and Debian's chromium. One JSON
// object on stdout.
// Usage: node bench/console_bench.mjs --bin build/bin/pagoda --model M.gguf [--loads 10] [--seconds 30]
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
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
const { chromium } = await import(join(here, '../tests/web/node_modules/playwright-core/index.mjs'));

const sleep = (ms) => new Promise(r => setTimeout(r, ms));
const port = await new Promise((resolve) => {
  const s = createServer();
  s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
});
const base = `http://127.0.0.1:${port}`;
const server = spawn(bin, ['serve', '-m', model, '--port', String(port), '-t', '1'], { stdio: ['ignore', 'ignore', 'ignore'] });
process.on('exit', () => server.kill('SIGKILL'));
for (let i = 0; i < 100; ++i) {
  try { if ((await fetch(`${base}/health`)).ok) break; } catch {}
  await sleep(100);
}

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

// Dashboard CPU: the server process's CPU seconds over a window.
const ticks = Number(process.env.CLK_TCK ?? 100);
const cpu = () => {
  const f = readFileSync(`/proc/${server.pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / ticks;  // utime, stime
};
const window = async () => { const c0 = cpu(); const t0 = Date.now(); await sleep(seconds * 1000);
                             return (100 * (cpu() - c0)) / ((Date.now() - t0) / 1000); };
const idlePct = await window();
const ctx = await browser.newContext();
const page = await ctx.newPage();
await page.goto(`${base}/#/dashboard`);
await page.waitForSelector('[data-testid=chart-requests]');
const pollingPct = await window();
const points = Number(await page.getAttribute('[data-testid=chart-requests]', 'data-points'));
await browser.close();
server.kill('SIGTERM');

console.log(JSON.stringify({
  console_bytes: bytes, console_gzip_bytes: gz,
  first_contentful_paint_ms: { median: quantile(fcp, 0.5), max: Math.max(...fcp), loads },
  server_cpu_pct_of_one_core: { idle: +idlePct.toFixed(3), dashboard_polling: +pollingPct.toFixed(3),
                                added: +(pollingPct - idlePct).toFixed(3), seconds, polls: points },
}, null, 2));
process.exit(0);
