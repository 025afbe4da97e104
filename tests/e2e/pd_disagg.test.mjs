// Prefill/decode disaggregation (docs/KV_OFFLOAD.md): a prefill replica
// (--role prefill) computes a prompt and streams its KV blocks over TCP to a
// decode replica (--role decode --kv-transfer-listen), which continues the
// request. Checked against one colocated replica, greedy, text and logprobs:
//   - same precision: the pair returns exactly the colocated answer, the decode
//     replica restores the prompt's blocks from what it received (cached_tokens,
//     transfer metrics);
//   - per-phase precision: a Q8_0 prefill replica with FP8 KV feeding a decode
//     replica with --decode-weights q4_0 --kv-cache-dtype fp8_e4m3 returns
//     exactly what one replica with those flags returns; an f16-KV prefill
//     replica's blocks are converted to FP8 on arrival (counted) and served;
//   - faults: a decode address nobody listens on, and one that accepts and
//     never reads (the transfer times out), still answer the prefill leg 200
//     with status "failed" and the decode replica computes the prompt itself;
//     malformed streams to the transfer port (garbage, truncated, a huge
//     length, another model's blocks) are refused, counted, and the replica
//     keeps serving; bad flags are refused;
//   - through `pagoda gateway` in front of the pair (when the gateway supports
//     roles): the openai client, streamed and not, gets the colocated answers,
//     and killing the prefill replica mid-run loses no request.
// Usage: node pd_disagg.test.mjs <pagoda binary> <model.gguf>
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Server, freePort, makeRunner, setup, sleep, startGateway } from './harness.mjs';

const { bin, modelPath, OpenAI } = await setup();
const { test, run } = makeRunner();
const work = mkdtempSync(path.join(tmpdir(), 'pagoda-pd-'));
const q8 = path.join(work, 'stories-q8_0.gguf');

const prompts = [
  'Lily and her mom went to the park. They saw a big dog with a red ball. The dog ran to Lily and wanted to play.',
  'Tom had a little boat. He took it to the pond every day and watched it float on the water with his friend.',
  'Once upon a time there was a cat who liked to sleep in the sun all day long, every day, near the old tree.',
];
const kMax = 24;

