// Bounded soak: several concurrent clients send a seeded mix of valid,
// malformed and abandoned requests (streams aborted mid-way, requests whose
// client goes away before the answer, connections closed half-way through a
// request) for PAGODA_SOAK_SECONDS (default 20). Afterwards the server still
// answers correctly (greedy output as before the soak), and /metrics shows
// nothing running or waiting and no KV blocks held.
// Usage: node soak.test.mjs <pagoda binary> <model.gguf>
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { Server, assertErrorShape, makeRunner, setup } from './harness.mjs';

const { bin, modelPath, OpenAI } = await setup();
const kCtx = 512;
const kSeconds = Number(process.env.PAGODA_SOAK_SECONDS ?? 20);
const kClients = 6;
const kSeed = Number(process.env.PAGODA_SOAK_SEED ?? 20240611);
const { test, run } = makeRunner();
let server;

// mulberry32: a small seeded PRNG, so a failing mix can be replayed.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const greedyCompletion = { prompt: 'Once upon a time', max_tokens: 48, temperature: 0 };
const greedyChat = { messages: [{ role: 'user', content: 'Tell me about a dog.' }], max_tokens: 40, temperature: 0 };
let before;

async function greedyTexts() {
  const c = await server.client.completions.create(greedyCompletion);
  const h = await server.client.chat.completions.create(greedyChat);
  return { completion: c.choices[0].text, chat: h.choices[0].message.content };
}

const isAbort = (e) => e?.name === 'AbortError' || e?.constructor?.name === 'APIUserAbortError' ||
                       e?.name === 'TimeoutError' || e?.cause?.name === 'AbortError';

const malformed = [
  ['/v1/chat/completions', '{"messages": ['],
  ['/v1/chat/completions', '{"messages": []}'],
  ['/v1/chat/completions', '{"messages": [{"role": "wizard", "content": "x"}]}'],
  ['/v1/chat/completions', '{"messages": [{"role": "user", "content": "x"}], "max_tokens": "9"}'],
  ['/v1/completions', '{"prompt": "x", "n": 400}'],
  ['/v1/completions', '{"prompt": "x", "max_tokens": 0}'],
  ['/v1/completions', '{"prompt": "x", "model": "other"}'],
  ['/v1/completions', '{"prompt": "a\\ud800"}'],
  ['/v1/completions', Buffer.from([...Buffer.from('{"prompt":"'), 0xf8, 0x88, ...Buffer.from('"}')])],
  ['/v1/completions', `{"prompt": "${'word '.repeat(700)}"}`],
];

// Opens a raw connection, writes `data`, then waits `ms` and destroys it.
function rawAbandon(data, ms) {
  return new Promise((resolve) => {
    const sock = connect(server.port, '127.0.0.1', () => {
      sock.write(data);
      setTimeout(() => { sock.destroy(); resolve(); }, ms);
    });
    sock.on('data', () => {});
    sock.on('error', () => resolve());
  });
}

