// Rollouts through `pagoda gateway` in front of four real `pagoda serve`
// replicas (stories v1: 2, v2: 2; v3: two ports where nothing listens), under
// constant traffic from concurrent openai-client users (streaming and not,
// unpinned and pinned to stories@v1). Driven by the CLI
// (`pagoda gateway rollout start|status|abort`):
//   - a red-black rollout v1 -> v2 completes with zero failed requests, and
//     unpinned requests are then served by v2 (x-pagoda-deployment);
//   - a rollout to v3, whose replicas fail health, rolls back by itself with
//     zero failed requests and no request ever reaching v3;
//   - requests pinned to stories@v1 reach only v1 throughout;
//   - abort during a rollout puts 100% back on the old version.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setup, Server, freePort, sleep, makeRunner, startGateway as startGatewayProcess } from './harness.mjs';

const { bin, modelPath, OpenAI } = await setup();
const { test, run } = makeRunner();
const dir = mkdtempSync(join(tmpdir(), 'pagoda-rollout-'));
const configPath = join(dir, 'gateway.toml');
const ADMIN = 'e2e-rollout-admin';
const adminEnv = { ...process.env, PAGODA_GW_ADMIN: ADMIN };
let replicas = [];
let gw, gwBase, client;

function config(v1, v2, v3) {
  let s = `[gateway]\nadmin_key_env = "PAGODA_GW_ADMIN"\nallow_insecure_keys = true\nhealth_interval_ms = 250\nhealth_timeout_ms = 500\n` +
          `first_byte_timeout_ms = 30000\n\n` +
          `[[models]]\nname = "stories"\npolicy = "round_robin"\nserved_model_name = "stories260K"\n` +
          `current_version = "v1"\n`;
  for (const [version, urls] of [['v1', v1], ['v2', v2], ['v3', v3]]) {
    s += `[[models.deployments]]\nversion = "${version}"\n`;
    urls.forEach((u, i) => { s += `[[models.deployments.replicas]]\nurl = "${u}"\nname = "${version}-r${i}"\n`; });
  }
  return s;
}

