// Cache-aware routing end to end: 4 real `pagoda serve` replicas publishing
// KV events (--kv-events + --kv-events-replay) behind `pagoda gateway`
// (policy cache_aware, tokenizer_gguf = the served model's own GGUF), driven
// with the official openai client and fetch.
//
//  - Multi-turn sessions stay on the replica that holds their prefix: later
//    turns report high usage.prompt_tokens_details.cached_tokens, and the
//    same sessions (with their own, distinct prefixes) through a round_robin
//    gateway over the same replicas get clearly fewer.
//  - Prediction equals the engine: for every request through the
//    cache_aware gateway, sent once the index has settled (below), the
//    x-pagoda-predicted-cached-tokens header equals the engine's
//    usage.prompt_tokens_details.cached_tokens exactly.
//  - Saturation spreads: many concurrent long requests on one prefix reach
//    more than one replica.
//  - A gateway restarted mid-run rebuilds its index from the replicas'
//    replay sockets and sends a session's next turn to its replica again.
//  - kill -9 of a replica under load: requests that had not started
//    streaming are retried and succeed; streams on it end with an error
//    event, not a hang.
//  - After a bounded soak with abandoned streams, the admin API counts no
//    load on any replica.
//
// "Settled": the replicas are idle between these requests, so their event
// streams stop; the index has settled when every replica's
// pagoda_gateway_kv_event_last_seq (the last batch applied) has stayed the
// same over 3 polls 60 ms apart. The engine queues a step's events before
// that step's tokens are written, and the publisher sends within ~2 ms.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setup, Server, freePort, sleep, makeRunner, pool } from './harness.mjs';

const { bin, modelPath, OpenAI } = await setup();
const { test, run } = makeRunner();
const dir = mkdtempSync(join(tmpdir(), 'pagoda-gwc-'));
const ADMIN = 'e2e-cluster-admin';
const N_REPLICAS = 4;
let replicas = [];  // { server, pub, replay, name }
const gateways = {};  // policy -> { proc, base, client, stderr }

function config(policy) {
  let s = `[gateway]\nadmin_key_env = "PAGODA_GWC_ADMIN"\nallow_insecure_keys = true\nhealth_interval_ms = 200\nhealth_timeout_ms = 500\n` +
          `eject_after_failures = 1\nfirst_byte_timeout_ms = 30000\n\n` +
          `[[models]]\nname = "stories"\npolicy = "${policy}"\nserved_model_name = "stories260K"\n` +
          `tokenizer_gguf = "${modelPath}"\nblock_size = 16\n[[models.deployments]]\nversion = "v1"\n`;
  for (const r of replicas) {
    // One zone per replica: a request with x-pagoda-zone: z-<name> goes to
    // that replica while it is eligible (the kill test aims with it); others
    // carry no zone and see every replica as local.
    s += `[[models.deployments.replicas]]\nname = "${r.name}"\nurl = "${r.server.base}"\nzone = "z-${r.name}"\n` +
         `kv_events = "${r.pub}"\nkv_events_replay = "${r.replay}"\n`;
  }
  return s;
}

