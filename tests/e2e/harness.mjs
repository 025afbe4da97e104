// Shared pieces of the node e2e suites: skip rules, starting `pagoda serve`
// on a free port, the reference `pagoda generate`, /metrics reads and a tiny
// sequential test runner. Each suite is run as
//   node <suite>.test.mjs <pagoda binary> <model.gguf>
// and prints "skipped: ..." (exit 0) when node_modules or the model is absent.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
// Servers still running when the suite exits (a failed setup) are killed.
const live = new Set();
process.on('exit', () => { for (const p of live) p.kill('SIGKILL'); });

// Returns { bin, modelPath, OpenAI } or exits 0 with "skipped: ...".
export async function setup() {
  const [bin, modelPath] = process.argv.slice(2);
  if (!existsSync(join(here, 'node_modules', 'openai'))) {
    console.log('skipped: tests/e2e/node_modules is absent (run npm ci in tests/e2e)');
    process.exit(0);
  }
  if (!modelPath || !existsSync(modelPath)) {
    console.log(`skipped: test model ${modelPath} is absent`);
    process.exit(0);
  }
  if (!bin || !existsSync(bin)) throw new Error(`pagoda binary ${bin} is absent`);
  const { default: OpenAI } = await import('openai');
  return { bin, modelPath, OpenAI };
}

export const sleep = (ms) => new Promise(r => setTimeout(r, ms));

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
    s.on('error', reject);
  });
}