async function post(base, route, body) {
  const r = await fetch(`${base}${route}`, { method: 'POST', headers: { 'content-type': 'application/json' },
                                             body: JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
}

// What a client sees for one prompt: text, logprobs, cached prompt tokens.
async function complete(base, prompt) {
  const r = await post(base, '/v1/completions', { prompt, max_tokens: kMax, temperature: 0, logprobs: 2 });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return { text: r.body.choices[0].text, lp: JSON.stringify(r.body.choices[0].logprobs),
           cached: r.body.usage.prompt_tokens_details?.cached_tokens ?? 0 };
}

// One labelled series of /metrics (harness's metrics() keeps one per name).
async function series(server, name, label) {
  const text = await (await fetch(`${server.base}/metrics`)).text();
  const m = new RegExp(`^pagoda:${name}\\{[^}]*${label}[^}]*\\} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
}

// The prefill leg as the gateway sends it.
let transferSeq = 0;
async function prefillLeg(prefill, decodeKvAddr, prompt) {
  const r = await post(prefill.base, '/v1/completions', {
    prompt, max_tokens: 1, temperature: 0,
    kv_transfer_params: { do_remote_decode: true, remote_addr: decodeKvAddr, transfer_id: `t${++transferSeq}` } });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.kv_transfer_params;
}

async function references(model, args) {
  const s = await Server.start(bin, model, OpenAI, args);
  try {
    const out = [];
    for (const p of prompts) out.push(await complete(s.base, p));
    return out;
  } finally { assert.equal(await s.stop(), 0); }
}

async function pair(prefillModel, prefillArgs, decodeModel, decodeArgs) {
  const kvPort = await freePort();
  const decode = await Server.start(bin, decodeModel, OpenAI,
                                    ['--role', 'decode', '--kv-transfer-listen', `127.0.0.1:${kvPort}`, ...decodeArgs]);
  const prefill = await Server.start(bin, prefillModel, OpenAI, ['--role', 'prefill', ...prefillArgs]);
  return { decode, prefill, kvAddr: `127.0.0.1:${kvPort}`, kvPort,
           stop: async () => { assert.equal(await prefill.stop(), 0); assert.equal(await decode.stop(), 0); } };
}

// Prefill leg, then the request on the decode replica; asserts it equals `ref`.
async function checkDisaggregated(p, refs, what) {
  for (let i = 0; i < prompts.length; ++i) {
    const t = await prefillLeg(p.prefill, p.kvAddr, prompts[i]);
    assert.equal(t.status, 'ok', `${what}: transfer ${JSON.stringify(t)}`);
    assert.ok(t.blocks >= 1 && t.kept === t.blocks, `${what}: ${JSON.stringify(t)}`);
    const got = await complete(p.decode.base, prompts[i]);
    assert.equal(got.text, refs[i].text, `${what}: prompt ${i} text`);
    assert.equal(got.lp, refs[i].lp, `${what}: prompt ${i} logprobs`);
    assert.equal(got.cached, t.blocks * 16, `${what}: prompt ${i} restored from the transfer`);
  }
}

test('same precision: the pair returns exactly the colocated answers', async () => {
  const refs = await references(modelPath, ['--no-prefix-cache']);
  const p = await pair(modelPath, [], modelPath, []);
  try {
    await checkDisaggregated(p, refs, 'f16');
    const m = await p.decode.metrics();
    assert.equal(m.kv_transfer_received_blocks_total, (await p.prefill.metrics()).kv_transfer_sent_blocks_total);
    assert.ok(m.kv_offload_memory_hits_tokens_total > 0, JSON.stringify(m));
    // A decode replica does not run prefill legs.
    const r = await post(p.decode.base, '/v1/completions', { prompt: prompts[0], max_tokens: 1,
      kv_transfer_params: { do_remote_decode: true, remote_addr: p.kvAddr, transfer_id: 'x1' } });
    assert.equal(r.status, 400);
    assert.equal(r.body.error.param, 'kv_transfer_params');
  } finally { await p.stop(); }
});

test('per-phase precision: Q8_0 prefill feeding Q4_0 decode weights with FP8 KV', async () => {
  // Exact identity needs every kernel to give a token's row the same bits at
  // any token count: the decode replica recomputes the prompt's partial last
  // block (a few tokens) that the colocated one computed inside the whole
  // prompt. Every ISA's kernels are batch-invariant for every type
  // (tests/kernels/matmul_batch_invariance_test.cc), so this runs on the
  // machine's own kernels.
  await perPhasePrecision();
});

async function perPhasePrecision() {
  const q = spawnSync(bin, ['quantize', modelPath, q8, '--type', 'q8_0', '-t', '1'], { encoding: 'utf8' });
  assert.equal(q.status, 0, q.stderr);
  const decodeFlags = ['--decode-weights', 'q4_0', '--kv-cache-dtype', 'fp8_e4m3'];
  const refs = await references(q8, [...decodeFlags, '--no-prefix-cache']);
  // FP8 KV on both sides: the same bytes the colocated replica computes.
  let p = await pair(q8, ['--kv-cache-dtype', 'fp8_e4m3'], q8, decodeFlags);
  try {
    await checkDisaggregated(p, refs, 'q8_0+fp8 -> q4_0+fp8');
    assert.equal((await p.decode.metrics()).kv_transfer_converted_blocks_total, 0);
  } finally { await p.stop(); }
  // f16 KV on the prefill side: converted to FP8 as it arrives.
  p = await pair(q8, ['--kv-cache-dtype', 'f16'], q8, decodeFlags);
  try {
    let same = 0;
    for (let i = 0; i < prompts.length; ++i) {
      const t = await prefillLeg(p.prefill, p.kvAddr, prompts[i]);
      assert.equal(t.status, 'ok', JSON.stringify(t));
      const got = await complete(p.decode.base, prompts[i]);
      assert.equal(got.cached, t.blocks * 16);
      if (got.text === refs[i].text) ++same;
    }
    const m = await p.decode.metrics();
    assert.ok(m.kv_transfer_converted_blocks_total > 0, JSON.stringify(m));
    console.log(`     f16 -> fp8 converted prefill: ${same} of ${prompts.length} greedy answers equal the colocated FP8 ones`);
  } finally { await p.stop(); }
}

test('faults: no listener, a stalled transfer, malformed streams', async () => {
  const refs = await references(modelPath, ['--no-prefix-cache']);
  const p = await pair(modelPath, ['--kv-transfer-timeout', '1'], modelPath, ['--kv-transfer-timeout', '1']);
  const sockets = [];
  const stall = createServer((s) => { sockets.push(s); s.pause(); });  // accepts, never reads, never acks
  try {
    // Nobody listens there.
    const dead = await freePort();
    let t = await prefillLeg(p.prefill, `127.0.0.1:${dead}`, prompts[0]);
    assert.equal(t.status, 'failed', JSON.stringify(t));
    // Accepts and stalls: given up after --kv-transfer-timeout.
    await new Promise(r => stall.listen(0, '127.0.0.1', r));
    const t0 = Date.now();
    t = await prefillLeg(p.prefill, `127.0.0.1:${stall.address().port}`, prompts[1]);
    assert.equal(t.status, 'failed', JSON.stringify(t));
    assert.ok(Date.now() - t0 < 8000, `the stalled transfer took ${Date.now() - t0} ms`);
    // The decode replica computes what it never got: still the colocated answers.
    for (let i = 0; i < 2; ++i) assert.equal((await complete(p.decode.base, prompts[i])).text, refs[i].text);
    // Malformed streams to the transfer port.
    const send = (bytes) => new Promise((resolve) => {
      const c = connect(p.kvPort, '127.0.0.1', () => c.end(bytes));
      let got = Buffer.alloc(0);
      c.on('data', (d) => { got = Buffer.concat([got, d]); });
      c.on('close', () => resolve(got));
      c.on('error', () => resolve(got));
    });
    const head = (id) => { const b = Buffer.alloc(12 + id.length); b.write('PGKVXF1\0', 0, 'latin1');
                           b.writeUInt32LE(id.length, 8); b.write(id, 12); return b; };
    const frame = (kind, n) => { const b = Buffer.alloc(5); b.writeUInt8(kind, 0); b.writeUInt32LE(n, 1); return b; };
    const okBefore = await series(p.decode, 'kv_transfer_received_total', 'outcome="ok"');
    const refusedBefore = await series(p.decode, 'kv_transfer_received_total', 'outcome="refused"');
    const cases = [Buffer.from('garbage, not a KV stream at all'),
                   head('a').subarray(0, 10),                                      // truncated header
                   Buffer.concat([head('b'), frame(1, 0xffffffff)]),               // a 4 GiB record
                   Buffer.concat([head('c'), frame(1, 200), Buffer.alloc(200)]),   // a record that is not one
                   Buffer.concat([head('d'), frame(2, 3)]),                        // end counts blocks never sent
                   Buffer.concat([head('e'), frame(9, 0)])];                       // unknown frame
    for (const c of cases) {
      const ack = await send(c);
      assert.ok(ack.length === 0 || ack.subarray(0, 8).toString('latin1') === 'PGKVAK1\0', `ack ${ack.toString('hex')}`);
      if (ack.length > 8) assert.equal(ack.readUInt8(8), 1, 'refused');
    }
    assert.equal(await series(p.decode, 'kv_transfer_received_total', 'outcome="ok"'), okBefore,
                 'no malformed stream counted as ok');
    assert.equal(await series(p.decode, 'kv_transfer_received_total', 'outcome="refused"'),
                 refusedBefore + cases.length);
    assert.ok((await p.decode.metrics()).kv_transfer_refused_blocks_total >= 1);
    // Still serving, and a real transfer still works.
    t = await prefillLeg(p.prefill, p.kvAddr, prompts[2]);
    assert.equal(t.status, 'ok', JSON.stringify(t));
    assert.equal((await complete(p.decode.base, prompts[2])).text, refs[2].text);
  } finally {
    for (const s of sockets) s.destroy();
    stall.close();
    await p.stop();
  }
});

test('through pagoda gateway: the openai client gets the colocated answers; a dead prefill replica loses nothing', async () => {
  const refs = await references(modelPath, ['--no-prefix-cache']);
  const p = await pair(modelPath, [], modelPath, []);
  const cfg = path.join(work, 'gateway.toml');
  writeFileSync(cfg,
    `[gateway]\nhealth_interval_ms = 200\nhealth_timeout_ms = 500\nfirst_byte_timeout_ms = 30000\n\n` +
    `[[models]]\nname = "stories"\npolicy = "least_loaded"\nserved_model_name = "stories260K"\n` +
    `tokenizer_gguf = "${modelPath}"\npd_threshold_tokens = 8\npd_prefill_timeout_ms = 5000\n` +
    `[[models.deployments]]\nversion = "v1"\n` +
    `[[models.deployments.replicas]]\nurl = "${p.prefill.base}"\nname = "prefill"\nrole = "prefill"\n` +
    `[[models.deployments.replicas]]\nurl = "${p.decode.base}"\nname = "decode"\nrole = "decode"\n` +
    `kv_transfer = "${p.kvAddr}"\n`);
  const gw = await startGateway(bin, cfg);
  try {
    const client = new OpenAI({ baseURL: `${gw.base}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
    for (let i = 0; i < prompts.length; ++i) {
      const raw = await client.completions.create(
        { model: 'stories', prompt: prompts[i], max_tokens: kMax, temperature: 0, logprobs: 2 }).withResponse();
      assert.equal(raw.response.headers.get('x-pagoda-prefill-replica'), 'prefill');
      assert.equal(raw.response.headers.get('x-pagoda-replica'), 'decode');
      assert.equal(raw.data.choices[0].text, refs[i].text, `gateway prompt ${i}`);
      assert.equal(JSON.stringify(raw.data.choices[0].logprobs), refs[i].lp, `gateway prompt ${i} logprobs`);
      assert.ok(raw.data.usage.prompt_tokens_details.cached_tokens >= 16, 'restored from the transfer');
      // Streamed: the same text, chunk by chunk.
      const stream = await client.completions.create(
        { model: 'stories', prompt: prompts[i], max_tokens: kMax, temperature: 0, stream: true });
      let text = '';
      for await (const c of stream) text += c.choices[0]?.text ?? '';
      assert.equal(text, refs[i].text, `gateway streamed prompt ${i}`);
    }
    assert.ok((await p.decode.metrics()).kv_transfer_received_blocks_total > 0);
    // The prefill replica dies: requests still get the colocated answers (the decode replica prefills).
    p.prefill.proc.kill('SIGKILL');
    await sleep(300);
    const got = await Promise.all(prompts.map(pr => client.completions.create(
      { model: 'stories', prompt: pr, max_tokens: kMax, temperature: 0 })));
    got.forEach((r, i) => assert.equal(r.choices[0].text, refs[i].text, `after the prefill replica died: ${i}`));
  } finally {
    await gw.stop();
    await p.decode.stop();
    await p.prefill.stop();
  }
});

test('bad flags are refused', async () => {
  const cases = [[['--role', 'decode'], /kv-transfer-listen/],
                 [['--role', 'prefill', '--kv-transfer-listen', '127.0.0.1:1'], /prefill/],
                 [['--role', 'sideways'], /role/],
                 [['--kv-transfer-listen', 'nocolon'], /host:port/],
                 [['--role', 'prefill', '--no-prefix-cache'], /prefix/]];
  for (const [args, re] of cases) {
    const r = spawnSync(bin, ['serve', '-m', modelPath, '--port', '0', ...args], { encoding: 'utf8', timeout: 20000 });
    assert.notEqual(r.status, 0, `${args.join(' ')} was accepted`);
    assert.match(r.stderr, re, `${args.join(' ')}: ${r.stderr}`);
  }
});

run({ after: () => rmSync(work, { recursive: true, force: true }) });
