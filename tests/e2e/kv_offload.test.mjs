// KV offload, disk tier (docs/KV_OFFLOAD.md), through HTTP and the openai
// client, for every KV dtype on stories260K and for the MLA fixture
// (deepseek2, latent cache): a prompt whose blocks the tiny pool evicted is
// restored from disk (cached_tokens > 0, the disk tier's hit metric rises)
// and returns exactly the greedy tokens and logprobs of the same request on
// a server with no prefix cache at all; a restarted server serves it from
// its disk tier; a block corrupted on disk is detected (metric) and
// recomputed, never served; a server whose fingerprint differs (another
// --decode-weights) never adopts the blocks; bad flags are refused.
// Usage: node kv_offload.test.mjs <pagoda binary> <model.gguf>
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Server, makeRunner, setup, sleep } from './harness.mjs';

const { bin, modelPath, OpenAI } = await setup();
const { test, run } = makeRunner();
const mla = path.join(path.dirname(modelPath), 'synthetic', 'deepseek2.gguf');
const kCtx = 256;

// The request that comes back, and prompts that push its blocks out of a
// pool of a few blocks (each well over the pool's size in tokens).
const returning = 'Lily and her mom went to the park. They saw a big dog with a red ball. The dog ran to ' +
                  'Lily and wanted to play. Lily threw the ball far away and the dog ran after it.';
const flood = ['Tom had a little boat. He took it to the pond every day and watched it float on the water.',
               'Once upon a time there was a cat who liked to sleep in the sun all day long, every day.',
               'Ben and Sue found a shiny stone in the garden. They wanted to show it to their dad at once.',
               'The bird sang a happy song in the tree. A little girl heard it and began to dance and sing.',
               'Max wanted to build a tall tower of blocks. He put one block on top of another very slowly.',
               'Anna saw a big red apple on the table. She was very hungry, so she asked her mom for it.'];

function blockFiles(dir) {
  const out = [];
  for (const fp of existsSync(dir) ? readdirSync(dir) : []) {
    for (const f of readdirSync(path.join(dir, fp))) if (f.endsWith('.kvb')) out.push(path.join(dir, fp, f));
  }
  return out;
}

async function complete(server) {
  const r = await server.client.completions.create({ prompt: returning, max_tokens: 24, temperature: 0, logprobs: 3 });
  return { text: r.choices[0].text, lp: JSON.stringify(r.choices[0].logprobs),
           cached: r.usage.prompt_tokens_details?.cached_tokens ?? 0, prompt: r.usage.prompt_tokens };
}

async function waitFor(server, pred, what, ms = 10000) {
  const t0 = Date.now();
  for (;;) {
    const m = await server.metrics();
    if (pred(m)) return m;
    if (Date.now() - t0 > ms) assert.fail(`timed out waiting for ${what}: ${JSON.stringify(m)}`);
    await sleep(50);
  }
}

// Tiny pools: a few blocks beyond one request's prompt.
function poolArgs(model, type) {
  // The fixture's latent rows: 18 blocks of 16 positions (3,072 bytes at f16, about 1,660 at fp8).
  if (model === mla) return ['--kv-cache-memory', type === 'f16' || type === 'bf16' ? '56000' : '30000'];
  return ['--kv-cache-memory', type === 'f16' || type === 'bf16' ? '163840' : '92160'];
}

