// Under pressure: a KV cache of 16 blocks (256 tokens) with several long
// requests at once still completes every one with the greedy output
// `pagoda generate` gives alone (preemption by recompute, streamed or not,
// with and without prefix caching); and --max-waiting 1 with a burst of
// requests answers the overflow 429 with Retry-After while the admitted ones
// complete correctly. Usage: node pressure.test.mjs <pagoda binary> <model.gguf>
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { Server, assertErrorShape, generate, makeRunner, pool, setup } from './harness.mjs';

// Runs `pagoda ARGS` to its exit (a refused start-up): { code, stderr }.
function runPagoda(bin, args) {
  return new Promise((resolve) => {
    const p = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    p.stderr.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => p.kill('SIGKILL'), 20000);
    p.on('close', (code, signal) => { clearTimeout(timer); resolve({ code: code ?? signal, stderr }); });
  });
}

const { bin, modelPath, OpenAI } = await setup();
const kCtx = 256;  // the tiny pool must hold one full context (start-up check)
const kTinyKv = '160KiB';  // 16 blocks of 16 tokens for stories260K (640 bytes a token)
const { test, run } = makeRunner();

// Each fits the tiny cache alone (prompt + max_tokens <= 256); together they
// need several times its size.
const long = [
  { prompt: 'Once upon a time', n: 200 },
  { prompt: 'Tom had a big red truck', n: 180 },
  { prompt: 'The little bird sang', n: 220 },
  { prompt: 'Lily and her mom went to the store to buy some milk.', n: 170 },
  { prompt: 'One day, a dog named Spot', n: 210 },
  { prompt: 'Sue found a shiny stone', n: 190 },
  { prompt: 'Once upon a time there was', n: 200 },
  { prompt: 'Ben wanted to fly', n: 160 },
];
let refs;

async function complete(client, p, stream) {
  const req = { prompt: p.prompt, max_tokens: p.n, temperature: 0 };
  if (!stream) {
    const r = await client.completions.create(req);
    return { text: r.choices[0].text, finish: r.choices[0].finish_reason, tokens: r.usage.completion_tokens };
  }
  let text = '', finish = null, tokens = null;
  const s = await client.completions.create({ ...req, stream: true, stream_options: { include_usage: true } });
  for await (const chunk of s) {
    if (chunk.usage) tokens = chunk.usage.completion_tokens;
    for (const c of chunk.choices) { text += c.text; finish = c.finish_reason ?? finish; }
  }
  return { text, finish, tokens };
}

function assertMatches(got, ref, what) {
  assert.equal(got.text, ref.text, `${what}: text`);
  assert.equal(got.tokens, ref.generatedTokens, `${what}: completion_tokens`);
  assert.equal(got.finish, ref.stop === 'length' ? 'length' : 'stop', `${what}: finish_reason`);
}

test('pagoda generate gives the references', async () => {
  refs = await pool(long.map(p => () => generate(bin, modelPath, p.prompt, p.n, kCtx)), 2);
});

for (const cache of [true, false]) {
  test(`tiny KV cache (prefix cache ${cache ? 'on' : 'off'}): all complete, outputs as without pressure`, async () => {
    const args = ['--ctx-size', String(kCtx), '--kv-cache-memory', kTinyKv, ...(cache ? [] : ['--no-prefix-cache'])];
    const server = await Server.start(bin, modelPath, OpenAI, args);
    try {
      assert.equal(server.kvCapacityTokens(), 256);
      const results = await Promise.all(long.map((p, i) => complete(server.client, p, i % 2 === 1)));
      results.forEach((got, i) => assertMatches(got, refs[i], `request ${i}`));
      const m = await server.waitIdle();
      assert.ok(m.num_preemptions_total > 0, 'nothing was preempted: the cache was not under pressure');
      assert.equal(m.kv_cache_usage_perc, 0);
      assert.equal(m.request_success_total, long.length);
      console.log(`  ${m.num_preemptions_total} preemptions`);
    } finally {
      assert.equal(await server.stop(), 0);
    }
  });
}