async function startGateway() {
  gw = await startGatewayProcess(bin, configPath, adminEnv);
  gwBase = gw.base;
  client = new OpenAI({ baseURL: `${gwBase}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
}

// `pagoda gateway rollout ...`: { code, out (parsed JSON when it is), err }.
function cli(...args) {
  return new Promise((resolve, reject) => {
    const p = spawn(bin, ['gateway', 'rollout', ...args, '--admin', gwBase, '--admin-key-env', 'PAGODA_GW_ADMIN'],
                    { stdio: ['ignore', 'pipe', 'pipe'], env: adminEnv });
    let out = '', err = '';
    p.stdout.on('data', d => { out += d; });
    p.stderr.on('data', d => { err += d; });
    p.on('error', reject);
    p.on('close', (code) => {
      let json;
      try { json = JSON.parse(out); } catch {}
      resolve({ code, out: json ?? out, err });
    });
  });
}

const admin = async (path) =>
  (await fetch(`${gwBase}${path}`, { headers: { authorization: `Bearer ${ADMIN}` } })).json();

const messages = [{ role: 'user', content: 'Once upon a time' }];

// One request; the deployment that served it. Throws on any failure.
async function one(model, stream) {
  if (!stream) {
    const { data, response } = await client.chat.completions
      .create({ model, messages, max_tokens: 6 }).withResponse();
    assert.equal(typeof data.choices[0].message.content, 'string');
    return response.headers.get('x-pagoda-deployment');
  }
  const { data, response } = await client.chat.completions
    .create({ model, messages, max_tokens: 6, stream: true }).withResponse();
  let chunks = 0;
  for await (const ch of data) { void ch; ++chunks; }
  assert.ok(chunks > 0, 'empty stream');
  return response.headers.get('x-pagoda-deployment');
}

// Constant traffic: `n` users in a loop each, alternating streaming and not.
class Traffic {
  constructor(n, model) { this.n = n; this.model = model; this.served = []; this.failures = []; }
  start() {
    this.running = true;
    this.workers = Array.from({ length: this.n }, (_, i) => (async () => {
      for (let k = i; this.running; ++k) {
        try { this.served.push(await one(this.model, k % 2 === 1)); }
        catch (e) { this.failures.push(String(e?.message ?? e)); }
      }
    })());
  }
  async stop() { this.running = false; await Promise.all(this.workers); }
  // What was recorded since the last take().
  take() {
    const r = { served: this.served, failures: this.failures };
    this.served = [];
    this.failures = [];
    return r;
  }
}
const count = (list, v) => list.filter(x => x === v).length;
let unpinned, pinned;

test('red-black rollout v1 -> v2 under load: zero failed requests, then unpinned traffic is on v2', async () => {
  unpinned.take(); pinned.take();
  await sleep(500);
  const r = await cli('start', '--model', 'stories', '--version', 'v2', '--steps', '10,50,100',
                      '--step-interval-ms', '1500', '--wait', '--wait-timeout-s', '60');
  assert.equal(r.code, 0, r.err);
  assert.equal(r.out.state, 'succeeded');
  assert.equal(r.out.current_version, 'v2');
  assert.match(r.err, /step 1\/3 \(10%\)/);  // --wait followed the steps
  assert.match(r.err, /step 2\/3 \(50%\)/);
  await sleep(500);
  const u = unpinned.take(), p = pinned.take();
  assert.deepEqual(u.failures, [], 'failed unpinned requests');
  assert.deepEqual(p.failures, [], 'failed pinned requests');
  assert.ok(count(u.served, 'stories@v1') > 0 && count(u.served, 'stories@v2') > 0, `${u.served.length} served`);
  assert.equal(count(u.served, 'stories@v1') + count(u.served, 'stories@v2'), u.served.length);
  assert.ok(p.served.length > 0);
  assert.equal(count(p.served, 'stories@v1'), p.served.length, 'a pinned request left v1');
  // From now on every unpinned request lands on v2.
  await sleep(1000);
  const after = unpinned.take();
  assert.ok(after.served.length > 0);
  assert.equal(count(after.served, 'stories@v2'), after.served.length, JSON.stringify(after.served));
  const routing = await admin('/admin/routing');
  assert.equal(routing.models[0].current_version, 'v2');
});

test('rollout to v3 whose replicas fail health rolls back by itself, zero failed requests', async () => {
  unpinned.take(); pinned.take();
  const r = await cli('start', '--model', 'stories', '--version', 'v3', '--steps', '50,100',
                      '--step-interval-ms', '1000', '--wait', '--wait-timeout-s', '30');
  assert.equal(r.code, 3, `expected exit 3 (rolled back): ${r.err}`);
  assert.equal(r.out.state, 'rolled_back');
  assert.match(r.out.reason, /health/);
  assert.equal(r.out.current_version, 'v2');
  const st = await cli('status', '--model', 'stories');
  assert.equal(st.code, 0, st.err);
  assert.equal(st.out.state, 'rolled_back');
  await sleep(300);
  const u = unpinned.take(), p = pinned.take();
  assert.deepEqual(u.failures, []);
  assert.deepEqual(p.failures, []);
  assert.ok(u.served.length > 0);
  assert.equal(count(u.served, 'stories@v2'), u.served.length, 'unpinned left v2');
  assert.equal(count(p.served, 'stories@v1'), p.served.length, 'a pinned request left v1');
  const metrics = await (await fetch(`${gwBase}/metrics`)).text();
  assert.match(metrics, /pagoda_gateway_rollbacks_total\{model="stories"\} 1/);
  assert.match(metrics, /pagoda_gateway_rollout_state\{model="stories"\} 4/);
});

test('abort during a rollout restores 100% old', async () => {
  unpinned.take(); pinned.take();
  // Back towards v1 (now the old version), slowly enough to abort mid-step.
  const r = await cli('start', '--model', 'stories', '--version', 'v1', '--steps', '50,100',
                      '--step-interval-ms', '60000');
  assert.equal(r.code, 0, r.err);
  assert.equal(r.out.state, 'checking_health');
  let st;
  for (let i = 0; i < 100; ++i) {
    st = await cli('status', '--model', 'stories');
    if (st.out.step === 1) break;
    await sleep(100);
  }
  assert.equal(st.out.state, 'progressing');
  assert.deepEqual(st.out.weights, { v1: 50, v2: 50, v3: 0 });
  await sleep(1500);  // both versions serve meanwhile
  const during = unpinned.take();
  assert.ok(count(during.served, 'stories@v1') > 0, JSON.stringify(during.served));
  const ab = await cli('abort', '--model', 'stories');
  assert.equal(ab.code, 0, ab.err);
  assert.equal(ab.out.state, 'aborted');
  const again = await cli('abort', '--model', 'stories');
  assert.equal(again.code, 1);
  assert.match(again.err, /HTTP 409/);
  const routing = await admin('/admin/routing');
  assert.equal(routing.models[0].current_version, 'v2');
  for (const d of routing.models[0].deployments) assert.equal(d.traffic_weight, 0, d.version);
  await sleep(200);  // requests routed before the abort finish
  unpinned.take();
  await sleep(1000);
  const after = unpinned.take(), p = pinned.take();
  assert.ok(after.served.length > 0);
  assert.equal(count(after.served, 'stories@v2'), after.served.length, JSON.stringify(after.served));
  assert.deepEqual(during.failures, []);
  assert.deepEqual(after.failures, []);
  assert.deepEqual(p.failures, []);
  assert.equal(count(p.served, 'stories@v1'), p.served.length, 'a pinned request left v1');
});

test('bad CLI calls: clear errors and exit codes', async () => {
  const noVersion = await cli('start', '--model', 'stories');
  assert.equal(noVersion.code, 1);
  assert.match(noVersion.err, /needs --version/);
  const unknown = await cli('start', '--model', 'stories', '--version', 'v9');
  assert.equal(unknown.code, 1);
  assert.match(unknown.err, /HTTP 404.*no version 'v9'/);
  const badSteps = await cli('start', '--model', 'stories', '--version', 'v1', '--steps', '50,20');
  assert.equal(badSteps.code, 1);
  assert.match(badSteps.err, /HTTP 400.*steps/);
  const usage = await cli('launch');
  assert.equal(usage.code, 2);
  const noKey = spawn(bin, ['gateway', 'rollout', 'status', '--admin', gwBase, '--admin-key-env', 'PAGODA_UNSET_KEY_X'],
                      { stdio: 'ignore' });
  assert.equal(await new Promise(r => noKey.on('close', r)), 1);
});

test('when the traffic stops no load is left counted on any replica', async () => {
  await unpinned.stop();
  await pinned.stop();
  const left = [...unpinned.take().failures, ...pinned.take().failures];
  assert.deepEqual(left, []);
  let reps;
  for (let i = 0; i < 50; ++i) {
    reps = await admin('/admin/replicas');
    if (reps.replicas.every(r => r.active_requests === 0)) break;
    await sleep(100);
  }
  for (const r of reps.replicas) assert.equal(r.active_requests, 0, `${r.id} still counts load`);
});

await run({
  before: async () => {
    replicas = await Promise.all([0, 1, 2, 3].map(() => Server.start(bin, modelPath, OpenAI)));
    const dead = [await freePort(), await freePort()].map(p => `http://127.0.0.1:${p}`);
    writeFileSync(configPath, config([replicas[0].base, replicas[1].base], [replicas[2].base, replicas[3].base], dead));
    await startGateway();
    unpinned = new Traffic(4, 'stories');
    pinned = new Traffic(1, 'stories@v1');
    unpinned.start();
    pinned.start();
  },
  after: async () => {
    await unpinned?.stop();
    await pinned?.stop();
    await gw?.stop();
    for (const r of replicas) if (!r.exited) await r.stop();
  },
});
