// End-to-end: the real `pagoda serve` on stories260K, driven by the official
// openai npm client (v6). Usage: node serve_openai.test.mjs <pagoda binary> <model.gguf>
// Exits 0 with "skipped" when node_modules or the model is absent.
import assert from 'node:assert/strict';
import { Server, makeRunner, setup } from './harness.mjs';

const { bin, modelPath, OpenAI } = await setup();
let server, client, base;
const metric = async (name) => (await server.metrics())[name];
const { test, run } = makeRunner();
const chatMsg = (content) => [{ role: 'user', content }];
let model;

test('models lists the served model', async () => {
  const list = await client.models.list();
  assert.equal(list.data.length, 1);
  model = list.data[0].id;
  assert.equal(model, 'stories260K');
});

test('chat non-streamed', async () => {
  const r = await client.chat.completions.create({ model, messages: chatMsg('Once upon a time'), max_tokens: 16 });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(typeof r.choices[0].message.content, 'string');
  assert.equal(r.usage.completion_tokens, 16);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + 16);
});

test('chat streamed equals non-streamed (greedy) and reports usage', async () => {
  const req = { model, messages: chatMsg('Lily went to the park'), max_tokens: 20, temperature: 0 };
  const full = await client.chat.completions.create(req);
  const stream = await client.chat.completions.create({ ...req, stream: true, stream_options: { include_usage: true } });
  let text = '', finish = null, usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      text += c.delta.content ?? '';
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.equal(text, full.choices[0].message.content);
  assert.equal(finish, full.choices[0].finish_reason);
  assert.equal(usage.completion_tokens, full.usage.completion_tokens);
});

test('completions non-streamed and streamed', async () => {
  const req = { model, prompt: 'Once upon a time', max_tokens: 12, temperature: 0 };
  const full = await client.completions.create(req);
  assert.equal(full.object, 'text_completion');
  let text = '';
  for await (const chunk of await client.completions.create({ ...req, stream: true })) {
    for (const c of chunk.choices) text += c.text;
  }
  assert.equal(text, full.choices[0].text);
});

test('ignore_eos (extension) generates past the end-of-text token', async () => {
  // A +100 bias on stories260K's EOS (id 2) makes it the greedy choice at once.
  const req = { model, prompt: 'Once upon a time', max_tokens: 20, temperature: 0, logit_bias: { 2: 100 } };
  const free = await client.completions.create(req);
  assert.equal(free.choices[0].finish_reason, 'stop');
  assert.equal(free.usage.completion_tokens, 1);
  const forced = await client.completions.create({ ...req, ignore_eos: true });
  assert.equal(forced.choices[0].finish_reason, 'length');
  assert.equal(forced.usage.completion_tokens, 20);
});

test('n=2 gives two choices', async () => {
  const r = await client.chat.completions.create({ model, messages: chatMsg('Tom'), max_tokens: 8, n: 2, seed: 5 });
  assert.deepEqual(r.choices.map(c => c.index).sort(), [0, 1]);
  assert.equal(r.usage.completion_tokens, 16);
});

test('stop strings end the text, also when streamed', async () => {
  const req = { model, prompt: 'Once upon a time', max_tokens: 40, temperature: 0 };
  const text = (await client.completions.create(req)).choices[0].text;
  const stop = text.slice(5, 8);
  const want = text.slice(0, text.indexOf(stop));
  const r = await client.completions.create({ ...req, stop: [stop] });
  assert.equal(r.choices[0].text, want);
  assert.equal(r.choices[0].finish_reason, 'stop');
  let streamed = '';
  for await (const chunk of await client.completions.create({ ...req, stop: [stop], stream: true })) {
    for (const c of chunk.choices) streamed += c.text;
  }
  assert.equal(streamed, want);
});

test('seed makes sampling reproducible', async () => {
  const req = { model, messages: chatMsg('The cat'), max_tokens: 24, temperature: 1, seed: 1234 };
  const a = await client.chat.completions.create(req);
  const b = await client.chat.completions.create(req);
  assert.equal(a.choices[0].message.content, b.choices[0].message.content);
});