async function startGateway(policy) {
  const path = join(dir, `${policy}.toml`);
  writeFileSync(path, config(policy));
  const port = await freePort();
  const g = { base: `http://127.0.0.1:${port}`, stderr: '', exited: false };
  g.proc = spawn(bin, ['gateway', '--config', path, '--listen', `127.0.0.1:${port}`],
                 { stdio: ['ignore', 'inherit', 'pipe'], env: { ...process.env, PAGODA_GWC_ADMIN: ADMIN } });
  g.proc.stderr.on('data', (d) => { g.stderr += d; process.stderr.write(d); });
  g.proc.on('exit', () => { g.exited = true; });
  for (let i = 0; i < 100; ++i) {
    if (g.exited) throw new Error(`gateway exited early: ${g.stderr}`);
    try { if ((await fetch(`${g.base}/health`)).status === 200) break; } catch {}
    await sleep(100);
  }
  g.client = new OpenAI({ baseURL: `${g.base}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
  gateways[policy] = g;
  return g;
}

async function stopGateway(g, signal = 'SIGTERM') {
  if (g.exited) return;
  g.proc.kill(signal);
  await new Promise(r => { if (g.exited) r(); else g.proc.on('exit', r); setTimeout(r, 5000); });
}

// metric name -> { replica label -> value } for the gateway's per-replica series.
async function gatewayMetrics(g) {
  const text = await (await fetch(`${g.base}/metrics`)).text();
  const out = {};
  for (const line of text.split('\n')) {
    const m = /^(pagoda_gateway_\w+)\{replica="([^"]*)"[^}]*\} (\S+)$/.exec(line);
    if (m) (out[m[1]] ??= {})[m[2]] = Number(m[3]);
  }
  return out;
}

async function waitSettled(g, timeoutMs = 10000) {
  const t0 = Date.now();
  let last = null, same = 0;
  while (Date.now() - t0 < timeoutMs) {
    const seqs = JSON.stringify((await gatewayMetrics(g)).pagoda_gateway_kv_event_last_seq ?? {});
    same = seqs === last ? same + 1 : 0;
    last = seqs;
    if (same >= 2) return;
    await sleep(60);
  }
  throw new Error('the KV index did not settle');
}

async function adminReplicas(g) {
  const r = await fetch(`${g.base}/admin/replicas`, { headers: { authorization: `Bearer ${ADMIN}` } });
  assert.equal(r.status, 200);
  return (await r.json()).replicas;
}

// A session: a long system prompt of its own that differs from the first
// characters on (so sessions share no block), then growing turns.
const WORDS = ['Amber', 'Basil', 'Cedar', 'Dune', 'Ember', 'Flint', 'Grove', 'Heath', 'Iris', 'Juniper', 'Kelp', 'Lark'];
let sessionCount = 0;
function makeSession(tag) {
  const word = WORDS[sessionCount++ % WORDS.length];
  const system = `${word} ${tag}. ` + `The little ${word} fox went to the river to drink and saw a fish. `.repeat(6);
  return { tag, messages: [{ role: 'system', content: system }], replica: null, turns: [] };
}

// One turn: a user message, a short greedy answer appended to the history.
async function turn(g, s, n) {
  s.messages.push({ role: 'user', content: `Tell me part ${n} of the story about the ${s.tag} fox.` });
  const { data, response } = await g.client.chat.completions
    .create({ model: 'stories', messages: s.messages, max_tokens: 8, temperature: 0 }).withResponse();
  s.messages.push({ role: 'assistant', content: data.choices[0].message.content });
  const t = {
    replica: response.headers.get('x-pagoda-replica'),
    predicted: Number(response.headers.get('x-pagoda-predicted-cached-tokens')),
    cached: data.usage.prompt_tokens_details?.cached_tokens ?? 0,
    prompt: data.usage.prompt_tokens,
  };
  s.turns.push(t);
  return t;
}

const TURNS = 4;
// 5 sessions over 4 replicas, one request at a time after the first turn:
// round robin moves each session on by one replica per turn, the scattering
// that a real mix of interleaved sessions causes.
const SESSIONS = 5;
let caSessions = [];

test('multi-turn sessions stay on the replica holding their prefix; prediction equals the engine', async () => {
  const g = gateways.cache_aware;
  caSessions = Array.from({ length: SESSIONS }, (_, i) => makeSession(`ca${i}`));
  // The sessions arrive together: their first turns run at once, and the
  // load they put on a replica spreads them (their chat template's first
  // block is all they share). Which replica holds that shared block is in
  // flux while they run, so the exact check starts at turn 2.
  for (const t of await Promise.all(caSessions.map(s => turn(g, s, 1)))) assert.ok(t.predicted <= t.cached + 16);
  for (const s of caSessions) s.replica = s.turns[0].replica;
  for (let n = 2; n <= TURNS; ++n) {
    for (const s of caSessions) {
      await waitSettled(g);
      const t = await turn(g, s, n);
      assert.equal(t.predicted, t.cached,
                   `${s.tag} turn ${n}: predicted ${t.predicted} cached tokens, the engine reported ${t.cached}`);
      assert.equal(t.replica, s.replica, `${s.tag} turn ${n} left its replica`);
      // Everything up to the previous turn's prompt is cached (whole blocks).
      const prev = s.turns[n - 2].prompt;
      assert.ok(t.cached >= Math.floor((prev - 1) / 16) * 16, `${s.tag} turn ${n}: cached ${t.cached} of ${t.prompt}`);
    }
  }
  const placed = new Set(caSessions.map(s => s.replica));
  assert.ok(placed.size >= 2, `every session on ${[...placed]}`);
});

test('the same sessions through round_robin get clearly fewer cached tokens', async () => {
  const rr = await startGateway('round_robin');
  const rrSessions = Array.from({ length: SESSIONS }, (_, i) => makeSession(`rr${i}`));
  await Promise.all(rrSessions.map(s => turn(rr, s, 1)));
  for (let n = 2; n <= TURNS; ++n) for (const s of rrSessions) await turn(rr, s, n);
  await stopGateway(rr);
  const later = (ss) => ss.flatMap(s => s.turns.slice(1));
  const sum = (ts, k) => ts.reduce((a, t) => a + t[k], 0);
  const ca = sum(later(caSessions), 'cached'), rrCached = sum(later(rrSessions), 'cached');
  const caRate = ca / sum(later(caSessions), 'prompt');
  console.log(`cached tokens on turns 2..${TURNS}: cache_aware ${ca} (${(100 * caRate).toFixed(0)}% of prompt), ` +
              `round_robin ${rrCached}`);
  assert.ok(caRate > 0.6, `cache_aware hit rate ${caRate}`);
  assert.ok(ca >= 2 * rrCached, `cache_aware ${ca} vs round_robin ${rrCached}`);
});

test('a saturated replica sheds a hot prefix to the others', async () => {
  const g = gateways.cache_aware;
  const hot = makeSession('hot');
  hot.messages.push({ role: 'user', content: 'Tell me a long story.' });
  const warm = await g.client.chat.completions.create({ model: 'stories', messages: hot.messages, max_tokens: 4 })
    .withResponse();
  const holder = warm.response.headers.get('x-pagoda-replica');
  await waitSettled(g);
  const served = await Promise.all(Array.from({ length: 16 }, async () => {
    const { data, response } = await g.client.chat.completions
      .create({ model: 'stories', messages: hot.messages, max_tokens: 48, ignore_eos: true }).withResponse();
    assert.equal(data.object, 'chat.completion');
    return response.headers.get('x-pagoda-replica');
  }));
  const counts = {};
  for (const r of served) counts[r] = (counts[r] ?? 0) + 1;
  console.log(`hot prefix on ${holder}; 16 concurrent requests went to ${JSON.stringify(counts)}`);
  assert.ok(Object.keys(counts).length >= 2, `all on one replica: ${JSON.stringify(counts)}`);
  assert.ok((counts[holder] ?? 0) >= 1, 'the holder took none of its own prefix');
});

test('a restarted gateway rebuilds its index from replay and routes to the cached replica', async () => {
  await stopGateway(gateways.cache_aware, 'SIGKILL');
  const g = await startGateway('cache_aware');
  // Every replica's events arrive again (replay), then the view settles.
  for (let i = 0; i < 100; ++i) {
    const m = await gatewayMetrics(g);
    const seqs = m.pagoda_gateway_kv_event_last_seq ?? {};
    if (replicas.every(r => (seqs[r.name] ?? -1) >= 0)) break;
    await sleep(100);
  }
  await waitSettled(g);
  const m = await gatewayMetrics(g);
  for (const r of replicas) assert.ok(m.pagoda_gateway_kv_index_blocks[r.name] > 0, `${r.name}: empty index`);
  for (const s of caSessions.slice(0, 3)) {
    await waitSettled(g);
    const t = await turn(g, s, TURNS + 1);
    assert.equal(t.replica, s.replica, `${s.tag} moved after the restart`);
    assert.equal(t.predicted, t.cached, `${s.tag}: predicted ${t.predicted}, engine ${t.cached}`);
    assert.ok(t.cached >= t.prompt / 2, `${s.tag}: cached ${t.cached} of ${t.prompt}`);
  }
});

test('kill -9 under load: unstarted requests are retried, running streams end with an error', async () => {
  const g = gateways.cache_aware;
  const victimSession = caSessions[0];
  const victim = replicas.find(r => r.name === victimSession.replica);
  const before = (await (await fetch(`${g.base}/metrics`)).text()).match(/pagoda_gateway_retries_total\{[^}]*\} (\d+)/);
  // Streams that start on the victim (aimed at its zone), then requests
  // aimed there too that have sent nothing yet when it dies.
  const aim = { headers: { 'x-pagoda-zone': `z-${victim.name}` } };
  const msgs = [{ role: 'user', content: 'Once upon a time, in a quiet town,' }];
  const streams = await Promise.all(Array.from({ length: 3 }, async () => {
    const { data, response } = await g.client.chat.completions
      .create({ model: 'stories', messages: msgs, max_tokens: 300, ignore_eos: true, stream: true }, aim).withResponse();
    const it = data[Symbol.asyncIterator]();
    await it.next();
    return { it, replica: response.headers.get('x-pagoda-replica') };
  }));
  assert.ok(streams.every(s => s.replica === victim.name), `streams on ${streams.map(s => s.replica)}`);
  const pending = Array.from({ length: 6 }, () => g.client.chat.completions
    .create({ model: 'stories', messages: msgs, max_tokens: 200, ignore_eos: true }, aim)
    .then(d => ({ ok: true, d }), e => ({ ok: false, e })));
  await sleep(30);
  victim.server.proc.kill('SIGKILL');
  const t0 = Date.now();
  const drained = await Promise.all(streams.map(async (s) => {
    try {
      for (let r = await s.it.next(); !r.done; r = await s.it.next()) {}
      return { replica: s.replica, error: null };
    } catch (e) { return { replica: s.replica, error: e }; }
  }));
  assert.ok(Date.now() - t0 < 20000, 'a stream hung');
  for (const d of drained) assert.match(String(d.error?.message ?? d.error), /upstream|failed/i);
  for (const r of await Promise.all(pending)) {
    assert.ok(r.ok, `a request that had not started failed: ${r.e}`);
    assert.equal(r.d.object, 'chat.completion');
  }
  const after = (await (await fetch(`${g.base}/metrics`)).text()).match(/pagoda_gateway_retries_total\{[^}]*\} (\d+)/);
  console.log(`retries before ${before?.[1] ?? 0}, after ${after?.[1] ?? 0}`);
  assert.ok(Number(after?.[1] ?? 0) > Number(before?.[1] ?? 0), 'no request was retried off the killed replica');
  // The session's next turn still succeeds (elsewhere).
  const t = await turn(g, victimSession, TURNS + 2);
  assert.notEqual(t.replica, victim.name);
});

test('a soak with abandoned streams leaves no load counted', async () => {
  const g = gateways.cache_aware;
  const t0 = Date.now();
  let abandoned = 0, completed = 0;
  const worker = async (w) => {
    for (let i = 0; Date.now() - t0 < 6000; ++i) {
      const s = caSessions[(w + i) % caSessions.length];
      const ac = new AbortController();
      try {
        const stream = await g.client.chat.completions.create(
          { model: 'stories', messages: [...s.messages, { role: 'user', content: `Soak ${w}.${i}` }],
            max_tokens: 64, ignore_eos: true, stream: true }, { signal: ac.signal });
        let chunks = 0;
        for await (const ch of stream) {
          void ch;
          if (i % 2 === 0 && ++chunks === 1 + (i % 3)) { ac.abort(); ++abandoned; break; }
        }
        if (i % 2 !== 0) ++completed;
      } catch (e) {
        if (!ac.signal.aborted) throw e;
        ++abandoned;
      }
    }
  };
  await pool(Array.from({ length: 6 }, (_, w) => () => worker(w)), 6);
  console.log(`soak: ${abandoned} abandoned, ${completed} completed streams`);
  assert.ok(abandoned >= 6 && completed >= 6);
  let reps;
  for (let i = 0; i < 100; ++i) {
    reps = await adminReplicas(g);
    if (reps.every(r => r.active_requests === 0 && r.active_blocks === 0)) break;
    await sleep(100);
  }
  for (const r of reps) {
    assert.equal(r.active_requests, 0, `${r.id} still counts ${r.active_requests} requests`);
    assert.equal(r.active_blocks, 0, `${r.id} still counts ${r.active_blocks} blocks`);
  }
});

await run({
  before: async () => {
    // Ephemeral ports bound by the replicas themselves (no race with other
    // free-port picks); each prints what it bound.
    replicas = await Promise.all(Array.from({ length: N_REPLICAS }, async (_, i) => {
      const server = await Server.start(bin, modelPath, OpenAI,
                                        ['--kv-events', 'tcp://127.0.0.1:*', '--kv-events-replay', 'tcp://127.0.0.1:*']);
      const m = /KV events on (tcp:\/\/[\d.]+:\d+), replay on (tcp:\/\/[\d.]+:\d+)/.exec(server.stderr);
      assert.ok(m, `no KV event endpoints in: ${server.stderr}`);
      return { server, pub: m[1], replay: m[2], name: `r${i}` };
    }));
    await startGateway('cache_aware');
  },
  after: async () => {
    for (const g of Object.values(gateways)) await stopGateway(g);
    for (const r of replicas) await r.server.stop();
  },
});