test('--max-waiting 1: a burst gets 429 + Retry-After for the overflow, the admitted complete', async () => {
  const server = await Server.start(bin, modelPath, OpenAI,
                                    ['--ctx-size', '512', '--max-waiting', '1', '--max-running', '1']);
  try {
    const burst = Array.from({ length: 16 }, (_, i) => long[i % long.length]);
    const answers = await Promise.all(burst.map(async (p, i) => {
      const stream = i % 4 === 3;
      const r = await fetch(server.base + '/v1/completions', {
        method: 'POST', headers: { 'Content-Type': 'application/json' }, signal: AbortSignal.timeout(30000),
        body: JSON.stringify({ prompt: p.prompt, max_tokens: p.n, temperature: 0, stream }),
      });
      const text = await r.text();
      return { i, status: r.status, retryAfter: r.headers.get('retry-after'), text, stream };
    }));
    const ok = answers.filter(a => a.status === 200), rejected = answers.filter(a => a.status === 429);
    console.log(`  ${ok.length} admitted, ${rejected.length} rejected`);
    assert.equal(ok.length + rejected.length, burst.length, JSON.stringify(answers.map(a => a.status)));
    assert.ok(ok.length >= 1 && rejected.length >= 1);
    for (const a of rejected) {
      assert.equal(a.retryAfter, '1');
      const body = JSON.parse(a.text);
      assertErrorShape(assert, body, '429');
      assert.equal(body.error.code, 'server_overloaded');
    }
    for (const a of ok) {
      const ref = refs[a.i % long.length];
      let text;
      if (a.stream) {
        const events = a.text.split('\n\n').filter(e => e.startsWith('data: ')).map(e => e.slice(6));
        assert.equal(events.at(-1), '[DONE]');
        text = events.slice(0, -1).map(e => JSON.parse(e).choices.map(c => c.text).join('')).join('');
      } else {
        text = JSON.parse(a.text).choices[0].text;
      }
      assert.equal(text, ref.text, `request ${a.i}`);
    }
    const m = await server.waitIdle();
    assert.equal(m.request_rejected_total, rejected.length);
    assert.equal(m.kv_cache_usage_perc, 0);
    // Through the openai client: the 429 is an APIError with status and headers.
    // Four long requests at once: one runs, one waits, the rest overflow. They
    // reach the server in any order, so none is assumed to be the admitted one.
    const outcomes = await Promise.all(['Once', 'Tom', 'Lily', 'The'].map(
        prompt => server.client.completions.create({ prompt, max_tokens: 400, ignore_eos: true })
                        .then(r => r, e => e)));
    const errs = outcomes.filter(o => o instanceof Error);
    assert.ok(errs.length >= 1, 'no 429 through the client');
    assert.ok(errs.length < outcomes.length, 'none admitted');
    for (const o of outcomes.filter(o => !(o instanceof Error))) assert.equal(o.usage.completion_tokens, 400);
    for (const e of errs) {
      assert.equal(e.status, 429, String(e));
      assert.equal(e.code, 'server_overloaded');
      assert.equal(e.headers.get('retry-after'), '1');
    }
    // More sequences than the queue holds could never be admitted: 400, not 429.
    for (const body of [{ prompt: ['Once', 'Tom'], max_tokens: 1 }, { prompt: 'Once', n: 2, max_tokens: 1 }]) {
      const r = await fetch(server.base + '/v1/completions', { method: 'POST', body: JSON.stringify(body),
                                                               headers: { 'Content-Type': 'application/json' } });
      assert.equal(r.status, 400);
      assert.equal((await r.json()).error.param, 'n');
    }
    // The queue drained: a request now is admitted.
    const after = await server.client.completions.create({ prompt: long[0].prompt, max_tokens: long[0].n, temperature: 0 });
    assert.equal(after.choices[0].text, refs[0].text);
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

test('--request-timeout: requests past their deadline get 504 request_timeout (a stream an error event)', async () => {
  // One running sequence and a 50 ms deadline: the queued requests of a burst
  // of long ones run out of time (queue time counts) whatever the speed.
  const server = await Server.start(bin, modelPath, OpenAI,
                                    ['--ctx-size', '512', '--max-running', '1', '--request-timeout', '0.05']);
  try {
    const burst = Array.from({ length: 8 }, (_, i) => ({ ...long[i], stream: i % 2 === 1 }));
    const answers = await Promise.all(burst.map(async (p) => {
      const r = await fetch(server.base + '/v1/completions', {
        method: 'POST', headers: { 'Content-Type': 'application/json' }, signal: AbortSignal.timeout(30000),
        body: JSON.stringify({ prompt: p.prompt, max_tokens: 480, temperature: 0, ignore_eos: true, stream: p.stream }),
      });
      return { status: r.status, text: await r.text(), stream: p.stream };
    }));
    let timedOut = 0;
    for (const a of answers) {
      if (!a.stream) {
        if (a.status === 200) continue;
        assert.equal(a.status, 504, a.text);
        const body = JSON.parse(a.text);
        assertErrorShape(assert, body, '504');
        assert.equal(body.error.code, 'request_timeout');
        ++timedOut;
        continue;
      }
      // A stream has begun (200) before the deadline passes: the error is an event, then [DONE].
      assert.equal(a.status, 200, a.text);
      const events = a.text.split('\n\n').filter(e => e.startsWith('data: ')).map(e => e.slice(6));
      assert.equal(events.at(-1), '[DONE]');
      const err = events.slice(0, -1).map(e => JSON.parse(e)).find(e => e.error);
      if (err) {
        assert.equal(err.error.code, 'request_timeout');
        ++timedOut;
      }
    }
    console.log(`  ${timedOut} of ${answers.length} timed out`);
    assert.ok(timedOut >= 4, `only ${timedOut} requests timed out`);
    const m = await server.waitIdle();
    assert.equal(m.kv_cache_usage_perc, 0);
    assert.equal(m.num_requests_running, 0);
    assert.equal((await fetch(server.base + '/health')).status, 200);
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

test('--request-timeout rejects bad values', async () => {
  for (const v of ['-1', 'nan', 'soon']) {
    const r = await runPagoda(bin, ['serve', '-m', modelPath, '--port', '0', '--request-timeout', v]);
    assert.notEqual(r.code, 0, v);
    assert.match(r.stderr, /request-timeout/, v);
  }
});

await run();