test('logprobs and top_logprobs', async () => {
  const r = await client.chat.completions.create({ model, messages: chatMsg('Hi'), max_tokens: 5, logprobs: true,
                                                   top_logprobs: 3 });
  const content = r.choices[0].logprobs.content;
  assert.ok(content.length >= 1);
  for (const t of content) {
    assert.ok(t.logprob <= 0);
    assert.equal(t.top_logprobs.length, 3);
  }
  const c = await client.completions.create({ model, prompt: 'Hi', max_tokens: 4, logprobs: 2 });
  assert.equal(c.choices[0].logprobs.tokens.length, 4);
});

test('echo with logprobs: the prompt tokens lead, each with the logprob the model gives it', async () => {
  const tok = await (await fetch(`${base}/tokenize`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ prompt: 'Once upon a time there was a little girl', add_special_tokens: true }),
  })).json();
  const ids = tok.tokens;
  assert.ok(ids.length >= 8);
  const r = await client.completions.create({ model, prompt: ids, max_tokens: 3, temperature: 0, echo: true,
                                              logprobs: 2, n: 2 });
  for (const ch of r.choices) {
    const lp = ch.logprobs;
    assert.equal(lp.tokens.length, ids.length + 3);
    assert.equal(lp.token_logprobs[0], null);
    assert.equal(lp.top_logprobs[0], null);
    assert.equal(lp.text_offset[0], 0);
    for (let i = 1; i < lp.tokens.length; ++i) {
      assert.ok(lp.token_logprobs[i] <= 0, `entry ${i}`);
      assert.equal(Object.keys(lp.top_logprobs[i]).length, 2, `entry ${i}`);
      assert.equal(lp.text_offset[i], lp.text_offset[i - 1] + Buffer.byteLength(lp.tokens[i - 1]), `entry ${i}`);
    }
    assert.deepEqual(lp.token_logprobs, r.choices[0].logprobs.token_logprobs);
  }
  // Each prompt token's logprob is the one the model gives it as the next
  // token after the tokens before it (forced by logit_bias, which leaves
  // logprobs alone).
  const echo = r.choices[0].logprobs.token_logprobs;
  for (let p = 1; p < ids.length; ++p) {
    const ref = await client.completions.create({ model, prompt: ids.slice(0, p), max_tokens: 1, temperature: 0,
                                                  logprobs: 1, logit_bias: { [ids[p]]: 100 } });
    assert.ok(Math.abs(ref.choices[0].logprobs.token_logprobs[0] - echo[p]) < 1e-4,
              `position ${p}: ${ref.choices[0].logprobs.token_logprobs[0]} vs ${echo[p]}`);
  }
  // Streamed: the echoed prompt comes first with the same logprobs.
  const s = await client.completions.create({ model, prompt: ids, max_tokens: 3, temperature: 0, echo: true,
                                              logprobs: 2, stream: true });
  let streamed = [], text = '';
  for await (const chunk of s) {
    for (const c of chunk.choices) {
      text += c.text;
      if (c.logprobs) streamed = streamed.concat(c.logprobs.token_logprobs);
    }
  }
  assert.deepEqual(streamed, echo);
  assert.equal(text, r.choices[0].text);
});

test('a repeated long prefix is served from the prefix cache', async () => {
  const long = 'Once upon a time there was a little girl named Lily who loved to play in the park with her dog. '.repeat(4);
  await client.chat.completions.create({ model, messages: chatMsg(long), max_tokens: 2 });
  const r = await client.chat.completions.create({ model, messages: chatMsg(long), max_tokens: 2 });
  assert.ok(r.usage.prompt_tokens_details.cached_tokens > 0, JSON.stringify(r.usage));
});