async function roundTrip(model, type) {
  const dir = mkdtempSync(path.join(tmpdir(), 'pagoda-kvoff-'));
  const common = ['--ctx-size', String(kCtx), '--kv-cache-dtype', type];
  const offload = [...common, ...poolArgs(model, type), '--kv-offload', 'disk=64MiB', '--kv-offload-dir', dir];
  try {
    // Reference: no prefix cache, nothing ever reused.
    let ref;
    {
      const s = await Server.start(bin, model, OpenAI, [...common, '--no-prefix-cache']);
      try { ref = await complete(s); } finally { assert.equal(await s.stop(), 0); }
    }
    {
      const s = await Server.start(bin, model, OpenAI, offload);
      try {
        const cold = await complete(s);
        assert.equal(cold.text, ref.text, `${type}: cold`);
        assert.equal(cold.lp, ref.lp, `${type}: cold logprobs`);
        for (const p of flood) await s.client.completions.create({ prompt: p, max_tokens: 8, temperature: 0 });
        await waitFor(s, (m) => m.kv_offload_disk_writes_total > 0 && m.kv_offload_disk_queue_depth === 0, 'write-back');
        const before = (await s.metrics()).kv_offload_disk_hits_tokens_total;
        const back = await complete(s);
        // The engine's counters are published after the step that answered.
        await waitFor(s, (m) => m.kv_offload_disk_hits_tokens_total > before, `${type}: restored from disk`);
        assert.ok(back.cached > 0, `${type}: cached_tokens ${back.cached}`);
        assert.equal(back.text, ref.text, `${type}: restored text`);
        assert.equal(back.lp, ref.lp, `${type}: restored logprobs`);
      } finally { assert.equal(await s.stop(), 0); }
    }
    assert.ok(blockFiles(dir).length > 0, 'block files on disk');
    // A restart serves the returning prompt from the disk tier.
    {
      const s = await Server.start(bin, model, OpenAI, offload);
      try {
        const m0 = await s.metrics();
        assert.ok(m0.kv_offload_disk_blocks > 0, `${type}: startup scan found the blocks`);
        const back = await complete(s);
        await waitFor(s, (m) => m.kv_offload_disk_hits_tokens_total > 0, `${type}: restored after restart`);
        assert.ok(back.cached > 0, `${type}: cached_tokens after restart ${back.cached}`);
        assert.equal(back.text, ref.text, `${type}: after restart`);
        assert.equal(back.lp, ref.lp, `${type}: after restart logprobs`);
      } finally { assert.equal(await s.stop(), 0); }
    }
    return { dir, ref };
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
}

for (const type of ['f16', 'bf16', 'fp8_e4m3', 'int8']) {
  test(`stories260K ${type}: evicted, restored from disk, restarted: exactly the uncached answer`, async () => {
    const { dir } = await roundTrip(modelPath, type);
    rmSync(dir, { recursive: true, force: true });
  });
}

test('MLA (deepseek2 fixture, latent cache) f16 and fp8: restored blocks give the uncached answer', async () => {
  if (!existsSync(mla)) { console.log(`  (no ${mla}: skipped)`); return; }
  for (const type of ['f16', 'fp8_e4m3']) {
    const { dir } = await roundTrip(mla, type);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a block corrupted on disk is detected and recomputed; another fingerprint adopts nothing', async () => {
  const { dir, ref } = await roundTrip(modelPath, 'f16');
  try {
    const files = blockFiles(dir);
    // Flip one payload byte of every block (past the header).
    for (const f of files) {
      const b = readFileSync(f);
      b[b.length - 100] ^= 0x40;
      writeFileSync(f, b);
    }
    const args = ['--ctx-size', String(kCtx), '--kv-cache-dtype', 'f16', ...poolArgs(modelPath, 'f16'),
                  '--kv-offload', 'disk=64MiB', '--kv-offload-dir', dir];
    {
      const s = await Server.start(bin, modelPath, OpenAI, args);
      try {
        const back = await complete(s);
        const m = await waitFor(s, (x) => x.kv_offload_disk_corrupt_total >= 1, 'corruption counted');
        assert.equal(m.kv_offload_disk_hits_tokens_total, 0, 'no corrupted block adopted');
        assert.equal(back.cached, 0);
        assert.equal(back.text, ref.text, 'recomputed text');
        assert.equal(back.lp, ref.lp, 'recomputed logprobs');
      } finally { assert.equal(await s.stop(), 0); }
    }
    // The recomputed blocks are written again once evicted; a server whose
    // decode weights differ (another fingerprint) keeps its own directory
    // and adopts none of them.
    {
      const s = await Server.start(bin, modelPath, OpenAI, [...args, '--decode-weights', 'q4_0']);
      try {
        const r = await complete(s);
        assert.equal(r.cached, 0, 'another fingerprint adopted blocks');
        const m = await waitFor(s, (x) => x.request_success_total >= 1, 'the request counted');
        assert.equal(m.kv_offload_disk_hits_tokens_total, 0, 'another fingerprint adopted blocks');
        assert.equal(m.kv_offload_disk_blocks, 0, 'another fingerprint sees no blocks');
      } finally { assert.equal(await s.stop(), 0); }
    }
    assert.ok(readdirSync(dir).length >= 1);
  } finally { rmSync(dir, { recursive: true, force: true }); }
});

// The shared tier: one redis-server of this test's own (loopback, no
// persistence). Replica A evicts the returning prompt's blocks into Redis;
// replica B, a separate process that never saw the prompt, serves it from
// Redis: exactly the uncached answer. A value corrupted in Redis is refused
// (counted) and recomputed. (Salt isolation: the block hash folds the
// tenant's salt in; PagedKvCacheTest covers it.)
async function startRedis() {
  const probe = spawnSync('redis-server', ['--version']);
  if (probe.status !== 0) return null;
  const port = 20000 + Math.floor(Math.random() * 20000);
  const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
                                      '--maxmemory', '256mb', '--maxmemory-policy', 'allkeys-lru'],
                     { stdio: 'ignore' });
  process.on('exit', () => proc.kill('SIGKILL'));
  for (let i = 0; i < 100; ++i) {
    if (spawnSync('redis-cli', ['-p', String(port), 'ping']).stdout?.toString().includes('PONG')) {
      return { proc, port, url: `redis://127.0.0.1:${port}` };
    }
    await sleep(50);
  }
  proc.kill('SIGKILL');
  throw new Error('redis-server did not start');
}

function redisCli(redis, ...args) {
  return spawnSync('redis-cli', ['-p', String(redis.port), ...args], { encoding: 'utf8' }).stdout.trim();
}

