// Outputs never depend on what the KV cache held, through HTTP and the
// openai client, for every KV dtype (f16, bf16, fp8_e4m3, int8): the same
// request, greedy or sampled with a seed, returns the same text whether its
// prefix was cold, fully cached (sent again), partly cached (a shared system
// prompt with another user turn), computed inside a batch of 16 mixed
// requests with small prefill chunks, or preempted and recomputed in a KV
// cache far too small for the load. The reference for each request is the
// same request sent alone to a server with --no-prefix-cache.
// Also the reported scenario: with FP8 KV and prefix caching on, one chat
// request three times gives one answer three times (cached_tokens 0, then > 0).
// Usage: node cache_invariance.test.mjs <pagoda binary> <model.gguf>
import assert from 'node:assert/strict';
import { Server, makeRunner, setup } from './harness.mjs';

const { bin, modelPath, OpenAI } = await setup();
const { test, run } = makeRunner();
const kCtx = 256;
const kTypes = ['f16', 'bf16', 'fp8_e4m3', 'int8'];
// stories260K: 5 layers x 4 KV heads x 8 dims. A block of 16 positions holds
// 2 x 5 x 32 x 16 elements (f16/bf16: 10,240 bytes; fp8/int8: 5,120 bytes of
// codes + 640 of scale bytes = 5,760), so these budgets are 16 blocks = 256
// tokens, one full context: 16 concurrent requests must preempt.
const kTinyKv = { f16: '163840', bf16: '163840', fp8_e4m3: '92160', int8: '92160' };

// Eight chat requests share a system prompt longer than two KV blocks; eight
// completions are unrelated. Odd ones are sampled with their own seed.
const system = 'You tell short stories about animals and children. Every story has a happy ending, ' +
               'a dog or a cat, and a lesson about being kind to friends.';
const users = ['Tell me about a cat.', 'Tell me about a dog.', 'A story about a bird, please.', 'Once more, a cat.',
               'What did the little fish do?', 'Tell me about Tom and his ball.', 'A story about the sun.', 'Hi'];
const prompts = ['Once upon a time', 'The cat sat on the mat and', 'Ben had a red ball', 'One day, a little bird',
                 'Lily and her mom went to the store to buy some milk. On the way', 'The sun was hot', 'Sam and Zoe',
                 'Tom was a boy who liked to build things. He built a tower of blocks, a boat of sticks and'];
const requests = [];
users.forEach((u, i) => requests.push({ kind: 'chat', body: {
  messages: [{ role: "system", content: system }, { role: "user", content: u }], max_tokens: 40 + 6 * i } }));
prompts.forEach((p, i) => requests.push({ kind: 'completion', body: { prompt: p, max_tokens: 70 + 8 * i } }));
requests.forEach((r, i) => {
  if (i % 2 === 1) Object.assign(r.body, { temperature: 0.9, top_p: 0.95, seed: 1234 + i });
  else r.body.temperature = 0;
});
assert.equal(requests.length, 16);

// One request, streamed or not: { text, prompt, cached, completion } (token counts from usage).
async function send(client, r, stream) {
  const api = r.kind === 'chat' ? client.chat.completions : client.completions;
  const textOf = (c) => (r.kind === 'chat' ? (c.message ?? c.delta)?.content : c.text) ?? '';
  if (!stream) {
    const res = await api.create(r.body);
    return { text: textOf(res.choices[0]), prompt: res.usage.prompt_tokens,
             cached: res.usage.prompt_tokens_details?.cached_tokens ?? 0, completion: res.usage.completion_tokens };
  }
  let text = '', usage = null;
  const s = await api.create({ ...r.body, stream: true, stream_options: { include_usage: true } });
  for await (const chunk of s) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) text += textOf(c);
  }
  return { text, prompt: usage.prompt_tokens, cached: usage.prompt_tokens_details?.cached_tokens ?? 0,
           completion: usage.completion_tokens };
}

