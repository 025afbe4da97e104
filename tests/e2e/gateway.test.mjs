// pagoda gateway in front of two real `pagoda serve` replicas, driven by the
// official openai client: chat + completions, streaming chunk by chunk,
// /v1/models, 404 for an unknown model, SIGHUP reload (a bad config is
// refused and the old one keeps serving), kill -9 of a replica (requests keep
// succeeding; a stream on the killed replica ends with an error event, no
// hang), the admin API's 401 without the key, and the web console with its
// per-replica figures (GET /, /console/api/stats).
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setup, Server, sleep, makeRunner, assertErrorShape, startGateway as startGatewayProcess } from './harness.mjs';

const { bin, modelPath, OpenAI } = await setup();
const { test, run } = makeRunner();
const dir = mkdtempSync(join(tmpdir(), 'pagoda-gw-'));
const configPath = join(dir, 'gateway.toml');
const ADMIN = 'e2e-admin-key';
let replicas = [];
let gw, gwBase, client;

function config(urls) {
  let s = `[gateway]\nadmin_key_env = "PAGODA_GW_ADMIN"\nallow_insecure_keys = true\nhealth_interval_ms = 200\nhealth_timeout_ms = 500\n` +
          `eject_after_failures = 1\nfirst_byte_timeout_ms = 30000\n\n` +
          `[[models]]\nname = "stories"\npolicy = "round_robin"\nserved_model_name = "stories260K"\n` +
          `[[models.deployments]]\nversion = "v1"\n`;
  urls.forEach((u, i) => { s += `[[models.deployments.replicas]]\nurl = "${u}"\nname = "r${i}"\n`; });
  s += `\n[[aliases]]\nname = "chat"\nmodel = "stories@v1"\nself_hosted_only = true\n`;
  return s;
}

async function startGateway() {
  gw = await startGatewayProcess(bin, configPath, { ...process.env, PAGODA_GW_ADMIN: ADMIN });
  gwBase = gw.base;
  client = new OpenAI({ baseURL: `${gwBase}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
}

const messages = [{ role: 'user', content: 'Once upon a time' }];

test('chat and completions through the gateway name the deployment', async () => {
  const { data, response } = await client.chat.completions.create({ model: 'stories', messages, max_tokens: 8 })
    .withResponse();
  assert.equal(data.object, 'chat.completion');
  assert.ok(data.choices[0].message.content.length > 0);
  assert.equal(response.headers.get('x-pagoda-deployment'), 'stories@v1');
  assert.match(response.headers.get('x-pagoda-replica'), /^r[01]$/);
  const c = await client.completions.create({ model: 'stories@v1', prompt: 'Once', max_tokens: 8 });
  assert.equal(c.object, 'text_completion');
  const viaAlias = await client.chat.completions.create({ model: 'chat', messages, max_tokens: 4 });
  assert.equal(viaAlias.object, 'chat.completion');
});

test('streaming arrives chunk by chunk', async () => {
  const stream = await client.chat.completions.create({ model: 'stories', messages, max_tokens: 24, stream: true });
  let chunks = 0, text = '';
  for await (const ch of stream) {
    ++chunks;
    text += ch.choices[0]?.delta?.content ?? '';
  }
  assert.ok(chunks >= 5, `only ${chunks} chunks`);
  assert.ok(text.length > 0);
});

test('/v1/models lists models, pinned versions and aliases', async () => {
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  assert.deepEqual(ids, ['stories', 'stories@v1', 'chat']);
});

test('unknown model is a 404 error object', async () => {
  const r = await fetch(`${gwBase}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'nope', messages }),
  });
  assert.equal(r.status, 404);
  assertErrorShape(assert, await r.json(), 'unknown model');
});

test('admin API needs the key', async () => {
  assert.equal((await fetch(`${gwBase}/admin/replicas`)).status, 401);
  assert.equal((await fetch(`${gwBase}/admin/replicas`, { headers: { authorization: 'Bearer wrong' } })).status, 401);
  const ok = await fetch(`${gwBase}/admin/replicas`, { headers: { authorization: `Bearer ${ADMIN}` } });
  assert.equal(ok.status, 200);
  assert.equal((await ok.json()).replicas.length, 2);
});