test('Redis tier: a second replica serves the returning prompt from the shared store; corrupted values are recomputed', async () => {
  const redis = await startRedis();
  if (!redis) { console.log('  (redis-server is not installed: skipped; scripts/setup --tests installs it)'); return; }
  try {
    const cases = [[modelPath, 'f16'], [modelPath, 'bf16'], [modelPath, 'fp8_e4m3'], [modelPath, 'int8']];
    if (existsSync(mla)) cases.push([mla, 'f16'], [mla, 'fp8_e4m3']);
    for (const [model, type] of cases) {
      const what = `${path.basename(model)} ${type}`;
      redisCli(redis, 'FLUSHALL');
      const common = ['--ctx-size', String(kCtx), '--kv-cache-dtype', type];
      const shared = [...common, ...poolArgs(model, type), '--kv-offload', `redis=${redis.url}`];
      let ref;
      {
        const s = await Server.start(bin, model, OpenAI, [...common, '--no-prefix-cache']);
        try { ref = await complete(s); } finally { assert.equal(await s.stop(), 0); }
      }
      {
        const a = await Server.start(bin, model, OpenAI, shared);
        try {
          assert.equal((await complete(a)).text, ref.text, `${what}: cold on A`);
          for (const p of flood) await a.client.completions.create({ prompt: p, max_tokens: 8, temperature: 0 });
          await waitFor(a, (m) => m.kv_offload_redis_writes_total > 0 && m.kv_offload_redis_queue_depth === 0,
                        `${what}: write-back to Redis`);
        } finally { assert.equal(await a.stop(), 0); }
      }
      const keys = redisCli(redis, '--scan', '--pattern', 'pagoda:kv:*').split('\n').filter(Boolean);
      assert.ok(keys.length > 0, `${what}: keys in Redis`);
      {
        const b = await Server.start(bin, model, OpenAI, shared);
        try {
          const back = await complete(b);
          await waitFor(b, (m) => m.kv_offload_redis_hits_tokens_total > 0, `${what}: restored from Redis on B`);
          assert.ok(back.cached > 0, `${what}: cached_tokens on B ${back.cached}`);
          assert.equal(back.text, ref.text, `${what}: B's text`);
          assert.equal(back.lp, ref.lp, `${what}: B's logprobs`);
        } finally { assert.equal(await b.stop(), 0); }
      }
      if (model !== modelPath || type !== 'f16') continue;
      // Corrupt every value (one payload byte) and start a fresh replica.
      for (const k of redisCli(redis, '--scan', '--pattern', 'pagoda:kv:*').split('\n').filter(Boolean)) {
        const len = Number(redisCli(redis, 'STRLEN', k));
        redisCli(redis, 'SETRANGE', k, String(len - 100), 'X');
      }
      {
        const c = await Server.start(bin, model, OpenAI, shared);
        try {
          const back = await complete(c);
          const m = await waitFor(c, (x) => x.kv_offload_redis_corrupt_total >= 1, 'corruption in Redis counted');
          assert.equal(m.kv_offload_redis_hits_tokens_total, 0, 'no corrupted block adopted');
          assert.equal(back.cached, 0);
          assert.equal(back.text, ref.text, 'recomputed text');
          assert.equal(back.lp, ref.lp, 'recomputed logprobs');
        } finally { assert.equal(await c.stop(), 0); }
      }
    }
  } finally { redis.proc.kill('SIGKILL'); }
});

test('bad --kv-offload flags are refused with a clear message', async () => {
  const cases = [
    [['--kv-offload', 'disk=64MiB'], /needs --kv-offload-dir/],
    [['--kv-offload', 'tape=1GiB', '--kv-offload-dir', '/tmp/x'], /expected memory=SIZE, disk=SIZE/],
    [['--kv-offload', 'disk=1GiB,disk=2GiB', '--kv-offload-dir', '/tmp/x'], /each once/],
    [['--kv-offload-dir', '/tmp/x'], /needs --kv-offload disk=SIZE/],
    [['--kv-offload', 'redis=http://127.0.0.1:1'], /bad Redis URL/],
    [['--kv-offload', 'redis=redis://:hunter2@127.0.0.1:1'], /Redis tier/],
    [['--kv-offload', 'disk=lots', '--kv-offload-dir', '/tmp/x'], /kv-offload/],
    [['--kv-offload', 'disk=64MiB', '--kv-offload-dir', '/tmp/x', '--no-prefix-cache'], /no-prefix-cache/],
    [['--kv-offload', 'disk=1', '--kv-offload-dir', path.join(tmpdir(), 'pagoda-kvoff-small')], /hold no block file/],
  ];
  for (const [args, re] of cases) {
    const r = spawnSync(bin, ['serve', '-m', modelPath, '--port', '0', ...args], { encoding: 'utf8', timeout: 30000 });
    assert.notEqual(r.status, 0, `${args.join(' ')}: exit ${r.status}`);
    assert.match(r.stderr, re, args.join(' '));
    assert.doesNotMatch(r.stderr, /hunter2/, 'a Redis password never reaches the log');
  }
  rmSync(path.join(tmpdir(), 'pagoda-kvoff-small'), { recursive: true, force: true });
});

await run();