function assertSame(got, refs, what) {
  got.forEach((g, i) => {
    assert.equal(g.text, refs[i].text, `${what}: request ${i} (${requests[i].kind}, ` +
                                       `${requests[i].body.temperature ? 'sampled' : 'greedy'}) text`);
    assert.equal(g.completion, refs[i].completion, `${what}: request ${i} completion_tokens`);
  });
}

async function withServer(type, args, fn) {
  const server = await Server.start(bin, modelPath, OpenAI, ['--ctx-size', String(kCtx), '--kv-cache-dtype', type,
                                                             ...args]);
  try {
    await fn(server);
    const m = await server.waitIdle();
    assert.equal(m.kv_cache_usage_perc, 0, 'KV blocks still held');
  } finally {
    assert.equal(await server.stop(), 0);
  }
}

test('the reported scenario: FP8 KV, the same chat request three times gives one answer', async () => {
  await withServer('fp8_e4m3', [], async (server) => {
    const body = { messages: [{ role: 'system', content: 'You tell short stories.' },
                              { role: 'user', content: 'Tell me about a cat.' }], max_tokens: 32, temperature: 0 };
    const answers = [];
    for (let i = 0; i < 3; ++i) answers.push(await server.client.chat.completions.create(body));
    const cached = answers.map(a => a.usage.prompt_tokens_details.cached_tokens);
    assert.equal(cached[0], 0);
    assert.ok(cached[1] > 0 && cached[2] > 0, `later requests adopt the prefix: ${cached}`);
    for (const a of answers.slice(1)) assert.equal(a.choices[0].message.content, answers[0].choices[0].message.content);
  });
});

for (const type of kTypes) {
  test(`${type}: cold, warm, partly warm, batched and preempted requests give the alone answers`, async () => {
    let refs;
    await withServer(type, ['--no-prefix-cache'], async (server) => {
      refs = [];
      for (const r of requests) refs.push(await send(server.client, r, false));
      assert.ok(refs.every(r => r.cached === 0 && r.text.length > 0));
    });

    await withServer(type, ['--max-batch-tokens', '27'], async (server) => {
      // One by one: the first chat is cold, the later ones find the system
      // prompt cached (partly warm); then all again (warm).
      const alone = [];
      for (const [i, r] of requests.entries()) alone.push(await send(server.client, r, i % 3 === 0));
      assertSame(alone, refs, 'one by one');
      assert.equal(alone[0].cached, 0);
      assert.ok(alone.slice(1, 8).every(r => r.cached >= 32), `shared system prompt adopted: ${alone.map(r => r.cached)}`);
      const again = [];
      for (const r of requests) again.push(await send(server.client, r, false));
      assertSame(again, refs, 'again, warm');
      // Every whole block before the last prompt token (which is recomputed for its logits).
      assert.ok(again.every(r => r.cached === Math.floor((r.prompt - 1) / 16) * 16),
                `every prompt adopted: ${again.map(r => `${r.cached}/${r.prompt}`)}`);
      // All 16 at once, chunked prefill mixed with decodes.
      const together = await Promise.all(requests.map((r, i) => send(server.client, r, i % 2 === 0)));
      assertSame(together, refs, '16 at once');
    });

    for (const cache of [true, false]) {
      await withServer(type, ['--kv-cache-memory', kTinyKv[type], '--max-batch-tokens', '40',
                              ...(cache ? [] : ['--no-prefix-cache'])], async (server) => {
        assert.equal(server.kvCapacityTokens(), kCtx);
        const got = await Promise.all(requests.map((r, i) => send(server.client, r, i % 2 === 1)));
        assertSame(got, refs, `tiny KV cache, prefix cache ${cache ? 'on' : 'off'}`);
        const m = await server.waitIdle();
        assert.ok(m.num_preemptions_total > 0, 'nothing was preempted');
        console.log(`  ${type}, prefix cache ${cache ? 'on' : 'off'}: ${m.num_preemptions_total} preemptions`);
      });
    }
  });
}

await run();
