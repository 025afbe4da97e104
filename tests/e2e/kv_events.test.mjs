// KV events through the real server: `pagoda serve --kv-events` publishes
// the prefix cache's events over ZeroMQ (the `zeromq` npm package receives
// them) as msgpack, decoded here with @msgpack/msgpack, an independent
// reader, into vLLM's field layout (vllm/distributed/kv_events.py): a batch
// map {ts, events, data_parallel_rank}, events tagged by "type". Stored
// blocks must hold the prompt's tokens as /tokenize gives them; the replay
// socket must hand a late joiner every batch it missed; bad flags fail start-up.
// Usage: node kv_events.test.mjs <pagoda binary> <model.gguf>
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Server, freePort, makeRunner, setup, sleep } from './harness.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const { bin, modelPath, OpenAI } = await setup();
if (!existsSync(join(here, 'node_modules', 'zeromq')) || !existsSync(join(here, 'node_modules', '@msgpack'))) {
  console.log('skipped: zeromq / @msgpack/msgpack absent (run npm ci in tests/e2e)');
  process.exit(0);
}
const zmq = await import('zeromq');
const { Decoder } = await import('@msgpack/msgpack');
const decoder = new Decoder({ useBigInt64: true });
const { test, run } = makeRunner();
const kBlock = 16;  // pagoda serve's block size
const END = 0xffffffffffffffffn;

let server, pubEp, replayEp, model;
const live = [];  // { seq, payload, batch } as received on the SUB
let sub;

const asBig = (h) => (typeof h === 'bigint' ? h : BigInt(h));

// Every event in vLLM's layout: map with the tag first, the fields vLLM's structs declare.
function checkBatchLayout(batch) {
  assert.equal(typeof batch, 'object');
  assert.ok(!Array.isArray(batch), 'batch is a map (vLLM >= 0.11 layout)');
  assert.equal(typeof batch.ts, 'number');
  assert.ok(Math.abs(batch.ts - Date.now() / 1000) < 600, 'ts is seconds since the epoch');
  assert.ok(Array.isArray(batch.events));
  assert.equal(batch.data_parallel_rank, 0);
  for (const e of batch.events) {
    assert.equal(Object.keys(e)[0], 'type', 'the tag comes first');
    if (e.type === 'BlockStored') {
      assert.deepEqual(Object.keys(e), ['type', 'block_hashes', 'parent_block_hash', 'token_ids', 'block_size',
                                        'lora_id', 'medium', 'lora_name']);
      assert.equal(e.block_size, kBlock);
      assert.equal(e.token_ids.length, e.block_hashes.length * kBlock);
      assert.equal(e.medium, 'CPU');
      assert.equal(e.lora_id, null);
      assert.equal(e.lora_name, null);
    } else if (e.type === 'BlockRemoved') {
      assert.deepEqual(Object.keys(e), ['type', 'block_hashes', 'medium']);
    } else {
      assert.equal(e.type, 'AllBlocksCleared');
      assert.deepEqual(Object.keys(e), ['type']);
    }
  }
}

async function receiveLive() {
  for await (const frames of sub) {
    assert.equal(frames.length, 3, 'topic, seq, payload');
    assert.equal(frames[0].length, 0, 'empty topic (vLLM default)');
    assert.equal(frames[1].length, 8);
    live.push({ seq: frames[1].readBigUInt64BE(0), payload: Buffer.from(frames[2]), batch: decoder.decode(frames[2]) });
  }
}

async function waitFor(pred, what, ms = 10000) {
  for (let t = 0; t < ms; t += 20) {
    if (pred()) return;
    await sleep(20);
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function tokenize(prompt) {
  const r = await fetch(`${server.base}/tokenize`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ prompt }) });
  assert.equal(r.status, 200);
  return (await r.json()).tokens;
}

// The chains stored so far: BlockStored events' blocks by hash.
function storedBlocks() {
  const blocks = new Map();  // hash -> { parent, tokens }
  for (const { batch } of live) {
    for (const e of batch.events) {
      if (e.type !== 'BlockStored') continue;
      let parent = e.parent_block_hash === null ? null : asBig(e.parent_block_hash);
      e.block_hashes.forEach((h, i) => {
        blocks.set(asBig(h), { parent, tokens: e.token_ids.slice(i * kBlock, (i + 1) * kBlock) });
        parent = asBig(h);
      });
    }
  }
  return blocks;
}

// The tokens of the stored chain that starts at a first block and follows `tokens`.
function chainCovering(blocks, tokens) {
  const out = [];
  let parent = null;
  for (;;) {
    const next = [...blocks.entries()].find(([, b]) => b.parent === parent &&
      b.tokens.every((t, i) => t === tokens[out.length + i]));
    if (!next) return out;
    out.push(...next[1].tokens);
    parent = next[0];
  }
}

