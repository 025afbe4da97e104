// Batch invariance through HTTP: 16 different greedy /v1/completions requests
// sent at once return exactly what `pagoda generate` returns for each alone
// (text, prompt and completion token counts, finish reason), on a server with
// prefix caching and small steps (chunked prefill, prefill mixed with decode)
// and on one with --no-prefix-cache; chat requests sent at once match the
// same requests sent one by one.
// Usage: node batch_invariance.test.mjs <pagoda binary> <model.gguf>
// PAGODA_E2E_KV_DTYPE (e.g. fp8_e4m3) runs servers and references with that
// KV cache element type (the MoE / MLA registrations use it).
import assert from 'node:assert/strict';
import { Server, generate, makeRunner, pool, setup } from './harness.mjs';

const { bin, modelPath, OpenAI } = await setup();
const kCtx = 512;
const kvArgs = process.env.PAGODA_E2E_KV_DTYPE ? ['--kv-cache-dtype', process.env.PAGODA_E2E_KV_DTYPE] : [];
const { test, run } = makeRunner();

// Six share a prefix of several KV blocks, so the prefix cache adopts
// blocks computed in another batch; two are long enough to be prefilled in
// chunks; one is empty (BOS alone); one needs byte-fallback tokens.
const shared = 'Once upon a time there was a little girl named Lily. She lived in a small house with her mom ' +
               'and dad and a big brown dog called Max. Every morning Lily and Max went to the park to play. ';
const longStory = 'Tom was a boy who liked to build things. He built a tower of blocks, a boat of sticks and a car ' +
                  'of boxes. His sister Sue liked to help him. One day they found an old wheel in the garden. ';
const prompts = [
  { prompt: 'Once upon a time', n: 64 },
  { prompt: 'The cat sat on the mat and', n: 48 },
  { prompt: 'Ben had a red ball', n: 100 },
  { prompt: 'One day, a little bird', n: 33 },
  { prompt: 'The sun was hot', n: 80 },
  { prompt: 'Mia saw a café 🙂 and', n: 40 },
  { prompt: '', n: 24 },
  { prompt: longStory.repeat(2), n: 60 },
  { prompt: longStory.repeat(3) + 'They', n: 90 },
  ...['One day', 'Lily said', 'Max barked and', 'Her mom', 'The park was', 'Suddenly'].map(
      (end, i) => ({ prompt: shared + end, n: 40 + 17 * i })),
  { prompt: 'Sam and Zoe', n: 120 },
];
assert.equal(prompts.length, 16);
let refs;

async function complete(client, p, stream) {
  const req = { prompt: p.prompt, max_tokens: p.n, temperature: 0 };
  if (!stream) {
    const r = await client.completions.create(req);
    return { text: r.choices[0].text, finish: r.choices[0].finish_reason, usage: r.usage };
  }
  let text = '', finish = null, usage = null;
  const s = await client.completions.create({ ...req, stream: true, stream_options: { include_usage: true } });
  for await (const chunk of s) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) { text += c.text; finish = c.finish_reason ?? finish; }
  }
  return { text, finish, usage };
}

function assertMatches(got, ref, what) {
  assert.equal(got.text, ref.text, `${what}: text`);
  assert.equal(got.usage.prompt_tokens, ref.promptTokens, `${what}: prompt_tokens`);
  assert.equal(got.usage.completion_tokens, ref.generatedTokens, `${what}: completion_tokens`);
  assert.equal(got.finish, ref.stop === 'length' ? 'length' : 'stop', `${what}: finish_reason`);
}

// All 16 at once, every other one streamed; returns the responses in order.
// The engine's step count shows that the requests shared batches: a step
// samples at most one token per sequence, so if no step held two requests
// there would be at least as many steps as generated tokens.
async function concurrentRound(server, round) {
  const before = await server.waitIdle();
  const results = await Promise.all(prompts.map((p, i) => complete(server.client, p, (i + round) % 2 === 0)));
  const after = await server.waitIdle();
  results.forEach((got, i) => assertMatches(got, refs[i], `prompt ${i} (round ${round})`));
  const steps = after.iteration_tokens_total_count - before.iteration_tokens_total_count;
  const generated = after.generation_tokens_total - before.generation_tokens_total;
  console.log(`  round ${round}: ${generated} tokens generated in ${steps} engine steps`);
  assert.equal(generated, results.reduce((n, r) => n + r.usage.completion_tokens, 0));
  assert.ok(steps < generated, 'the requests never shared a step');
  return results;
}

test('pagoda generate gives the references', async () => {
  refs = await pool(prompts.map(p => () => generate(bin, modelPath, p.prompt, p.n, kCtx, kvArgs)), 2);
  for (const [i, r] of refs.entries()) assert.ok(r.text.length > 0, `prompt ${i}: empty reference`);
});

test('prefix cache on, small steps: 16 concurrent requests match generate', async () => {
  const server = await Server.start(bin, modelPath, OpenAI, ['--ctx-size', String(kCtx), '--max-batch-tokens', '64', ...kvArgs]);
  try {
    // Cache the shared prefix first so the concurrent ones adopt its blocks.
    await server.client.completions.create({ prompt: shared, max_tokens: 1, temperature: 0 });
    const first = await concurrentRound(server, 0);
    assert.ok(first.slice(9, 15).every(r => r.usage.prompt_tokens_details.cached_tokens >= 32),
              JSON.stringify(first.slice(9, 15).map(r => r.usage)));
    // Again: now every prompt is in the cache, the decode batches differ.
    const second = await concurrentRound(server, 1);
    assert.ok(second.every((r, i) => prompts[i].prompt.length < 40 ||
                                     r.usage.prompt_tokens_details.cached_tokens > 0),
              JSON.stringify(second.map(r => r.usage)));
    const m = await server.waitIdle();
    assert.equal(m.kv_cache_usage_perc, 0);
    assert.ok(m.prefix_cache_hits_total > 0);
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

test('prefix cache off: 16 concurrent requests match generate, nothing cached', async () => {
  const server = await Server.start(bin, modelPath, OpenAI, ['--ctx-size', String(kCtx), '--no-prefix-cache', ...kvArgs]);
  try {
    await server.client.completions.create({ prompt: shared, max_tokens: 1, temperature: 0 });
    for (const round of [0, 1]) {
      const results = await concurrentRound(server, round);
      assert.ok(results.every(r => r.usage.prompt_tokens_details.cached_tokens === 0));
    }
    const m = await server.waitIdle();
    assert.equal(m.kv_cache_usage_perc, 0);
    assert.equal(m.prefix_cache_hits_total, 0);
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

test('chat: 16 concurrent greedy requests match each sent alone', async () => {
  const server = await Server.start(bin, modelPath, OpenAI, ['--ctx-size', String(kCtx), '--max-batch-tokens', '96', ...kvArgs]);
  try {
    const reqs = prompts.map(p => ({ messages: [{ role: 'system', content: 'Tell a story.' },
                                                { role: 'user', content: p.prompt || 'Hi' }],
                                     max_tokens: Math.min(p.n, 64), temperature: 0 }));
    const alone = [];
    for (const r of reqs) alone.push((await server.client.chat.completions.create(r)).choices[0].message.content);
    const together = await Promise.all(reqs.map(r => server.client.chat.completions.create(r)));
    together.forEach((r, i) => assert.equal(r.choices[0].message.content, alone[i], `chat ${i}`));
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

await run();