test('16 concurrent streams all complete', async () => {
  const runs = Array.from({ length: 16 }, async (_, i) => {
    let finish = null, n = 0;
    const s = await client.chat.completions.create({ model, messages: chatMsg(`Story ${i}`), max_tokens: 16,
                                                     seed: i, stream: true });
    for await (const chunk of s) for (const c of chunk.choices) { if (c.delta.content) ++n; finish ??= c.finish_reason; }
    return finish;
  });
  const finishes = await Promise.all(runs);
  assert.ok(finishes.every(f => f === 'length' || f === 'stop'), JSON.stringify(finishes));
});

test('cancelling mid-stream frees the KV cache', async () => {
  // stories260K generates 400 tokens in tens of ms: on a loaded machine the
  // engine can finish before the abort reaches it. Such an attempt proves
  // nothing and is repeated; one that is cancelled must free its KV blocks.
  let cancelled = 0;
  for (let attempt = 0; attempt < 5 && cancelled === 0; ++attempt) {
    const successBefore = await metric('request_success_total');
    const ac = new AbortController();
    // ignore_eos: a sampled end of text must not finish the request before the abort.
    const s = await client.completions.create({ model, prompt: 'Once', max_tokens: 400, stream: true, ignore_eos: true },
                                              { signal: ac.signal });
    let n = 0;
    try {
      for await (const _ of s) if (++n === 3) ac.abort();
    } catch (e) {
      if (!(e.name === 'AbortError' || e.constructor.name === 'APIUserAbortError')) throw e;
    }
    let usage = 1, settled = false;
    for (let i = 0; i < 100 && !settled; ++i) {
      await new Promise(r => setTimeout(r, 50));
      const m = await server.metrics();
      ({ kv_cache_usage_perc: usage, request_cancelled_total: cancelled } = m);
      settled = usage === 0 && (cancelled >= 1 || m.request_success_total > successBefore);
    }
    assert.ok(settled, `attempt ${attempt}: the request neither finished nor freed its KV (usage ${usage})`);
  }
  assert.ok(cancelled >= 1, 'every attempt finished before the abort reached the engine');
});

test('bad inputs give OpenAI error objects with 4xx', async () => {
  const cases = [
    [{ model, messages: [] }, 400],
    [{ model: 'nope', messages: chatMsg('x') }, 404],
    [{ model, messages: chatMsg('x'), temperature: 9 }, 400],
    [{ model, messages: chatMsg('x'), max_tokens: 100000 }, 400],
    [{ model, messages: chatMsg('x'), bogus_field: 1 }, 400],
  ];
  for (const [body, status] of cases) {
    await assert.rejects(client.chat.completions.create(body), (e) => {
      assert.equal(e.status, status, JSON.stringify(body));
      assert.equal(typeof e.error?.message, 'string');
      assert.ok('type' in e.error && 'param' in e.error && 'code' in e.error);
      return true;
    });
  }
});

test('metrics expose vLLM-style names with cumulative histograms', async () => {
  const text = await (await fetch(`${base}/metrics`)).text();
  for (const n of ['num_requests_running', 'num_requests_waiting', 'kv_cache_usage_perc',
                   'prefix_cache_queries_total', 'prefix_cache_hits_total', 'prompt_tokens_total',
                   'generation_tokens_total']) {
    assert.ok(text.includes(`pagoda:${n}{`), n);
  }
  for (const h of ['time_to_first_token_seconds', 'inter_token_latency_seconds', 'e2e_request_latency_seconds',
                   'request_queue_time_seconds']) {
    const counts = text.split('\n').filter(l => l.startsWith(`pagoda:${h}_bucket{`)).map(l => Number(l.split(' ').pop()));
    assert.ok(counts.length > 2, h);
    for (let i = 1; i < counts.length; ++i) assert.ok(counts[i] >= counts[i - 1], `${h} not cumulative`);
  }
  assert.ok((await metric('prefix_cache_hits_total')) > 0);
});

await run({
  before: async () => {
    server = await Server.start(bin, modelPath, OpenAI, ['--ctx-size', '512']);
    ({ client, base } = server);
  },
  after: async () => { if (server) assert.equal(await server.stop(), 0); },
});