test('stored blocks hold the prompt tokens, chained, in vLLM layout', async () => {
  const prompt = 'Once upon a time there was a little girl who loved to play in the park with her friends. ' +
                 'One day she found a shiny red ball under a big green tree and she was very happy.';
  const tokens = await tokenize(prompt);
  assert.ok(tokens.length >= 2 * kBlock, `prompt of ${tokens.length} tokens`);
  const before = live.length;
  const r = await server.client.completions.create({ model, prompt, max_tokens: 8, temperature: 0 });
  const fullBlocks = Math.floor(tokens.length / kBlock) * kBlock;
  await waitFor(() => chainCovering(storedBlocks(), tokens).length >= fullBlocks, 'the prompt blocks');
  for (const m of live.slice(before)) checkBatchLayout(m.batch);
  const chain = chainCovering(storedBlocks(), tokens);
  assert.deepEqual(chain.slice(0, fullBlocks), tokens.slice(0, fullBlocks));
  assert.equal(r.usage.prompt_tokens, tokens.length);

  // The same prompt again: served from the cache, nothing new stored for it.
  const n = live.length;
  const again = await server.client.completions.create({ model, prompt, max_tokens: 1, temperature: 0 });
  assert.ok(again.usage.prompt_tokens_details.cached_tokens >= fullBlocks - kBlock, 'cached');
  await sleep(200);
  for (const m of live.slice(n)) {
    for (const e of m.batch.events) {
      if (e.type === 'BlockStored') assert.ok(e.parent_block_hash !== null, 'no first block stored twice');
    }
  }
});

test('sequence numbers only go up, one per batch', async () => {
  assert.ok(live.length >= 2, 'batches arrived live');
  for (let i = 1; i < live.length; ++i) assert.equal(live[i].seq, live[i - 1].seq + 1n);
});

test('a late joiner gets every batch from the replay socket', async () => {
  const dealer = new zmq.Dealer({ receiveTimeout: 5000 });
  dealer.connect(replayEp);
  const start = Buffer.alloc(8);  // seq 0, 8 bytes big-endian, after vLLM's empty delimiter
  await dealer.send([Buffer.alloc(0), start]);
  const replayed = [];
  for (;;) {
    const [delim, seq, payload] = await dealer.receive();
    assert.equal(delim.length, 0);
    const s = seq.readBigUInt64BE(0);
    if (s === END) { assert.equal(payload.length, 0); break; }
    replayed.push({ seq: s, payload: Buffer.from(payload) });
  }
  dealer.close();
  assert.ok(replayed.length > 0);
  replayed.forEach((r, i) => assert.equal(r.seq, BigInt(i), 'contiguous from 0'));
  // seq 0 (sent before anyone could subscribe) says the cache starts empty.
  assert.deepEqual(decoder.decode(replayed[0].payload).events.map(e => e.type), ['AllBlocksCleared']);
  for (const m of live) {
    const r = replayed.find(x => x.seq === m.seq);
    assert.ok(r, `live seq ${m.seq} is in the replay buffer`);
    assert.ok(r.payload.equals(m.payload), 'replayed payload equals the live one');
  }
});

for (const [args, flag] of [[['--kv-events', 'localhost:5557'], '--kv-events'],
                             [['--kv-events', 'tcp://127.0.0.1:1', '--kv-events-replay', 'udp://x'], '--kv-events-replay'],
                             [['--kv-events-topic', 'kv'], '--kv-events'],
                             [['--kv-events', 'tcp://127.0.0.1:*', '--no-prefix-cache'], '--no-prefix-cache'],
                             [['--kv-events', 'tcp://256.1.1.1:80'], '--kv-events']]) {
  test(`bad flags fail start-up naming ${flag}: ${args.join(' ')}`, async () => {
    const p = spawn(bin, ['serve', '-m', modelPath, '--port', '0', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    p.stderr.on('data', d => { err += d; });
    const code = await new Promise(r => p.on('close', r));
    assert.equal(code, 1, err);
    assert.ok(err.includes(flag), err);
  });
}

await run({
  before: async () => {
    pubEp = `tcp://127.0.0.1:${await freePort()}`;
    replayEp = `tcp://127.0.0.1:${await freePort()}`;
    server = await Server.start(bin, modelPath, OpenAI, ['--ctx-size', '256', '--kv-events', pubEp,
                                                         '--kv-events-replay', replayEp]);
    assert.ok(server.stderr.includes(`KV events on ${pubEp}`), 'the bound endpoint is printed');
    model = (await server.client.models.list()).data[0].id;
    sub = new zmq.Subscriber();
    sub.connect(pubEp);
    sub.subscribe();
    receiveLive().catch(() => {});
    await sleep(300);  // the subscription reaches the publisher
  },
  after: async () => {
    sub?.close();
    await server?.stop();
  },
});