test('the web console and its per-replica figures are served by the gateway', async () => {
  const page = await fetch(`${gwBase}/`);
  assert.equal(page.status, 200);
  assert.match(page.headers.get('content-type'), /^text\/html/);
  assert.match(page.headers.get('content-security-policy'), /default-src 'self'/);
  const r = await fetch(`${gwBase}/console/api/stats`);
  assert.equal(r.status, 200);
  const stats = await r.json();
  assert.equal(stats.kind, 'gateway');
  assert.deepEqual(stats.replicas.map(x => x.id).sort(), ['r0', 'r1']);
  let routed = 0;
  for (const x of stats.replicas) {
    assert.equal(x.url, undefined, 'no replica address');
    assert.equal(x.circuit, 'closed');
    assert.equal(typeof x.engine?.kv_capacity_tokens, 'number', JSON.stringify(x));
    assert.ok(x.engine.ttft_seconds.bounds.length > 0);
    routed += x.requests['2xx'] ?? 0;
  }
  assert.ok(routed >= 4, `requests routed so far: ${routed}`);
  assert.ok(Array.isArray(stats.rollouts));
});

test('SIGHUP with a bad config is refused and the old config keeps serving', async () => {
  writeFileSync(configPath, config(replicas.map(r => r.base)) + '\n[[aliases]]\nname = "broken"\nmodel = "missing"\n');
  gw.kill('SIGHUP');
  for (let i = 0; i < 50 && !/reload refused/.test(gw.stderr); ++i) await sleep(100);
  assert.match(gw.stderr, /reload refused.*gateway\.toml:\d+: alias 'broken' names unknown model 'missing'/);
  const r = await client.chat.completions.create({ model: 'stories', messages, max_tokens: 4 });
  assert.equal(r.object, 'chat.completion');
  const routing = await (await fetch(`${gwBase}/admin/routing`, { headers: { authorization: `Bearer ${ADMIN}` } })).json();
  assert.equal(routing.last_reload.ok, false);
  writeFileSync(configPath, config(replicas.map(r => r.base)));
  gw.kill('SIGHUP');
  for (let i = 0; i < 50 && !/config reloaded/.test(gw.stderr); ++i) await sleep(100);
  assert.match(gw.stderr, /config reloaded/);
});

test('kill -9 of a replica: running stream ends with an error event, later requests succeed', async () => {
  // A long stream; find which replica took it, kill that one mid-stream.
  const { data: stream, response } = await client.chat.completions
    .create({ model: 'stories', messages, max_tokens: 400, stream: true }).withResponse();
  const victim = replicas[Number(response.headers.get('x-pagoda-replica').slice(1))];
  let chunks = 0, error = null;
  const t0 = Date.now();
  try {
    for await (const ch of stream) {
      if (++chunks === 2) victim.proc.kill('SIGKILL');
      void ch;
    }
  } catch (e) { error = e; }
  assert.ok(Date.now() - t0 < 20000, 'the stream hung');
  assert.ok(error, 'the stream ended without an error event');
  assert.match(String(error.message ?? error), /upstream|failed/i);
  // No request fails from here on: failures before the first byte are retried.
  for (let i = 0; i < 8; ++i) {
    const r = await client.chat.completions.create({ model: 'stories', messages, max_tokens: 4 });
    assert.equal(r.object, 'chat.completion');
  }
  const reps = await (await fetch(`${gwBase}/admin/replicas`, { headers: { authorization: `Bearer ${ADMIN}` } })).json();
  for (const r of reps.replicas) assert.equal(r.active_requests, 0, `${r.id} still counts load`);
});

await run({
  before: async () => {
    replicas = await Promise.all([0, 1].map(() => Server.start(bin, modelPath, OpenAI)));
    writeFileSync(configPath, config(replicas.map(r => r.base)));
    await startGateway();
  },
  after: async () => {
    await gw?.stop();
    for (const r of replicas) if (!r.exited) await r.stop();
  },
});
