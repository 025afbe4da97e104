// KV page integrity through the real server: the test-only
// --testing-kv-fault (refused without PAGODA_TESTING=1) plants one fault;
// the affected request gets HTTP 500 "kv_cache_integrity" (an SSE error
// event when streaming), pagoda:kv_cache_integrity_failures_total counts it,
// and the next request is served normally.
// Usage: node kv_integrity.test.mjs <pagoda binary> <model.gguf>
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { Server, assertErrorShape, makeRunner, setup } from './harness.mjs';

const { bin, modelPath, OpenAI } = await setup();
const { test, run } = makeRunner();
const body = { prompt: 'Once upon a time', max_tokens: 40, temperature: 0 };

async function post(server, b) {
  const r = await fetch(`${server.base}/v1/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(b) });
  return { status: r.status, text: await r.text() };
}

async function withFault(kind, fn) {
  process.env.PAGODA_TESTING = '1';
  let server;
  try {
    server = await Server.start(bin, modelPath, OpenAI, ['--ctx-size', '256', '--testing-kv-fault', kind]);
  } finally {
    delete process.env.PAGODA_TESTING;
  }
  try {
    await fn(server);
    // The engine publishes its counters after the step that failed the
    // sequence, which can be after the client has its answer: wait for idle.
    const m = await server.waitIdle();
    assert.ok(m.kv_cache_integrity_failures_total >= 1, `${kind}: failures counted`);
    server.allowedAlarms = m.kv_cache_integrity_failures_total;
  } finally {
    await server.stop();
  }
}

test('--testing-kv-fault is refused without PAGODA_TESTING=1', async () => {
  const env = { ...process.env };
  delete env.PAGODA_TESTING;
  const p = spawn(bin, ['serve', '-m', modelPath, '--port', '0', '--testing-kv-fault', 'retag'],
                  { stdio: ['ignore', 'ignore', 'pipe'], env });
  let err = '';
  p.stderr.on('data', d => { err += d; });
  const code = await new Promise(r => p.on('close', r));
  assert.equal(code, 1);
  assert.match(err, /PAGODA_TESTING=1/);
});

for (const kind of ['reuse', 'retag', 'swap']) {
  test(`${kind}: the request gets 500 kv_cache_integrity, the next one is served`, () => withFault(kind, async (server) => {
    const r = await post(server, { ...body, n: kind === 'swap' ? 2 : 1 });
    assert.equal(r.status, 500, r.text);
    const e = JSON.parse(r.text);
    assertErrorShape(assert, e, kind);
    assert.equal(e.error.code, 'kv_cache_integrity');
    assert.equal(e.error.type, 'server_error');
    const ok = await post(server, body);
    assert.equal(ok.status, 200, ok.text);
  }));
}

test('streaming: the error arrives as an SSE error event, then [DONE]', () => withFault('retag', async (server) => {
  const r = await post(server, { ...body, stream: true });
  assert.equal(r.status, 200);
  const events = r.text.split('\n').filter(l => l.startsWith('data: ')).map(l => l.slice(6));
  assert.equal(events.at(-1), '[DONE]');
  const errors = events.filter(d => d !== '[DONE]').map(d => JSON.parse(d)).filter(j => j.error);
  assert.equal(errors.length, 1, r.text);
  assert.equal(errors[0].error.code, 'kv_cache_integrity');
  assert.ok(events.length > 2, 'tokens were streamed before the fault');
}));

await run();