// A running `pagoda serve`: base URL, an openai client, its stderr so far,
// metric reads, and stop() (SIGTERM, then wait for the exit).
export class Server {
  static async start(bin, modelPath, OpenAI, args = []) {
    const port = await freePort();
    const s = new Server();
    s.port = port;
    s.base = `http://127.0.0.1:${port}`;
    s.stderr = '';
    s.exited = false;
    s.exitCode = null;
    // The KV page integrity check is on in every suite: stop() fails on any alarm.
    s.proc = spawn(bin, ['serve', '-m', modelPath, '--port', String(port), '-t', '1', '--kv-integrity', 'check', ...args],
                   { stdio: ['ignore', 'inherit', 'pipe'] });
    s.proc.stderr.on('data', (d) => { s.stderr += d; process.stderr.write(d); });
    live.add(s.proc);
    s.proc.on('exit', (code, signal) => { s.exited = true; s.exitCode = code ?? signal; live.delete(s.proc); });
    s.client = new OpenAI({ baseURL: `${s.base}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
    await s.waitHealthy();
    return s;
  }

  async waitHealthy() {
    for (let i = 0; i < 300; ++i) {
      if (this.exited) throw new Error(`pagoda serve exited early (${this.exitCode})`);
      try { if ((await fetch(`${this.base}/health`)).status === 200) return; } catch {}
      await sleep(100);
    }
    throw new Error('no /health 200 within 30 s');
  }

  // The KV capacity in tokens that `pagoda serve` printed on start.
  kvCapacityTokens() {
    const m = /KV cache (\d+) tokens/.exec(this.stderr);
    return m ? Number(m[1]) : undefined;
  }

  async metrics() {
    const text = await (await fetch(`${this.base}/metrics`)).text();
    const out = {};
    for (const line of text.split('\n')) {
      const m = /^pagoda:(\w+)\{[^}]*\} (\S+)$/.exec(line);
      if (m) out[m[1]] = Number(m[2]);
    }
    return out;
  }

  // Polls /metrics until nothing runs, waits or holds KV blocks; returns the
  // last reading (the caller asserts on it).
  async waitIdle(timeoutMs = 5000) {
    const t0 = Date.now();
    let m;
    do {
      m = await this.metrics();
      if (m.num_requests_running === 0 && m.num_requests_waiting === 0 && m.kv_cache_usage_perc === 0) return m;
      await sleep(50);
    } while (Date.now() - t0 < timeoutMs);
    return m;
  }

  async stop() {
    if (this.exited) return this.exitCode;
    let alarms = 0;
    try { alarms = (await this.metrics()).kv_cache_integrity_failures_total ?? 0; } catch {}
    this.proc.kill('SIGTERM');
    await new Promise(r => { if (this.exited) r(); else this.proc.on('exit', r); setTimeout(r, 10000); });
    if (!this.exited) this.proc.kill('SIGKILL');
    // Only kv_integrity.test.mjs plants KV faults (and raises allowedAlarms):
    // any other integrity failure is a false alarm.
    if (alarms > (this.allowedAlarms ?? 0)) throw new Error(`pagoda serve reported ${alarms} KV cache integrity failures`);
    return this.exitCode;
  }
}

// A running `pagoda gateway --config <configPath>` on a free port, once its
// /health answers: { proc, base, stderr (so far), exited, kill(sig), stop() }.
export async function startGateway(bin, configPath, env = process.env, extraArgs = []) {
  const port = await freePort();
  const g = { base: `http://127.0.0.1:${port}`, stderr: '', exited: false };
  g.proc = spawn(bin, ['gateway', '--config', configPath, '--listen', `127.0.0.1:${port}`, ...extraArgs],
                 { stdio: ['ignore', 'inherit', 'pipe'], env });
  g.proc.stderr.on('data', (d) => { g.stderr += d; process.stderr.write(d); });
  live.add(g.proc);
  g.proc.on('exit', () => { g.exited = true; live.delete(g.proc); });
  g.kill = (signal) => g.proc.kill(signal);
  g.stop = async () => {
    if (g.exited) return;
    g.proc.kill('SIGTERM');
    await new Promise(r => { if (g.exited) r(); else g.proc.on('exit', r); setTimeout(r, 5000); });
    if (!g.exited) g.proc.kill('SIGKILL');
  };
  for (let i = 0; i < 100; ++i) {
    if (g.exited) throw new Error('pagoda gateway exited early');
    try { if ((await fetch(`${g.base}/health`)).status === 200) return g; } catch {}
    await sleep(100);
  }
  throw new Error('pagoda gateway: no /health 200 within 10 s');
}

// `pagoda generate` alone, greedy: the reference a served request must match.
// Returns { text, promptTokens, generatedTokens, stop }.
export function generate(bin, modelPath, prompt, nPredict, ctxSize, extraArgs = []) {
  return new Promise((resolve, reject) => {
    const p = spawn(bin, ['generate', '-m', modelPath, '-p', prompt, '-n', String(nPredict), '--temp', '0',
                          '-t', '1', '-c', String(ctxSize), ...extraArgs],
                    { stdio: ['ignore', 'pipe', 'pipe'] });
    const out = [], err = [];
    p.stdout.on('data', d => out.push(d));
    p.stderr.on('data', d => err.push(d));
    p.on('error', reject);
    p.on('close', (code) => {  // 'close': after stdout and stderr are drained ('exit' can come first)
      const stderr = Buffer.concat(err).toString();
      if (code !== 0) return reject(new Error(`pagoda generate exited ${code}: ${stderr}`));
      const m = /prompt (\d+) tokens.*generated (\d+) tokens.*stop: (\w+)/.exec(stderr);
      if (!m) return reject(new Error(`unexpected pagoda generate log: ${stderr}`));
      let text = Buffer.concat(out).toString('utf8');
      if (text.endsWith('\n')) text = text.slice(0, -1);  // generate ends its output with a newline
      resolve({ text, promptTokens: Number(m[1]), generatedTokens: Number(m[2]), stop: m[3] });
    });
  });
}

// Runs at most `limit` of the async thunks at once.
export async function pool(thunks, limit) {
  const results = new Array(thunks.length);
  let next = 0;
  const worker = async () => {
    while (next < thunks.length) {
      const i = next++;
      results[i] = await thunks[i]();
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, thunks.length) }, worker));
  return results;
}

// Sequential runner: test(name, fn) registers; run({ before, after }) runs
// before (its failure fails the suite), the tests, then after, prints a
// summary and exits 0 or 1.
export function makeRunner() {
  const tests = [];
  const test = (name, fn) => tests.push({ name, fn });
  const run = async ({ before, after } = {}) => {
    let failed = 0;
    try {
      await before?.();
      for (const t of tests) {
        const t0 = Date.now();
        try {
          await t.fn();
          console.log(`ok   ${t.name} (${Date.now() - t0} ms)`);
        } catch (e) {
          ++failed;
          console.log(`FAIL ${t.name}: ${e.stack ?? e}`);
        }
      }
    } catch (e) {
      ++failed;
      console.log(`FAIL setup: ${e.stack ?? e}`);
    } finally {
      try { await after?.(); } catch (e) { ++failed; console.log(`FAIL cleanup: ${e.stack ?? e}`); }
    }
    console.log(failed ? `${failed} of ${tests.length} failed` : `all ${tests.length} passed`);
    process.exit(failed ? 1 : 0);
  };
  return { test, run };
}

// An OpenAI-shaped error body: all four keys, message a non-empty string.
export function assertErrorShape(assert, body, what) {
  assert.ok(body && typeof body.error === 'object' && body.error !== null, `${what}: no error object: ${JSON.stringify(body)}`);
  const e = body.error;
  for (const k of ['message', 'type', 'param', 'code']) assert.ok(k in e, `${what}: error lacks '${k}': ${JSON.stringify(body)}`);
  assert.equal(typeof e.message, 'string', what);
  assert.ok(e.message.length > 0, what);
}