function streamRequestBytes(body) {
  const b = JSON.stringify(body);
  return `POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
         `Content-Length: ${Buffer.byteLength(b)}\r\n\r\n${b}`;
}

// One client: actions drawn from `rand` until the deadline. Counts each kind;
// pushes anything unexpected to `problems`.
async function client(id, rand, deadline, counts, problems) {
  const c = server.client;
  const pick = (xs) => xs[Math.floor(rand() * xs.length)];
  const story = () => pick(['Once upon a time', 'Tom and Sue', 'The little dog', 'Lily wanted', '']) +
                      pick(['', ' went to the park', ' saw a big tree', ' was happy']);
  const actions = {
    async validCompletion() {
      const max = 1 + Math.floor(rand() * 64);
      const r = await c.completions.create({ prompt: story(), max_tokens: max, temperature: rand() * 1.5,
                                             n: 1 + Math.floor(rand() * 3), stop: rand() < 0.3 ? ['.'] : undefined });
      assert.ok(r.choices.every(ch => ch.finish_reason === 'length' || ch.finish_reason === 'stop'));
      assert.ok(r.usage.completion_tokens <= max * r.choices.length);
    },
    async validChatStream() {
      let finish = null;
      const s = await c.chat.completions.create({ messages: [{ role: 'user', content: story() || 'Hi' }],
                                                  max_tokens: 1 + Math.floor(rand() * 80), stream: true });
      for await (const chunk of s) for (const ch of chunk.choices) finish = ch.finish_reason ?? finish;
      assert.ok(finish === 'length' || finish === 'stop', String(finish));
    },
    async greedyDuringLoad() {
      const r = await c.completions.create(greedyCompletion);
      assert.equal(r.choices[0].text, before.completion, 'greedy output changed under load');
    },
    async malformedRequest() {
      const [path, body] = pick(malformed);
      const r = await fetch(server.base + path, { method: 'POST', body, signal: AbortSignal.timeout(15000),
                                                  headers: { 'Content-Type': 'application/json' } });
      assert.ok(r.status >= 400 && r.status < 500, `${r.status} for ${String(body).slice(0, 60)}`);
      assertErrorShape(assert, await r.json(), 'malformed');
    },
    async abortedStream() {
      const ac = new AbortController();
      const after = 1 + Math.floor(rand() * 20);
      let n = 0;
      try {
        const s = await c.completions.create({ prompt: story(), max_tokens: 400, stream: true, n: pick([1, 1, 2]) },
                                             { signal: ac.signal });
        for await (const _ of s) if (++n === after) ac.abort();
      } catch (e) {
        if (!isAbort(e)) throw e;
      }
    },
    async abandonedNonStream() {
      const ac = new AbortController();
      setTimeout(() => ac.abort(), Math.floor(rand() * 30));
      try {
        await c.chat.completions.create({ messages: [{ role: 'user', content: story() || 'Hi' }], max_tokens: 300 },
                                        { signal: ac.signal });
      } catch (e) {
        if (!isAbort(e)) throw e;
      }
    },
    async halfSentRequest() {
      const bytes = streamRequestBytes({ prompt: story(), max_tokens: 100 });
      await rawAbandon(bytes.slice(0, Math.floor(rand() * bytes.length)), Math.floor(rand() * 20));
    },
    async closedMidStream() {
      await rawAbandon(streamRequestBytes({ prompt: story(), max_tokens: 400, stream: true }), 5 + Math.floor(rand() * 40));
    },
    async garbageBytes() {
      await rawAbandon(Buffer.from(Array.from({ length: 64 }, () => Math.floor(rand() * 256))), 5);
    },
  };
  const weights = [['validCompletion', 3], ['validChatStream', 2], ['greedyDuringLoad', 1], ['malformedRequest', 3],
                   ['abortedStream', 3], ['abandonedNonStream', 2], ['halfSentRequest', 1], ['closedMidStream', 2],
                   ['garbageBytes', 1]];
  const total = weights.reduce((s, [, w]) => s + w, 0);
  while (Date.now() < deadline) {
    let x = rand() * total, name;
    for ([name] of weights) if ((x -= weights.find(w => w[0] === name)[1]) < 0) break;
    try {
      await actions[name]();
      counts[name] = (counts[name] ?? 0) + 1;
    } catch (e) {
      problems.push(`client ${id} ${name}: ${e.stack ?? e}`);
      if (problems.length > 20) return;
    }
  }
}

test('greedy outputs before the soak', async () => {
  before = await greedyTexts();
  assert.ok(before.completion.length > 0 && before.chat.length > 0);
});

test(`${kClients} clients, ${kSeconds} s of mixed valid, malformed and abandoned requests`, async () => {
  const deadline = Date.now() + kSeconds * 1000;
  const counts = {}, problems = [];
  const seedRand = rng(kSeed);
  await Promise.all(Array.from({ length: kClients },
                                (_, i) => client(i, rng(Math.floor(seedRand() * 2 ** 32)), deadline, counts, problems)));
  console.log(`  seed ${kSeed}: ${JSON.stringify(counts)}`);
  assert.deepEqual(problems, []);
  assert.ok(Object.values(counts).reduce((a, b) => a + b, 0) > 50, 'too few requests went through');
});

test('afterwards: nothing running or waiting, no KV blocks held', async () => {
  assert.ok(!server.exited, 'the server died');
  const m = await server.waitIdle(10000);
  assert.equal(m.num_requests_running, 0);
  assert.equal(m.num_requests_waiting, 0);
  assert.equal(m.kv_cache_usage_perc, 0);
  assert.ok(m.request_cancelled_total > 0, 'no request was cancelled');
  assert.ok(m.request_success_total > 0);
  assert.equal(m.request_failed_total ?? 0, 0);
});

test('afterwards: health, and the same greedy outputs as before', async () => {
  assert.equal((await fetch(server.base + '/health')).status, 200);
  assert.deepEqual(await greedyTexts(), before);
  assert.equal((await server.waitIdle()).kv_cache_usage_perc, 0);
});

await run({
  before: async () => { server = await Server.start(bin, modelPath, OpenAI, ['--ctx-size', String(kCtx)]); },
  after: async () => { if (server) assert.equal(await server.stop(), 0); },
});
